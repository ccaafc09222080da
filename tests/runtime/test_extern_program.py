"""Hand-written C++ kernels in programs (SPEC §10): class and `@pl.jit.extern` forms against torch,
the pipeline leaving them untouched, `kernel_config.py`, orchestration C++ that compiles, SPMD
blocks, rebuilds after an edit (source and local header), and the errors of a bad source, a
missing compiler and misuse of the declaration."""

from __future__ import annotations

import runpy
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserSyntaxError, ParserTypeError, RuntimeSimError
from pypto.runtime.extern import ExternalCompileError, ExternalToolchainError, find_compiler
from pypto.runtime.sim.cost_model import const

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no host C++ compiler")

AFFINE = r"""
#include "pypto_kernel.h"
#include "affine.h"
// y = x * SCALE + z, a row at a time
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *x = pypto_arg_tensor(args[0]), *z = pypto_arg_tensor(args[1]);
    const pypto_tensor *y = pypto_arg_tensor(args[2]);
    PYPTO_TILE(t, 1, 256);
    PYPTO_TILE(u, 1, 256);
    pypto_tile_reshape(&t, 1, pypto_cols(x));
    pypto_tile_reshape(&u, 1, pypto_cols(x));
    for (int64_t r = 0; r < pypto_rows(x); r++) {
        pypto_load(&t, x, r, 0);
        pypto_load(&u, z, r, 0);
        pypto_muls(&t, &t, SCALE);
        pypto_add(&t, &t, &u);
        pypto_store(y, r, 0, &t);
    }
}
"""


@pytest.fixture()
def kdir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_EXTERN_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "affine.cpp").write_text(AFFINE)
    (d / "affine.h").write_text("#define SCALE 2.0f\n")
    return d


def _module(tmp_path: Path, name: str, text: str, **values) -> dict:
    """Run DSL source `text` as the module file `<tmp_path>/<name>.py` (so relative paths and
    error locations refer to it) and return its namespace."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return runpy.run_path(str(path), init_globals=values)


PROGRAM = """
import pypto.language as pl

@pl.program
class Affine:
    @pl.function(type=pl.FunctionType.InCore)
    def add1(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        b = pl.store(pl.adds(pl.load(a, [0, 0], [32, 64]), 1.0), [0, 0], b)
        return b

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/affine.cpp", cost=COST)
    def affine(self, x: pl.Tensor[[32, 64], pl.FP32], z: pl.Tensor[[32, 64], pl.FP32],
               y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], z: pl.Tensor[[32, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t = pl.create_tensor([32, 64], dtype=pl.FP32)
        t = self.add1(x, t)
        y = pl.create_tensor([32, 64], dtype=pl.FP32)
        y = self.affine(t, z, y)
        out = self.add1(y, out)
        return out
"""


def test_class_form_runs_between_dsl_kernels(kdir, tmp_path):
    prog = _module(tmp_path, "prog", PROGRAM, COST=1000)["Affine"]
    compiled = ir.compile(prog, output_dir=tmp_path / "build", verification_level=ir.VerificationLevel.ROUNDTRIP)
    assert compiled.program.get_function("affine") is prog.get_function("affine")  # untouched by every pass
    x, z, out = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    compiled(x, z, out)
    torch.testing.assert_close(out, (x + 1) * 2 + z + 1)
    tasks = compiled.last_run.tasks
    assert [t.kernel for t in tasks] == ["add1", "affine", "add1"]
    assert tasks[1].deps == {0: "RAW"} and 1 in tasks[2].deps  # ordered by the tensors they share
    assert tasks[1].cost.cycles == int(const("task_launch")) + 1000
    assert tasks[1].start_cycle >= tasks[0].end_cycle and tasks[2].start_cycle >= tasks[1].end_cycle


def test_kernel_config_and_artifacts(kdir, tmp_path):
    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    out = tmp_path / "build"
    ir.compile(prog, output_dir=out)
    cfg = runpy.run_path(str(out / "kernel_config.py"))
    ext = [k for k in cfg["KERNELS"] if k["name"] == "affine"]
    assert ext == [{"func_id": 1, "name": "affine", "core_type": "aiv", "pto": None,
                    "source": str(kdir / "affine.cpp"), "external": True, "extra_include_dirs": []}]
    assert "external" not in next(k for k in cfg["KERNELS"] if k["name"] == "add1")
    assert sorted(p.name for p in (out / "kernels").rglob("*")) == ["add1.pto", "aiv"]  # no .pto for it
    orch = (out / "orchestration" / "main.cpp").read_text()
    assert f"FUNC_AFFINE = 1,  // external C++: {kdir / 'affine.cpp'}" in orch
    assert "submit_aiv_task(rt, FUNC_AFFINE, task1);" in orch
    assert "task1.add_input(t" in orch and "task1.add_output(y" in orch


def test_orchestration_cpp_compiles(kdir, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from cpp_check import compiles_as_cpp

    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    out = tmp_path / "build"
    ir.compile(prog, output_dir=out, skip_ptoas=True)
    compiles_as_cpp([out / "orchestration" / "main.cpp"], tmp_path)


JIT = """
import pypto.language as pl

@pl.jit.extern(core_type="aiv", source="kernels/affine.cpp", include_dirs=["kernels"], core_num=CORES,
               cost="x.numel() // block_num")
def affine(x: pl.Tensor, z: pl.Tensor, y: pl.Out[pl.Tensor]):
    ...

@pl.jit.incore
def add1(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    b = pl.store(pl.adds(pl.load(a, [0, 0], [16, 64]), 1.0), [0, 0], b)
    return b

@pl.jit
def run(x: pl.Tensor, z: pl.Tensor, out: pl.Out[pl.Tensor]):
    y = pl.create_tensor([16, 64], dtype=pl.FP32)
    y = affine(x, z, y)
    out = add1(y, out)
    return out
"""


def test_jit_form_and_rebuild_after_editing_source_and_header(kdir, tmp_path):
    run = _module(tmp_path, "jitmod", JIT, CORES=1)["run"]
    x, z, out = torch.randn(16, 64), torch.randn(16, 64), torch.zeros(16, 64)
    run(x, z, out)
    torch.testing.assert_close(out, x * 2 + z + 1)
    first = run.compile(x, z, out)
    assert run.compile(x, z, out) is first  # cached while nothing changed
    cfg = runpy.run_path(str(Path(first.output_dir) / "kernel_config.py"))
    assert next(k for k in cfg["KERNELS"] if k["name"] == "affine")["extra_include_dirs"] == [str(kdir)]

    (kdir / "affine.h").write_text("#define SCALE 3.0f\n")  # a local header is part of the key
    run(x, z, out)
    torch.testing.assert_close(out, x * 3 + z + 1)
    second = run.compile(x, z, out)
    assert second is not first

    (kdir / "affine.cpp").write_text(AFFINE.replace("pypto_add(&t, &t, &u)", "pypto_sub(&t, &t, &u)"))
    run(x, z, out)
    torch.testing.assert_close(out, x * 3 - z + 1)
    assert run.compile(x, z, out) is not second
    assert len(list((tmp_path / "cache").glob("affine-*.so"))) == 3


def test_compiled_program_rebuilds_an_edited_kernel_on_the_next_run(kdir, tmp_path):
    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    compiled = ir.compile(prog, output_dir=tmp_path / "build")
    x, z, out = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    compiled(x, z, out)
    (kdir / "affine.h").write_text("#define SCALE -1.0f\n")
    compiled(x, z, out)
    torch.testing.assert_close(out, -(x + 1) + z + 1)


def test_spmd_blocks_run_in_parallel(kdir, tmp_path):
    (kdir / "affine.cpp").write_text(AFFINE.replace(
        "for (int64_t r = 0; r < pypto_rows(x); r++)",
        "int64_t per = pypto_rows(x) / pypto_block_num();\n"
        "    for (int64_t r = pypto_block_idx() * per; r < (pypto_block_idx() + 1) * per; r++)"))
    run = _module(tmp_path, "jitmod", JIT, CORES=4)["run"]
    x, z, out = torch.randn(16, 64), torch.randn(16, 64), torch.zeros(16, 64)
    run(x, z, out)
    torch.testing.assert_close(out, x * 2 + z + 1)  # every block did its 4 rows
    rec = run.compile(x, z, out).last_run
    blocks = [t for t in rec.tasks if t.kernel == "affine"]
    assert len(blocks) == 4 and len({t.core for t in blocks}) == 4
    assert all(t.deps == {} for t in blocks)  # not ordered among themselves
    assert max(t.start_cycle for t in blocks) < min(t.end_cycle for t in blocks)  # they overlap
    assert all(t.cost.cycles == int(const("task_launch")) + 16 * 64 // 4 for t in blocks)
    add1 = next(t for t in rec.tasks if t.kernel == "add1")
    assert set(add1.deps) == {t.task_id for t in blocks}


def test_compile_error_shows_the_compiler_message_and_the_kernel_file(kdir, tmp_path):
    (kdir / "affine.cpp").write_text(AFFINE.replace("pypto_muls(&t, &t, SCALE);", "pypto_muls(&t, &t, SCALE)"))
    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    out = tmp_path / "build"
    with pytest.raises(ExternalCompileError) as info:
        ir.compile(prog, output_dir=out)
    text = str(info.value)
    assert f"{tmp_path / 'prog.py'}:" in text  # located at the declaration
    assert f"{kdir / 'affine.cpp'} does not compile" in text
    assert "affine.cpp:" in text and "error" in text  # the compiler's own message
    assert not (out / "compiled_meta.json").exists() and not (out / "kernel_config.py").exists()
    assert "does not compile" in (out / "report" / "error.log").read_text()
    assert not list((tmp_path / "cache").glob("*.so")) and not list((tmp_path / "cache").glob(".*"))


def test_missing_compiler_says_what_to_install(kdir, tmp_path, monkeypatch):
    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ExternalToolchainError, match=r"needs a C\+\+ compiler.*apt-get install g\+\+.*build-essential"):
        ir.compile(prog, output_dir=tmp_path / "build")


# ---- misuse of the declaration: located errors -----------------------------------------------------
def _bad(tmp_path, decorator: str, body: str = "...", params: str = "x: pl.Tensor[[8, 8], pl.FP32]",
         ret: str = ""):
    return f"""
import pypto.language as pl

@pl.program
class Bad:
    {decorator}
    def k(self, {params}){ret}:
        {body}
"""


@pytest.mark.parametrize("decorator,body,params,ret,err,msg,line", [
    ('@pl.function(type=pl.FunctionType.AIV, external_source="kernels/affine.cpp")', "return x", None, "",
     ParserSyntaxError, "the body of external kernel 'k' must be '...'", 8),
    ('@pl.function(type=pl.FunctionType.AIV, external_source="kernels/nope.cpp")', "...", None, "",
     ParserSyntaxError, "C\\+\\+ source of external kernel 'k' not found: .*kernels/nope.cpp", 6),
    ('@pl.function(type=pl.FunctionType.InCore, external_source="kernels/affine.cpp")', "...", None, "",
     ParserTypeError, "use type=pl.FunctionType.AIV .* or pl.FunctionType.AIC", 6),
    ('@pl.function(type=pl.FunctionType.AIV, external_source="kernels/affine.cpp", cost="x.numel() * q")', "...",
     None, "", ParserTypeError, "uses 'q', which is not a parameter", 6),
    ('@pl.function(type=pl.FunctionType.AIV, external_source="kernels/affine.cpp", include_dirs=["nodir"])', "...",
     None, "", ParserSyntaxError, "include directory of external kernel 'k' not found", 6),
    ('@pl.function(type=pl.FunctionType.AIV, external_source="kernels/affine.cpp")', "...",
     "x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]", " -> pl.Tensor[[4, 8], pl.FP32]",
     ParserTypeError, "returns what its Out / InOut parameters hold", 7),
])
def test_declaration_errors_are_located(kdir, tmp_path, decorator, body, params, ret, err, msg, line):
    text = _bad(tmp_path, decorator, body, params or "x: pl.Tensor[[8, 8], pl.FP32]", ret)
    with pytest.raises(err, match=msg) as info:
        _module(tmp_path, "bad", text)
    assert info.value.span.filename == str(tmp_path / "bad.py") and info.value.span.begin_line == line


def test_external_options_without_a_source(tmp_path):
    with pytest.raises(ParserTypeError, match="options of a hand-written C\\+\\+ kernel: give its source with "
                                              "external_source=") as info:
        _module(tmp_path, "bad", _bad(tmp_path, "@pl.function(type=pl.FunctionType.AIV, cost=5)"))
    assert info.value.span.filename == str(tmp_path / "bad.py")  # located at the decorator


@pytest.mark.parametrize("kw,msg", [
    ('core_type="mixed", source="kernels/affine.cpp"', "core_type='mixed' .* is not supported"),
    ('core_type="cube", source="kernels/affine.cpp"', "use 'aiv' .* or 'aic'"),
    ('core_type="aiv", source="kernels/missing.cpp"', "not found"),
    ('core_type="aiv", source="kernels/affine.cpp", core_num=0', "core_num=...\\) expects an int >= 1"),
])
def test_jit_extern_declaration_errors(kdir, tmp_path, kw, msg):
    text = f"""
import pypto.language as pl

@pl.jit.extern({kw})
def k(x: pl.Tensor):
    ...
"""
    with pytest.raises((ParserTypeError, ParserSyntaxError), match=msg) as info:
        _module(tmp_path, "badjit", text)
    assert info.value.span.filename == str(tmp_path / "badjit.py")


def test_printed_ir_reparses(kdir, tmp_path):
    prog = _module(tmp_path, "prog", PROGRAM, COST="x.numel() // 64")["Affine"]
    text = prog.as_python()
    assert f"external_source={str(kdir / 'affine.cpp')!r}, cost='x.numel() // 64')" in text
    assert "        ...\n" in text
    ir.assert_structural_equal(pl.parse(text), prog)


def test_a_failing_kernel_is_reported_and_leaves_user_tensors_alone(kdir, tmp_path):
    (kdir / "affine.cpp").write_text(AFFINE.replace(
        "        pypto_store(y, r, 0, &t);\n    }",
        "        pypto_store(y, r, 0, &t);\n    }\n    pypto_fail(\"gave up after %lld rows\", (long long)pypto_rows(x));"))
    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    compiled = ir.compile(prog, output_dir=tmp_path / "build")
    x, z, out = torch.randn(32, 64), torch.randn(32, 64), torch.full((32, 64), 7.0)
    with pytest.raises(RuntimeSimError, match="external kernel 'affine' .*affine.cpp, block 0 of 1\\): gave up after "
                                              "32 rows") as info:
        compiled(x, z, out)
    assert info.value.span.filename == str(tmp_path / "prog.py")
    assert torch.equal(out, torch.full((32, 64), 7.0))


def test_sanitizer_runs_and_torch_codegen_refuses(kdir, tmp_path):
    from pypto.debug import torch_codegen
    from pypto.runtime import RunConfig

    prog = _module(tmp_path, "prog", PROGRAM, COST=None)["Affine"]
    compiled = ir.compile(prog, output_dir=tmp_path / "build")
    x, z, out = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    compiled(x, z, out, config=RunConfig(sanitize=True))
    torch.testing.assert_close(out, (x + 1) * 2 + z + 1)
    assert compiled.last_run.findings == []
    with pytest.raises(NotImplementedError, match="'affine' is a hand-written C\\+\\+ kernel"):
        torch_codegen(prog)


def test_the_header_is_package_data():
    """pip installs pypto/include/pypto_kernel.h with the package (pyproject package-data)."""
    from pypto.runtime.extern import include_dir

    tomllib = pytest.importorskip("tomllib")

    root = Path(__file__).resolve().parents[2]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pypto"]
    assert any(Path("include/pypto_kernel.h").match(p) for p in data)
    assert (include_dir() / "pypto_kernel.h").is_file()
