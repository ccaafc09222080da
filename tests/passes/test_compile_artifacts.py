"""The compile driver (SPEC §5): build folder layout, reloading a build, failures that leave no
complete-looking build, ptoas, environment variables and the SPEC §7 extraction surface."""

import dataclasses
import json
import logging
import os
import runpy
import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.codegen import CodegenError
from pypto.codegen.pto import kernel as kernel_mod
from pypto.core.errors import CompileError
from pypto.ops import get_op
from pypto.passes import manager as manager_mod
from pypto.passes import passes_for
from pypto.runtime import CompiledProgram, RunConfig, toolchain

M = pl.dynamic("M")


@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tiles(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
                  c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        for i in pl.range(0, 64, 32):
            ta = pl.load(a, [i, 0], [32, 128])
            tb = pl.load(b, [i, 0], [32, 128])
            c = pl.store(pl.add(ta, tb), [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
             c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        c = self.add_tiles(a, b, c)
        return c


@pl.program
class Scale:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[M, 128], pl.FP32], s: pl.Scalar[pl.FP32],
              y: pl.Out[pl.Tensor[[M, 128], pl.FP32]]) -> pl.Tensor[[M, 128], pl.FP32]:
        for i in pl.range(0, M, 16):
            t = pl.load(x, [i, 0], [16, 128])
            y = pl.store(pl.mul(t, s), [i, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 128], pl.FP32], s: pl.Scalar[pl.FP32],
             y: pl.Out[pl.Tensor[[M, 128], pl.FP32]]) -> pl.Tensor[[M, 128], pl.FP32]:
        y = self.scale(x, s, y)
        return y


def _args():
    return torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)


def _no_pto_for(op_name, monkeypatch):
    real = get_op
    monkeypatch.setattr(kernel_mod, "get_op", lambda n: dataclasses.replace(real(n), pto=None)
                        if n == op_name else real(n))


def test_build_folder_layout(tmp_path):
    out = tmp_path / "b"
    compiled = ir.compile(Add, output_dir=out, skip_ptoas=True)
    assert str(compiled) == str(out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert [f for f in files if not f.startswith("passes_dump/")] == [
        "compiled_meta.json", "kernel_config.py", "kernels/aiv/add_tiles.pto", "orchestration/main.cpp",
        "program.msgpack", "report/compile_time.json", "report/diagnostics.log", "report/memory_usage.json",
        "report/pass_timings.json",
        "report/perf_hints.log", "report/task_dependencies.json"]
    assert "passes_dump/00_frontend.py" in files
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging folder left
    cfg = runpy.run_path(str(out / "kernel_config.py"))
    assert cfg["KERNELS"] == [{"func_id": 0, "name": "add_tiles", "core_type": "aiv",
                               "pto": "kernels/aiv/add_tiles.pto", "source": "kernels/aiv/add_tiles.pto"}]
    assert cfg["ORCHESTRATION"] == {"name": "main", "source": "orchestration/main.cpp",
                                    "function_name": "aicpu_orchestration_entry"}
    assert cfg["RUNTIME"] == {"name": "tensormap_and_ringbuffer", "platform": "a2a3sim",
                              "backend": "Ascend910B", "block_dim": 24, "aicpu_thread_num": 4}
    meta = json.loads((out / "compiled_meta.json").read_text())
    assert meta["format"] == "pypto-build-1" and meta["entry"] == "main" and meta["output_indices"] == [2]
    assert [a["name"] for a in meta["orchestration_args"]] == ["a", "b", "c"]
    assert meta["orchestration_args"][2] == {"name": "c", "kind": "tensor", "direction": "Out",
                                             "dtype": "FP32", "shape": [64, 128]}
    timing = json.loads((out / "report" / "compile_time.json").read_text())
    assert timing["total_ms"] >= timing["passes_ms"] + timing["codegen_ms"] > 0
    assert [p for p, _ in timing["per_pass_ms"]] == [p.name for p in passes_for(ir.OptimizationStrategy.Default)]


def test_from_dir_round_trip_runs_and_matches_torch(tmp_path):
    out = tmp_path / "b"
    compiled = ir.compile(Add, output_dir=out)
    del compiled
    again = CompiledProgram.from_dir(out)
    assert again.entry == "main" and again.platform == "a2a3sim" and again.output_dir == str(out)
    a, b, c = _args()
    assert again(a, b, c) is c
    torch.testing.assert_close(c, a + b)
    assert again.meta["program"] == "Add"
    with pytest.raises(ValueError, match="targets Ascend950"):
        CompiledProgram.from_dir(out, platform="a5sim")


def test_from_dir_of_a_jit_build(examples_dir):
    import quickstart_add

    a, b = torch.randn(64, 128), torch.randn(64, 128)
    compiled = quickstart_add.add_kernel.compile(a, b, torch.empty(64, 128))
    again = CompiledProgram.from_dir(compiled.output_dir)
    c = torch.zeros(64, 128)
    again(a, b, c)
    torch.testing.assert_close(c, a + b)


def test_from_dir_refuses_incomplete_builds(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        CompiledProgram.from_dir(tmp_path / "nope")
    (tmp_path / "half").mkdir()
    with pytest.raises(FileNotFoundError, match=r"not a complete PyPTO build: it has no compiled_meta\.json"):
        CompiledProgram.from_dir(tmp_path / "half")
    out = tmp_path / "b"
    ir.compile(Add, output_dir=out)
    meta = json.loads((out / "compiled_meta.json").read_text())
    (out / "compiled_meta.json").write_text(json.dumps(dict(meta, format="other-9")))
    with pytest.raises(ValueError, match="format 'other-9'"):
        CompiledProgram.from_dir(out)
    (out / "compiled_meta.json").write_text(json.dumps(meta))
    (out / "program.msgpack").unlink()
    with pytest.raises(FileNotFoundError, match=r"program\.msgpack is missing"):
        CompiledProgram.from_dir(out)


def test_codegen_failure_leaves_no_complete_build(tmp_path, monkeypatch):
    out = tmp_path / "b"
    ir.compile(Add, output_dir=out)   # an earlier, complete build in the same folder
    assert (out / "compiled_meta.json").is_file()
    _no_pto_for("tile.add", monkeypatch)
    with pytest.raises(CodegenError, match=r"op 'tile\.add' has no PTO instruction"):
        ir.compile(Add, output_dir=out)
    left = sorted(p.name for p in out.iterdir())
    assert left == ["passes_dump", "report"], left
    assert sorted(p.name for p in (out / "report").iterdir()) == ["error.log"]
    log = (out / "report" / "error.log").read_text()
    assert log.startswith("CodegenError: ") and "tile.add" in log and "add_tiles" in log
    with pytest.raises(FileNotFoundError, match=r"the compile failed, see .*error\.log"):
        CompiledProgram.from_dir(out)


def _fake_ptoas(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return path


_ASSEMBLE = ("src, out = sys.argv[1], sys.argv[sys.argv.index('-o') + 1]\n"
             "open(out, 'w').write('// assembled from ' + src + '\\n' + open(src).read().splitlines()[0])")


@pytest.mark.skipif(os.name != "posix", reason="fake ptoas is a script")
def test_ptoas_on_path_turns_pto_into_cpp(tmp_path, monkeypatch):
    _fake_ptoas(tmp_path / "bin" / "ptoas", _ASSEMBLE)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("PTOAS_ROOT", raising=False)
    out = tmp_path / "b"
    compiled = ir.compile(Add, output_dir=out)
    cpp = (out / "kernels" / "aiv" / "add_tiles.cpp").read_text()
    assert cpp.startswith("// assembled from ") and "add_tiles.pto" in cpp and "PyPTO kernel 'add_tiles'" in cpp
    assert (out / "kernels" / "aiv" / "add_tiles.pto").is_file()
    cfg = runpy.run_path(str(out / "kernel_config.py"))
    assert cfg["KERNELS"][0]["source"] == "kernels/aiv/add_tiles.cpp"
    assert json.loads((out / "compiled_meta.json").read_text())["ptoas"]["ran"] is True
    assert compiled.chip_callable.kernels[0].source == "kernels/aiv/add_tiles.cpp"
    # skip_ptoas keeps the .pto only, even with ptoas present
    ir.compile(Add, output_dir=out, skip_ptoas=True)
    assert not (out / "kernels" / "aiv" / "add_tiles.cpp").exists()


@pytest.mark.skipif(os.name != "posix", reason="fake ptoas is a script")
def test_ptoas_under_ptoas_root_and_its_failures(tmp_path, monkeypatch):
    root = tmp_path / "ptoas_home"
    _fake_ptoas(root / "bin" / "ptoas", "sys.stderr.write('error: unknown op pto.tfoo\\n'); sys.exit(3)")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PTOAS_ROOT", str(root))
    assert toolchain.find_ptoas() == str(root / "bin" / "ptoas")
    out = tmp_path / "b"
    with pytest.raises(CompileError, match=r"ptoas failed on add_tiles\.pto \(exit status 3\):\nerror: unknown op"):
        ir.compile(Add, output_dir=out)
    assert "ptoas failed" in (out / "report" / "error.log").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["passes_dump", "report"]


def test_missing_ptoas_is_said_once_per_process(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("PTOAS_ROOT", raising=False)
    monkeypatch.setattr(toolchain, "_ptoas_missing_noted", False)
    with caplog.at_level(logging.WARNING, logger="pypto"):
        ir.compile(Add, output_dir=tmp_path / "b1")
        ir.compile(Add, output_dir=tmp_path / "b2")
        ir.compile(Add, output_dir=tmp_path / "b3", skip_ptoas=True)
    notes = [r for r in caplog.records if "ptoas" in r.getMessage()]
    assert len(notes) == 1 and "not found on PATH or under $PTOAS_ROOT" in notes[0].getMessage()
    assert not (tmp_path / "b2" / "kernels" / "aiv" / "add_tiles.cpp").exists()


def test_default_output_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    c1 = ir.compile(Add)
    c2 = ir.compile(Add)
    for c in (c1, c2):
        p = Path(c.output_dir)
        assert p.parent == tmp_path / "builds" and p.name.startswith("Add_")
        assert (p / "compiled_meta.json").is_file()
    assert c1.output_dir != c2.output_dir


def test_verification_level_from_env(tmp_path, monkeypatch):
    calls = {"basic": 0, "roundtrip": 0}
    real_basic, real_rt = manager_mod.verify_basic, manager_mod.verify_roundtrip

    def basic(p, name, **kw):
        calls["basic"] += 1
        return real_basic(p, name, **kw)

    def rt(p, name, reparse):
        calls["roundtrip"] += 1
        return real_rt(p, name, reparse)

    monkeypatch.setattr(manager_mod, "verify_basic", basic)
    monkeypatch.setattr(manager_mod, "verify_roundtrip", rt)
    npasses = len(passes_for(ir.OptimizationStrategy.Default))
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    ir.compile(Add, output_dir=tmp_path / "a", dump_passes=False)
    assert calls == {"basic": npasses, "roundtrip": npasses}
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "NONE")
    ir.compile(Add, output_dir=tmp_path / "b", dump_passes=False)
    assert calls == {"basic": npasses, "roundtrip": npasses}
    # an explicit level wins over the environment
    ir.compile(Add, output_dir=tmp_path / "c", dump_passes=False, verification_level=ir.VerificationLevel.BASIC)
    assert calls == {"basic": 2 * npasses, "roundtrip": npasses}
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "paranoid")
    with pytest.raises(ValueError, match="PYPTO_VERIFY_LEVEL='paranoid' is not one of none, basic, roundtrip"):
        ir.compile(Add, output_dir=tmp_path / "d")


def test_unknown_strategy_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown optimization strategy 'Fast'.*OptimizationStrategy.Default"):
        ir.compile(Add, output_dir=tmp_path / "b", strategy="Fast")
    assert not (tmp_path / "b").exists()


def test_strategy_by_name_as_backend_type_and_verification_level(tmp_path):
    """strategy= takes the member's name like backend_type= and verification_level= (it was a
    ValueError 'unknown optimization strategy' for "DebugTileOptimization"), in ir.compile and RunConfig."""
    out = ir.compile(Add, output_dir=tmp_path / "b", strategy="DebugTileOptimization", dump_passes=False)
    assert json.loads((tmp_path / "b" / "compiled_meta.json").read_text())["strategy"] == "DebugTileOptimization"
    x, y, z = torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)
    out(x, y, z)
    assert torch.equal(z, x + y)
    cfg = RunConfig(strategy="DebugTileOptimization")
    assert cfg.strategy is ir.OptimizationStrategy.DebugTileOptimization
    with pytest.raises(ValueError, match="unknown optimization strategy 'Fast'"):
        RunConfig(strategy="Fast")


def test_a_new_build_replaces_an_old_one_in_the_same_folder(tmp_path, examples_dir):
    import matmul

    out = tmp_path / "b"
    ir.compile(Add, output_dir=out)
    ir.compile(matmul.Matmul, output_dir=out)
    assert sorted(str(p.relative_to(out)) for p in (out / "kernels").rglob("*.pto")) == ["kernels/aic/matmul_kernel.pto"]
    assert CompiledProgram.from_dir(out).program.name == "Matmul"


def test_spec7_extraction_surface(tmp_path):
    compiled = ir.compile(Scale, output_dir=tmp_path / "b", backend_type=BackendType.Ascend950)
    assert compiled.runtime_name == "tensormap_and_ringbuffer"
    cfg = compiled.runtime_config
    assert cfg["platform"] == "a5sim" and cfg["block_dim"] == 36 and cfg["entry"] == "main"
    assert cfg["orchestration"] == "orchestration/main.cpp"
    assert [k["name"] for k in cfg["kernels"]] == ["scale"]
    cc = compiled.chip_callable
    assert (Path(cc.root) / cc.orchestration).is_file() and cc.entry_symbol == "aicpu_orchestration_entry"
    assert (Path(cc.root) / cc.kernels[0].source).is_file() and cc.kernels[0].core_type == "aiv"
    x, y = torch.randn(48, 128), torch.zeros(48, 128)
    slots = compiled.build_orch_args(x, 2.0, y)
    assert [(s.kind, s.name, s.direction) for s in slots] == [
        ("tensor", "x", "In"), ("scalar", "s", "In"), ("tensor", "y", "Out"), ("dim", "M", "In")]
    assert slots[0].value is x and slots[1].value == 2.0 and slots[3].value == 48 and slots[2].shape == (48, 128)
    with pytest.raises(ValueError, match="'M'"):
        compiled.build_orch_args(x, 2.0, torch.zeros(32, 128))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        compiled.build_orch_args(x, y)
    call = compiled.build_call_config(RunConfig(platform="a5sim", device_id=3, enable_pmu=2))
    assert call == {"runtime": "tensormap_and_ringbuffer", "platform": "a5sim", "device_id": 3, "block_dim": 36,
                    "aicpu_thread_num": 4, "enable_chip_swimlane": 0, "enable_dep_gen": False,
                    "enable_scope_stats": False, "enable_pmu": 2, "enable_dump_args": 0,
                    "task_window": [16384] * 4, "heap": [256 << 20] * 4, "dep_pool": [16384] * 4}
    with pytest.raises(ValueError, match="compiled for Ascend950"):
        compiled.build_call_config(RunConfig(platform="a2a3sim"))
    compiled(x, 2.0, y)
    torch.testing.assert_close(y, x * 2.0)


def test_foreign_files_under_artifact_names_are_never_deleted(tmp_path):
    out = tmp_path / "project"
    (out / "kernels").mkdir(parents=True)
    (out / "kernels" / "mine.txt").write_text("user data")
    with pytest.raises(FileExistsError, match="already has 'kernels', which is not from a complete PyPTO build"):
        ir.compile(Add, output_dir=out)
    assert (out / "kernels" / "mine.txt").read_text() == "user data"


def test_report_records_task_dependencies(tmp_path):
    import json

    import pypto.language as pl
    from pypto import ir

    @pl.program
    class TwoTasks:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            y = pl.store(t, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
                 z: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            y = self.k(x, y)
            z = self.k(y, z)  # reads what the first task wrote: a RAW edge
            return z

    out = ir.compile(TwoTasks, output_dir=tmp_path / "b", dump_passes=False)
    deps = json.loads((tmp_path / "b" / "report" / "task_dependencies.json").read_text())
    assert [t["callee"] for t in deps["main"]["tasks"]] == ["k", "k"]
    assert "RAW" in json.dumps(deps["main"])
    assert str(out) == str(tmp_path / "b")
