"""Every program the project ships — the examples (`examples/*.py`), the model examples
(`examples/models/`) and the shared test programs (`tests/shared_programs.py`) — generates host
orchestration C++ that compiles (`-fsyntax-only`) against the runtime API stub (`cpp_check.py`);
skipped where no C++ compiler is installed. Also: the stub declares every host op the generator
may spell as a runtime API call, and nothing it never emits."""

import sys
from pathlib import Path

import pytest
import torch
from cpp_check import HOST_FUNCTIONS, compiles_as_cpp, cxx
from shared_programs import GROUPED_SRC
from test_example_artifacts import EXAMPLES, ROOT, _programs_of

import pypto.compiler as compile_mod
import pypto.language as pl
from pypto import ir
from pypto.ops import all_ops

_HOST_TRAITS = frozenset({"orchestration", "view", "creation"})


class _Captured(Exception):
    def __init__(self, program) -> None:
        super().__init__(program.name)
        self.program = program


def _captured(run, monkeypatch) -> list:
    """The program `run()` hands to `ir.compile`, captured there (nothing is compiled or simulated)."""
    def capture(program, *args, **kwargs):
        raise _Captured(program)

    with monkeypatch.context() as m:
        m.setattr(compile_mod, "compile", capture)
        m.setattr(ir, "compile", capture, raising=False)
        try:
            run()
        except _Captured as c:
            return [c.program]
    raise AssertionError("the model never compiled a program")


def _models(name: str, monkeypatch) -> list:
    models = str(ROOT / "examples" / "models")
    if models not in sys.path:
        sys.path.insert(0, models)
    if name == "ffn":
        import ffn
        return _captured(ffn.run, monkeypatch)
    if name == "flash_attention":
        import flash_attention
        return _captured(lambda: flash_attention.run(causal=True, pad=16), monkeypatch)
    if name == "llama_layer":
        import llama_layer
        return [llama_layer.build_program()]
    import minilm
    return [minilm.build_program(2, 32)]


def _check_all(programs: list, tmp_path: Path) -> None:
    cxx()  # skip before compiling anything when no C++ compiler is installed
    files = []
    for k, program in enumerate(programs):
        out = tmp_path / f"build{k}"
        ir.compile(program, output_dir=out, skip_ptoas=True, dump_passes=False)
        found = sorted((out / "orchestration").glob("*.cpp"))
        assert found, f"{program.name}: no orchestration code"
        files += found
    compiles_as_cpp(files, tmp_path)


def test_examples_orchestration_compiles(examples_dir, tmp_path, monkeypatch):
    cxx()
    programs = [p for name in EXAMPLES for p in _programs_of(name, monkeypatch)]
    assert len(programs) >= len(EXAMPLES)
    _check_all(programs, tmp_path)


@pytest.mark.parametrize("name", ["ffn", "flash_attention", "llama_layer", "minilm"])
def test_model_orchestration_compiles(name, tmp_path, monkeypatch):
    cxx()
    _check_all(_models(name, monkeypatch), tmp_path)


def test_shared_programs_orchestration_compiles(tmp_path):
    _check_all([pl.parse(GROUPED_SRC)], tmp_path)


def test_stub_declares_exactly_the_generic_host_ops():
    """A host op without an OpSpec `host` form is emitted as `<namespace>_<op>(...)`: the stub
    declares each such call, and declares no call no op produces."""
    generic = {f"{s.namespace}_{s.short_name}" for s in all_ops()
               if s.namespace != "tile" and s.traits & _HOST_TRAITS and not s.host}
    assert generic == set(HOST_FUNCTIONS)
    dim = next(s for s in all_ops() if s.name == "tensor.dim")
    assert dim.host == "{x}.shape({axis})"  # the accessor the stub's Tensor declares


R = pl.dynamic("R")


@pl.program
class HostOps:
    """Every host op of the registry in one orchestration function."""

    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
            c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        c = pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), pl.load(b, [0, 0], [16, 64])), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32], d: pl.Tensor[[R, 16], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        xr = pl.tensor.reshape(x, [16, 64])
        f = pl.tensor.full([16, 64], 2.0, dtype=pl.FP32)
        v = pl.tensor.view(f, [16, 64])
        y = self.add(xr, v, y)
        s = pl.tensor.read(x, [0, 0])
        rows = pl.tensor.dim(d, 0)  # a dynamic dimension: a static one folds to its constant
        t = pl.create_tensor([rows, 16], dtype=pl.FP32)
        pl.dump_tag(t)
        ci = pl.tensor.ci(0, [1, 16], dtype=pl.INT32)
        tr = pl.tensor.tri([16, 16], 0, dtype=pl.FP32)
        tv = pl.tensor.transpose_view(x)
        vs = pl.tensor.set_validshape(f, [8, 64])
        sl = pl.slice(x, [16, 32], [0, 0])
        sv = pl.slice(x, [16, 32], [0, 0], valid_shape=[8, 32])
        ri = pl.tensor.reinterpret_view(x, pl.INT32)
        w = pl.tensor.write(t, [0, 0], s)
        return y


def test_every_host_op_compiles_against_the_stub(tmp_path):
    compiled = ir.compile(HostOps, output_dir=tmp_path / "b", dump_passes=False)
    x, y = torch.randn(32, 32), torch.zeros(16, 64)
    compiled(x, torch.zeros(5, 16), y)
    torch.testing.assert_close(y, x.reshape(16, 64) + 2.0)
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert {n for n in HOST_FUNCTIONS if f" = {n}(" in text or f"  {n}(" in text} == HOST_FUNCTIONS
    assert "int64_t rows = d.shape(0);" in text and "tensor_dim" not in text
    compiles_as_cpp(text, tmp_path)
