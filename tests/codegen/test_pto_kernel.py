"""PTO MLIR codegen (SPEC §5): one `.pto` per kernel, ops from the OpSpecs, loc() at the user's line.

Programs are written in the DSL, compiled with `ir.compile`, and the generated text is checked
structurally (`pto_check`: SSA def-before-use, loc on every op, alloc addresses) and against the
lowered IR (addresses from memory planning, spans of the user's statements). Each program is also
run on the simulator against torch, so the text describes a program that computes the right thing.
"""

import dataclasses
import re
from pathlib import Path

import pytest
import torch
from pto_check import check_pto

import pypto.language as pl
from pypto import ir
from pypto.codegen import CodegenError
from pypto.codegen.pto import kernel as kernel_mod
from pypto.codegen.pto.scalars import float_literal
from pypto.codegen.pto.types import tile_buf_type
from pypto.core.dtype import BF16, FP16, FP32, INT32
from pypto.core.enums import MemorySpace, TensorLayout
from pypto.core.errors import CompileError
from pypto.ir import ConstInt, MemRef, TileType, TileView
from pypto.ops import get_op

HERE = Path(__file__).resolve()


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def _tiles_by_name(func) -> dict[str, TileType]:
    out = {}

    class V(ir.IRVisitor):
        def visit_AssignStmt(self, s):
            if isinstance(s.var.type, TileType):
                out.setdefault(s.var.name, s.var.type)
            super().visit_AssignStmt(s)
    V().visit_function(func)
    return out


def test_quickstart_pto_has_views_allocs_and_ops_at_the_user_line(examples_dir):
    """Acceptance (issue 5): the quickstart's .pto has make_tensor_view, alloc_tile (loc=vec, with
    addresses), tload, tadd, tstore, each with loc() pointing at `c[:] = pl.add(a, b)`."""
    import quickstart_add

    a = torch.randn(64, 128)
    compiled = quickstart_add.add_kernel.compile(a, a, torch.empty(64, 128))
    kernel = next(f for f in compiled.program.functions if f.func_type is pl.FunctionType.InCore)
    path = Path(compiled.output_dir) / "kernels" / "aiv" / f"{kernel.name}.pto"
    text = path.read_text()
    pto = check_pto(text)
    assert pto.func == kernel.name and pto.params == ["%a", "%b", "%c"]
    assert "%a: !pto.ptr<f32>" in text
    src = examples_dir / "quickstart_add.py"
    user_line = _line_of(src, "c[:] = pl.add(a, b)")
    names = pto.op_names()
    for op in ("pto.tload", "pto.tadd", "pto.tstore"):
        assert op in names
    for op, loc in pto.ops:
        if op in ("pto.tload", "pto.tadd", "pto.tstore", "pto.alloc_tile", "pto.partition_view"):
            assert loc is not None and Path(loc[0]) == src and loc[1] == user_line, (op, loc)
    assert names.count("pto.make_tensor_view") == 3
    for op, loc in pto.ops:
        if op == "pto.make_tensor_view":
            assert Path(loc[0]) == src and loc[1] == _line_of(src, "def add_kernel")
    # one alloc per tile, at the address memory planning chose, in Vec
    tiles = _tiles_by_name(kernel)
    assert len(pto.allocs) == len(tiles) == 3
    got = {name[1:]: (addr, tb) for name, addr, tb in pto.allocs}
    for name, t in tiles.items():
        addr, tb = got[name]
        assert addr == t.memref.addr and "loc=vec" in tb and "rows=64, cols=128" in tb
    # the sum is computed in place over an operand it reads for the last time (MemoryReuse)
    assert sorted(a for _, a, _ in pto.allocs) == [0, 0, 32768]
    assert re.search(r"pto\.tadd ins\(%a_tile, %b_tile : .*\) outs\(%add_tile : ", text)


@pl.program
class Carried:
    @pl.function(type=pl.FunctionType.InCore)
    def block_sum(self, x: pl.Tensor[[64, 64], pl.FP32],
                  y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        acc0: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [0, 0], [16, 64])
        for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
            blk: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [i * 16, 0], [16, 64])
            nxt: pl.Tile[[16, 64], pl.FP32] = pl.add(acc, blk)
            total: pl.Tile[[16, 64], pl.FP32] = pl.yield_(nxt)
        y = pl.store(total, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.block_sum(x, y)
        return y


def test_loop_carried_tile_is_an_iter_arg_and_yields_through_its_buffer(tmp_path):
    compiled = ir.compile(Carried, output_dir=tmp_path / "b")
    x, y = torch.randn(64, 64), torch.zeros(16, 64)
    compiled(x, y)
    torch.testing.assert_close(y, x.view(4, 16, 64).sum(0))
    text = (tmp_path / "b" / "kernels" / "aiv" / "block_sum.pto").read_text()
    pto = check_pto(text)
    assert re.search(r"%total = scf\.for %i = %c1 to %c4 step %c1 iter_args\(%acc = %acc0\) -> "
                     r"\(!pto\.tile_buf<loc=vec, dtype=f32, rows=16, cols=64,", text)
    # nxt is computed in the carried buffer (InitMemRef, in place): yielded with no tmov
    body = text.split("scf.for", 1)[1].split("} loc", 1)[0]
    assert "pto.tmov" not in body
    assert re.search(r"scf\.yield %nxt : !pto\.tile_buf", body)
    assert "arith.muli %i, %c16 : index" in body  # the offset i * 16
    assert re.search(r"pto\.tstore ins\(%total : ", text)
    src = Path(__file__)
    assert ("scf.yield", (str(src), _line_of(src, "total: pl.Tile[[16, 64], pl.FP32] = pl.yield_(nxt)"), 13)) \
        in [(n, loc) for n, loc in pto.ops]


@pl.program
class Branchy:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], flag: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32],
          y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        if flag > 0:
            a = pl.exp(t)
            r = pl.yield_(a)
        else:
            b = pl.add(t, s)
            r = pl.yield_(b)
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], flag: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.k(x, flag, s, y)
        return y


def test_if_with_tile_result_and_scalar_parameters(tmp_path):
    compiled = ir.compile(Branchy, output_dir=tmp_path / "b")
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    compiled(x, 1, 2.5, y)
    torch.testing.assert_close(y, torch.exp(x))
    compiled(x, 0, 2.5, y)
    torch.testing.assert_close(y, x + 2.5)
    text = (tmp_path / "b" / "kernels" / "aiv" / "k.pto").read_text()
    check_pto(text)
    assert "func.func @k(%x: !pto.ptr<f32>, %flag: index, %s: f32, %y: !pto.ptr<f32>)" in text
    assert re.search(r"%cond = arith\.cmpi sgt, %flag, %c0 : index", text)
    assert re.search(r"%r = scf\.if %cond -> \(!pto\.tile_buf<[^>]*>\) \{", text)
    then, els = text.split("scf.if", 1)[1].split("} else {", 1)
    assert re.search(r"pto\.texp ins\(%t : [^)]*\) outs\(%a : ", then) and "scf.yield %a" in then
    # the scalar operand is typed f32; b is copied into the result's buffer (a's) before the yield
    assert re.search(r"pto\.tadds ins\(%t, %s : !pto\.tile_buf<[^>]*>, f32\) outs\(%b : ", els)
    assert re.search(r"pto\.tmov ins\(%b : [^)]*\) outs\(%r_1 : ", els) and "scf.yield %r_1" in els
    pto = check_pto(text)
    addr = {n: a for n, a, _ in pto.allocs}
    assert addr["%r_1"] == addr["%a"] != addr["%b"]


M = pl.dynamic("M")


@pl.program
class WhileDyn:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [16, 32])
        for (i, acc) in pl.while_(init_values=(1, acc0)):
            pl.cond(i < 4)
            blk = pl.load(x, [i * 16, 0], [16, 32])
            nxt = pl.add(acc, blk)
            i2, acc2 = pl.yield_(i + 1, nxt)
        y = pl.store(acc2, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def dyn(self, a: pl.Tensor[[M, 32], pl.FP32],
            c: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[M, 32], pl.FP32]:
        for i in pl.range(0, M, 16):
            t = pl.load(a, [i, 0], [16, 32])
            u = pl.mul(t, t)
            c = pl.store(u, [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
             a: pl.Tensor[[M, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        y = self.k(x, y)
        c = self.dyn(a, c)
        return y


def test_while_loop_and_dynamic_dimensions(tmp_path):
    compiled = ir.compile(WhileDyn, output_dir=tmp_path / "b")
    x, y, a, c = torch.randn(64, 32), torch.zeros(16, 32), torch.randn(48, 32), torch.zeros(48, 32)
    compiled(x, y, a, c)
    torch.testing.assert_close(y, x.view(4, 16, 32).sum(0))
    torch.testing.assert_close(c, a * a)
    k = (tmp_path / "b" / "kernels" / "aiv" / "k.pto").read_text()
    check_pto(k)
    assert re.search(r"%while:2 = scf\.while \(%i = %c1, %acc = %acc0\) : \(index, !pto\.tile_buf<", k)
    assert re.search(r"scf\.condition\(%cond\) %i, %acc : index, ", k)
    assert re.search(r"\^bb0\(%i_1: index, %acc_1: !pto\.tile_buf<", k)
    # the sum is computed straight into the carried buffer (InitMemRef): yielded with no tmov
    assert re.search(r"scf\.yield %\w+, %nxt : index, ", k)
    assert re.search(r"%nxt = pto\.alloc_tile addr = %c0_i64 ", k) and re.search(r"%acc0 = pto\.alloc_tile addr = %c0_i64 ", k)
    assert "pto.tmov" not in k
    assert re.search(r"pto\.tstore ins\(%while#1 : ", k)
    d = (tmp_path / "b" / "kernels" / "aiv" / "dyn.pto").read_text()
    check_pto(d)
    # the dynamic dim is an index argument after the parameters and shapes the view and the loop
    assert "func.func @dyn(%a: !pto.ptr<f32>, %c: !pto.ptr<f32>, %M: index)" in d
    assert "pto.make_tensor_view %a, shape = [%M, %c32], strides = [%c32, %c1]" in d
    assert "scf.for %i = %c0 to %M step %c16 {" in d


def test_cube_kernel_goes_to_aic_with_l0_layouts(tmp_path, examples_dir):
    import matmul

    compiled = ir.compile(matmul.Matmul, output_dir=tmp_path / "b")
    assert not (tmp_path / "b" / "kernels" / "aiv").exists()
    text = (tmp_path / "b" / "kernels" / "aic" / "matmul_kernel.pto").read_text()
    pto = check_pto(text)
    locs = {re.search(r"loc=(\w+)", tb).group(1) for _, _, tb in pto.allocs}
    assert locs == {"mat", "left", "right", "acc"}
    assert "loc=acc, dtype=f32, rows=64, cols=64, v_row=?, v_col=?, blayout=col_major, slayout=row_major, " \
           "fractal=1024" in text
    assert pto.op_names().count("pto.tmov") == 2  # Mat -> Left, Mat -> Right
    assert re.search(r"pto\.tmatmul ins\(%a_l0a, %b_l0b : [^)]*\) outs\(%c_acc : ", text)
    assert "%a: !pto.ptr<f16>" in text and "%c: !pto.ptr<f32>" in text
    a, b, c = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16), torch.zeros(64, 64)
    compiled(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_creation_op_only_allocates_and_scratch_tiles_are_inputs(tmp_path, examples_dir):
    import softmax

    ir.compile(softmax.RowSoftmax, output_dir=tmp_path / "b")
    text = (tmp_path / "b" / "kernels" / "aiv" / "softmax_kernel.pto").read_text()
    pto = check_pto(text)
    assert "%scratch = pto.alloc_tile" in text and "tile.create" not in text
    assert re.search(r"pto\.trowmax ins\(%t, %scratch : [^)]*\) outs\(%row_max : ", text)
    assert re.search(r"pto\.trowexpandsub ins\(%t, %row_max : ", text)
    assert "rows=64, cols=1," in text
    assert pto.op_names()[-1] == "return"


def test_op_without_pto_name_fails_naming_the_op(tmp_path, monkeypatch):
    real = get_op

    def no_pto_for_add(name):
        spec = real(name)
        return dataclasses.replace(spec, pto=None) if name == "tile.add" else spec

    monkeypatch.setattr(kernel_mod, "get_op", no_pto_for_add)
    with pytest.raises(CodegenError, match=r"kernel 'block_sum': op 'tile\.add' has no PTO instruction") as ei:
        ir.compile(Carried, output_dir=tmp_path / "b")
    assert ei.value.span.filename == str(HERE)
    assert ei.value.span.begin_line == _line_of(HERE, "nxt: pl.Tile[[16, 64], pl.FP32] = pl.add(acc, blk)")
    assert isinstance(ei.value, CompileError)


def test_cast_attributes_are_an_attribute_dictionary(tmp_path):
    @pl.program
    class Cast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
            t = pl.load(x, [0, 0], [16, 32])
            h = pl.cast(t, pl.FP16, mode="floor")
            y = pl.store(h, [0, 0], y)
            return y

    compiled = ir.compile(Cast, output_dir=tmp_path / "b")
    x, y = torch.randn(16, 32) * 100, torch.zeros(16, 32, dtype=torch.float16)
    compiled(x, y)
    torch.testing.assert_close(y, x.half())
    text = (tmp_path / "b" / "kernels" / "aiv" / "k.pto").read_text()
    check_pto(text)
    assert re.search(r'pto\.tcvt ins\(%t : [^)]*dtype=f32[^)]*\) outs\(%h : [^)]*dtype=f16[^)]*\) '
                     r'\{mode = "floor"\} loc\(', text)


def _tile(shape, dt, space, view=None):
    return TileType(tuple(ConstInt(d) for d in shape), dt, space, MemRef(space, 0, 64, 0), view)


@pytest.mark.parametrize("space,layout", [
    (MemorySpace.Vec, "blayout=row_major, slayout=none_box, fractal=512"),
    (MemorySpace.Mat, "blayout=col_major, slayout=row_major, fractal=512"),
    (MemorySpace.Left, "blayout=row_major, slayout=row_major, fractal=512"),
    (MemorySpace.Right, "blayout=row_major, slayout=col_major, fractal=512"),
    (MemorySpace.Acc, "blayout=col_major, slayout=row_major, fractal=1024"),
    (MemorySpace.Bias, "blayout=row_major, slayout=none_box, fractal=512"),
])
def test_tile_buf_type_per_memory_space(space, layout):
    t = tile_buf_type(_tile((16, 32), FP16, space))
    assert t == (f"!pto.tile_buf<loc={space.value}, dtype=f16, rows=16, cols=32, v_row=?, v_col=?, "
                 f"{layout}, pad=0>")


def test_tile_buf_type_folds_dims_and_reads_views():
    assert "rows=1, cols=64," in tile_buf_type(_tile((64,), FP32, MemorySpace.Vec))
    assert "rows=8, cols=16," in tile_buf_type(_tile((2, 4, 16), BF16, MemorySpace.Vec))
    assert "dtype=bf16" in tile_buf_type(_tile((2, 4, 16), BF16, MemorySpace.Vec))
    nz = tile_buf_type(_tile((16, 16), FP16, MemorySpace.Mat, TileView(layout=TensorLayout.NZ)))
    assert "blayout=col_major, slayout=row_major" in nz
    padded = tile_buf_type(_tile((16, 16), INT32, MemorySpace.Vec, TileView(pad=pl.PadValue.zero)))
    assert padded.endswith("pad=1>") and "dtype=i32" in padded


@pytest.mark.parametrize("value,dt,text", [
    (0.1, FP32, "0.1"), (2.0, FP32, "2.0"), (1e-05, FP32, "1.0e-05"), (-3.5e20, FP32, "-3.5e+20"),
    (float("inf"), FP32, "0x7F800000"), (float("-inf"), FP16, "0xFC00"), (float("inf"), BF16, "0x7F80"),
])
def test_float_literals(value, dt, text):
    assert float_literal(value, dt) == text
