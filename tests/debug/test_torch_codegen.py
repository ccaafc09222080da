"""`pypto.debug.torch_codegen` (standalone PyTorch scripts at any pass stage) and
`CompiledProgram.validate_ir` (the first pass whose numbers diverge)."""

import shutil
import subprocess
import sys

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.dtype import FP32, INDEX
from pypto.core.enums import FunctionType, ParamDirection
from pypto.debug import torch_codegen, validate_ir
from pypto.ir import AssignStmt, Call, ConstInt, Function, MakeTuple, ReturnStmt, SeqStmts, TensorType, Var
from pypto.runtime import CompiledProgram


@pl.jit
def softmax_rows(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.row_expand_sub(x, m))
        s = pl.row_sum(e)
        y[:] = pl.row_expand_div(e, s)
    return y


@pl.jit
def softmax_rows_dumped(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    """The same kernel, compiled only with pass dumps (the JIT cache key ignores dump_passes)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.row_expand_sub(x, m))
        s = pl.row_sum(e)
        y[:] = pl.row_expand_div(e, s)
    return y


@pl.program
class Blocks:
    """y = sum of the 4 row blocks of x, where odd blocks count twice (a loop-carried tile and an if)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [16, 32])
        for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
            blk = pl.load(x, [i * 16, 0], [16, 32])
            if i % 2 == 1:
                w = pl.mul(blk, 2.0)
                v = pl.yield_(w)
            else:
                v = pl.yield_(blk)
            nxt = pl.add(acc, v)
            total = pl.yield_(nxt)
        y = pl.store(total, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        y = self.k(x, y)
        return y


def _blocks_expected(x):
    b = x.view(4, 16, 32)
    return b[0] + 2 * b[1] + b[2] + 2 * b[3]


def test_script_is_standalone_and_runs_without_pypto(tmp_path) -> None:
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    text = torch_codegen(softmax_rows.compile(x, y).program)
    assert "import pypto" not in text and "from pypto" not in text
    path = tmp_path / "ref.py"
    path.write_text(text)
    guard = "import sys; sys.modules['pypto'] = None; import runpy; runpy.run_path(sys.argv[1], run_name='__main__')"
    r = subprocess.run([sys.executable, "-c", guard, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("output 1: shape (16, 64) dtype torch.float32 sum ")
    # softmax rows sum to one: the printed checksum is the number of rows
    assert float(r.stdout.split("sum ")[1]) == pytest.approx(16.0, rel=1e-4)


def test_script_of_every_stage_matches_torch(tmp_path) -> None:
    cp = ir.compile(Blocks, output_dir=tmp_path, dump_passes=True)
    x = torch.randn(64, 32)
    dumps = sorted((tmp_path / "passes_dump").glob("*.py"))
    assert len(dumps) >= 8
    for f in dumps:
        ns: dict = {}
        exec(torch_codegen(pl.loads(str(f))), ns)   # noqa: S102
        y = torch.zeros(16, 32)
        assert ns["run"](x.clone(), y) is y, f.name
        torch.testing.assert_close(y, _blocks_expected(x), msg=f.name)
    text = torch_codegen(cp.program)
    assert "for i in range(1, 4, 1):" in text and "if ((i % 2) == 1):" in text and "else:" in text
    assert "def k(x, y):" in text and "ENTRY = main" in text and "OUTPUTS = [1]" in text


def test_a_dump_path_is_accepted_as_a_str_or_a_path(tmp_path) -> None:
    """A user trial: torch_codegen took only nodes; a pass dump's path (str or pathlib.Path) is read
    and parsed first; anything else is a clear error at the caller's line."""
    from pypto.core.errors import ArgumentTypeError, ArgumentValueError

    ir.compile(Blocks, output_dir=tmp_path, dump_passes=True, skip_ptoas=True)
    dump = sorted((tmp_path / "passes_dump").glob("*_after_Simplify.py"))[0]
    want = torch_codegen(pl.loads(str(dump)))
    assert torch_codegen(dump) == want and torch_codegen(str(dump)) == want
    x = torch.randn(64, 32)
    ns: dict = {}
    exec(torch_codegen(dump), ns)   # noqa: S102
    y = torch.zeros(16, 32)
    ns["run"](x.clone(), y)
    torch.testing.assert_close(y, _blocks_expected(x))
    import inspect

    for bad, cls, message in [
            (tmp_path / "passes_dump", ArgumentValueError,
             f"torch_codegen: {str(tmp_path / 'passes_dump')!r} is a folder: pass one of its passes_dump/*.py files"),
            (str(tmp_path / "nope.py"), ArgumentValueError,
             f"torch_codegen: {str(tmp_path / 'nope.py')!r} is not an existing file"),
            (42, ArgumentTypeError, "torch_codegen expects an ir.Program, an ir.Function or the path of a "
                                    "printed-IR file (a passes_dump/*.py dump), got int")]:
        with pytest.raises(cls) as e:
            line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            torch_codegen(bad)
        assert e.value.message == message
        assert (e.value.span.filename, e.value.span.begin_line) == (__file__, line)


def test_validate_ir_reports_every_stage(tmp_path) -> None:
    x = torch.randn(16, 64)
    y = torch.zeros(16, 64)
    from pypto.runtime import RunConfig

    cp = softmax_rows_dumped.compile(x, y, config=RunConfig(dump_passes=True))
    expected = torch.softmax(x, dim=-1)
    rep = cp.validate_ir([x, y], expected)
    assert rep.ok and rep.first_divergent is None
    assert rep.stages[0].stage == "00_frontend" and rep.stages[-1].stage == "simulator"
    assert {s.status for s in rep.stages} == {"ok"} and torch.equal(y, torch.zeros(16, 64))
    assert "every stage matches" in str(rep)
    assert validate_ir(cp, [x, y], {"y": expected}).ok
    wrong = validate_ir(cp, [x, y], expected * 2)
    assert wrong.first_divergent == "frontend" and all(s.status == "mismatch" for s in wrong.stages)
    with pytest.raises(ValueError, match="1 Out/InOut"):
        cp.validate_ir([x, y], [expected, expected])


def test_validate_ir_names_the_pass_that_broke_the_numbers(tmp_path) -> None:
    cp = ir.compile(Blocks, output_dir=tmp_path, dump_passes=True)
    dumps = sorted((tmp_path / "passes_dump").glob("*.py"))
    broken = next(i for i, f in enumerate(dumps) if "ConvertTensorToTileOps" in f.name or "InitMemRef" in f.name)
    for f in dumps[broken:]:   # as if that pass had turned the add into a sub
        f.write_text(f.read_text().replace("pl.tile.add(", "pl.tile.sub("))
    x = torch.randn(64, 32)
    rep = cp.validate_ir([x, torch.zeros(16, 32)], _blocks_expected(x))
    name = dumps[broken].stem.split("_after_")[1]
    assert rep.first_divergent == name
    statuses = [s.status for s in rep.stages]
    assert statuses[:broken] == ["ok"] * broken and statuses[broken] == "mismatch"
    assert rep.stages[-1].status == "ok"            # the compiled program itself is fine
    assert f"first divergent pass: {name}" in str(rep)


def test_a_memory_planning_bug_shows_only_on_the_simulator(tmp_path) -> None:
    good = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t: pl.Tile[[16, 32], pl.FP32, pl.MemRef(pl.Mem.Vec, id=0, size=2048, addr=0)] = pl.tile.load(a, [0, 0], [16, 32])
        u: pl.Tile[[16, 32], pl.FP32, pl.MemRef(pl.Mem.Vec, id=1, size=2048, addr=2048)] = pl.tile.adds(t, 1.0)
        w: pl.Tile[[16, 32], pl.FP32, pl.MemRef(pl.Mem.Vec, id=2, size=2048, addr=4096)] = pl.tile.mul(t, u)
        c1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(w, [0, 0], c)
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        c1: pl.Tensor[[16, 32], pl.FP32] = self.k(a, c)
        return c1
'''
    bad = good.replace("id=1, size=2048, addr=2048", "id=1, size=2048, addr=0")   # u placed over live t
    dump = tmp_path / "passes_dump"
    dump.mkdir()
    (dump / "00_frontend.py").write_text(good)
    (dump / "01_after_AllocateMemoryAddr.py").write_text(bad)
    cp = CompiledProgram(pl.parse(bad), tmp_path, None)
    a = torch.randn(16, 32)
    rep = cp.validate_ir([a, torch.zeros(16, 32)], a * (a + 1))
    assert [s.status for s in rep.stages] == ["ok", "ok", "mismatch"]
    assert rep.first_divergent == "simulator"


def test_validate_ir_needs_pass_dumps(tmp_path) -> None:
    cp = ir.compile(Blocks, output_dir=tmp_path, dump_passes=False)
    shutil.rmtree(tmp_path / "passes_dump", ignore_errors=True)
    with pytest.raises(FileNotFoundError, match="dump_passes=True"):
        cp.validate_ir([torch.zeros(64, 32), torch.zeros(16, 32)], torch.zeros(16, 32))


def test_op_without_a_template_is_named(monkeypatch) -> None:
    from pypto.debug import torch_ops

    x, y = Var("x", TensorType((ConstInt(16, INDEX), ConstInt(32, INDEX)), FP32)), Var("y", TensorType(
        (ConstInt(16, INDEX), ConstInt(32, INDEX)), FP32))
    r = Var("r", y.type)
    shape = MakeTuple((ConstInt(16, INDEX), ConstInt(32, INDEX)))
    body = SeqStmts((AssignStmt(r, Call("tensor.sort32", (x, shape), (), y.type)), ReturnStmt((r,))))
    f = Function("f", FunctionType.Opaque, (x, y), (ParamDirection.In, ParamDirection.Out), (y.type,), body)
    assert "_sort32(x, (16, 32, ))" in torch_codegen(f)
    monkeypatch.setitem(torch_ops.UNSUPPORTED, "tensor.sort32", "as if sorting had no torch meaning")
    with pytest.raises(NotImplementedError, match="cannot express op 'tensor.sort32': as if sorting had no"):
        torch_codegen(f)
    monkeypatch.delitem(torch_ops.UNSUPPORTED, "tensor.sort32")
    monkeypatch.delitem(torch_ops.TEMPLATES, "sort32")
    with pytest.raises(NotImplementedError, match="no PyTorch template for op 'tensor.sort32'"):
        torch_codegen(f)
