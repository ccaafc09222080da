"""Partial tiles: the valid region set by load(valid_shape=), set_validshape and fillpad is carried
through cast, elementwise ops, reductions, slices and stores, and values outside it never reach an
output (SPEC §9)."""

import pytest
import torch
from op_harness import kernel_program, rand, run, run_kernel

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError

SENTINEL = -777.0


def test_dynamic_tail_tiles_through_exp_cast_and_store():
    text = """
import pypto.language as pl

@pl.program
class Tail:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[40, 32], pl.FP32], y: pl.Out[pl.Tensor[[40, 32], pl.FP16]]):
        for i in pl.range(3):
            rows = pl.min(16, 40 - i * 16)
            t = pl.load(x, [i * 16, 0], [16, 32], valid_shape=[rows, 32])
            e = pl.exp(t)
            c = pl.cast(e, pl.FP16)
            y = pl.store(c, [i * 16, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[40, 32], pl.FP32], y: pl.Out[pl.Tensor[[40, 32], pl.FP16]]):
        self.k(x, y)
"""
    prog = pl.parse(text)
    x, y = torch.randn(40, 32), torch.zeros(40, 32, dtype=torch.float16)
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    compiled(x, y)
    torch.testing.assert_close(y, torch.exp(x).half())
    printed = prog.as_python()
    assert "pl.TileView(valid_shape=[rows, 32]" in printed  # the dynamic extent survives printing
    ir.assert_structural_equal(pl.parse(printed), prog)


def test_store_writes_only_the_valid_region_and_poison_never_leaks():
    body = """
    t = pl.load(x, [0, 0], [16, 32], valid_shape=[10, 20])
    u = pl.load(z, [0, 0], [16, 32])
    s = pl.add(t, u)
    m = pl.muls(s, 2.0)
    y_t = m
    """
    x, z = rand("FP32", (16, 32)), rand("FP32", (16, 32))
    prog = kernel_program(body, [("x", "FP32", (16, 32)), ("z", "FP32", (16, 32))], [("y", "FP32", (16, 32))])
    y = torch.full((16, 32), SENTINEL)
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, z, y)
    assert torch.equal(y[:10, :20], (x[:10, :20] + z[:10, :20]) * 2)
    assert bool((y[10:] == SENTINEL).all()) and bool((y[:, 20:] == SENTINEL).all())


@pytest.mark.parametrize("dt", ["FP32", "INT32"])
def test_reductions_use_only_the_valid_region(dt):
    body = """
    t = pl.load(x, [0, 0], [16, 32], valid_shape=[12, 20])
    tmp = pl.create_tile([16, 32], dtype=pl.DT, target_memory=pl.Mem.Vec)
    rs_t = pl.row_sum(t, tmp)
    cm_t = pl.col_max(t, tmp)
    am_t = pl.row_argmin(t, tmp)
    """.replace("DT", dt)
    x = rand(dt, (16, 32))
    outs = [("rs", dt, (16, 1)), ("cm", dt, (1, 32)), ("am", "INT32", (16, 1))]
    prog = kernel_program(body, [("x", dt, (16, 32))], outs)
    ys = [torch.full(s, -7, dtype=x.dtype if n != "am" else torch.int32) for n, _, s in outs]
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, *ys)
    rs, cm, am = ys
    v = x[:12, :20]
    torch.testing.assert_close(rs[:12], v.sum(-1, keepdim=True, dtype=x.dtype))
    assert torch.equal(cm[:, :20], v.amax(0, keepdim=True))
    assert torch.equal(am[:12], v.argmin(-1, keepdim=True).to(torch.int32))
    assert bool((rs[12:] == -7).all()) and bool((cm[:, 20:] == -7).all()) and bool((am[12:] == -7).all())


@pytest.mark.parametrize("pad,fill", [("zero", 0.0), ("max", float("inf")), ("min", float("-inf"))])
def test_fillpad_pads_outside_the_valid_region(pad, fill):
    body = f"""
    t = pl.load(x, [0, 0], [16, 32], valid_shape=[9, 17])
    y_t = pl.fillpad(t, pad_value=pl.PadValue.{pad})
    """
    x = rand("FP32", (16, 32))
    (y,) = run_kernel(body, [("x", "FP32", (16, 32))], [("y", "FP32", (16, 32))], x)
    want = torch.full((16, 32), fill)
    want[:9, :17] = x[:9, :17]
    assert torch.equal(y, want)


def test_fillpad_then_full_reduction_and_set_validshape_then_store():
    body = """
    t = pl.load(x, [0, 0], [16, 32], valid_shape=[16, 5])
    p = pl.fillpad(t, pad_value=pl.PadValue.zero)
    tmp = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)
    s_t = pl.row_sum(p, tmp)
    v = pl.set_validshape(p, [n, 32])
    w_t = pl.exp(v)
    """
    x = rand("FP32", (16, 32))
    prog = kernel_program(body, [("x", "FP32", (16, 32)), ("n", "INDEX", None)],
                          [("s", "FP32", (16, 1)), ("w", "FP32", (16, 32))])
    s, w = torch.zeros(16, 1), torch.full((16, 32), SENTINEL)
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, 3, s, w)
    torch.testing.assert_close(s, x[:, :5].sum(-1, keepdim=True))
    want = torch.zeros(16, 32)
    want[:, :5] = x[:, :5]
    torch.testing.assert_close(w[:3], torch.exp(want[:3]))
    assert bool((w[3:] == SENTINEL).all())


def test_slice_and_transpose_carry_the_valid_region():
    body = """
    t = pl.load(x, [0, 0], [16, 32], valid_shape=[10, 24])
    s = pl.tile.slice(t, [8, 16], [8, 16])
    y_t = pl.transpose(s, 0, 1)
    """
    x = rand("FP32", (16, 32))
    prog = kernel_program(body, [("x", "FP32", (16, 32))], [("y", "FP32", (16, 8))])
    text = prog.as_python()
    assert "valid_shape=[2, 8]" in text and "valid_shape=[8, 2]" in text
    (y,) = run(prog, x, outs=[("y", "FP32", (16, 8))])
    assert torch.equal(y[:8, :2], x[8:10, 16:24].T)
    assert bool((y[8:] == 0).all()) and bool((y[:, 2:] == 0).all())  # untouched zeros of the output


def test_matmul_multiplies_only_the_valid_k():
    body = """
    a1 = pl.load(a, [0, 0], [16, 32], valid_shape=[16, 20], target_memory=pl.Mem.Mat)
    b1 = pl.load(b, [0, 0], [32, 16], valid_shape=[20, 16], target_memory=pl.Mem.Mat)
    y_t = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
    """
    a, b = rand("FP16", (16, 32)), rand("FP16", (32, 16))
    (y,) = run_kernel(body, [("a", "FP16", (16, 32)), ("b", "FP16", (32, 16))], [("y", "FP32", (16, 16))], a, b)
    torch.testing.assert_close(y, a[:, :20].float() @ b[:20].float(), rtol=1e-3, atol=1e-3)


def _type_of(body: str, params: str = "x: pl.Tensor[[16, 32], pl.FP32], n: pl.Scalar[pl.INDEX]") -> str:
    text = f"import pypto.language as pl\n\n@pl.function\ndef f({params}):\n" + \
        "\n".join("    " + line for line in body.strip().splitlines()) + "\n    return r\n"
    fn = pl.parse(text)
    return ir.python_print(fn.body.stmts[-2].var.type)


def _tv(vs: str) -> str:
    return f"pl.TileView(valid_shape={vs}, layout=pl.TensorLayout.ND, pad=pl.PadValue.null)"


LOAD = "t = pl.load(x, [0, 0], [16, 32], valid_shape=[10, 20])\nu = pl.load(x, [0, 0], [16, 32])\n"


@pytest.mark.parametrize("body,expected", [
    (LOAD + "r = pl.add(t, u)", f"pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, {_tv('[10, 20]')}]"),
    (LOAD + "r = pl.cast(t, pl.BF16)", f"pl.Tile[[16, 32], pl.BF16, pl.Mem.Vec, {_tv('[10, 20]')}]"),
    (LOAD + "r = pl.move(t, target_memory=pl.Mem.Vec)", f"pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, {_tv('[10, 20]')}]"),
    (LOAD + "v = pl.set_validshape(u, [12, 8])\nr = pl.mul(t, v)",
     f"pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, {_tv('[10, 8]')}]"),
    (LOAD + "s = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)\nr = pl.row_max(t, s)",
     f"pl.Tile[[16, 1], pl.FP32, pl.Mem.Vec, {_tv('[10, 1]')}]"),
    (LOAD + "r = pl.tile.slice(t, [8, 16], [4, 16])", f"pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec, {_tv('[6, 4]')}]"),
    (LOAD + "r = pl.tile.slice(t, [8, 8], [0, 0])", "pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec]"),
    (LOAD + "r = pl.transpose_view(t)",
     "pl.Tile[[32, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[20, 10], layout=pl.TensorLayout.DN, "
     "pad=pl.PadValue.null)]"),
    (LOAD + "r = pl.fillpad(t)",
     "pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=None, layout=pl.TensorLayout.ND, "
     "pad=pl.PadValue.zero)]"),
    ("t = pl.load(x, [0, 0], [16, 32], valid_shape=[n, 32])\nr = pl.exp(t)",
     f"pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, {_tv('[n, 32]')}]"),
    ("t = pl.load(x, [0, 0], [16, 32], valid_shape=[n, 32])\nu = pl.load(x, [0, 0], [16, 32])\nr = pl.sub(u, t)",
     f"pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, {_tv('[n, 32]')}]"),
    ("r = pl.load(x, [0, 0], [16, 32], valid_shape=[16, 32])", "pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec]"),
    ("r = pl.tensor.slice(x, [8, 32], [8, 0], valid_shape=[5, 32])",
     "pl.Tensor[[8, 32], pl.FP32, pl.TensorView(layout=pl.TensorLayout.ND, valid_shape=[5, 32], pad=pl.PadValue.null)]"),
])
def test_valid_region_type_rules(body, expected):
    assert _type_of(body) == expected


@pytest.mark.parametrize("body,message", [
    (LOAD + "r = pl.reshape(t, [32, 16])", "tile.reshape: argument 'x' has valid shape [10, 20] of [16, 32]; "
                                           "reshape needs a fully valid input: pad it with pl.fillpad first"),
    (LOAD + "r = pl.concat(t, u)", "tile.concat: argument 'lhs' has valid shape [10, 20]"),
    ("t = pl.load(x, [0, 0], [16, 32], valid_shape=[n, 32])\nu = pl.load(x, [0, 0], [16, 32], valid_shape=[8, 32])"
     "\nr = pl.add(t, u)", "tile.add: the valid regions of 'lhs' and 'rhs' differ in a dynamic dimension"),
    ("r = pl.load(x, [0, 0], [16, 32], valid_shape=[17, 32])",
     "tile.load: argument 'valid_shape' [17, 32] does not fit inside shape [16, 32]"),
    ("t = pl.load(x, [0, 0], [16, 32])\nr = pl.fillpad(t, pad_value=pl.PadValue.null)",
     "tile.fillpad: attribute 'pad_value' must be pl.PadValue.zero, max or min"),
    ("t = pl.load(x, [0, 0], [16, 32], valid_shape=[n, 32])\nr = pl.tile.slice(t, [8, 32], [8, 0])",
     "tile.slice: the source's valid extent [n] in dimension 0 is dynamic; give the slice an explicit valid_shape="),
])
def test_valid_region_errors(body, message):
    with pytest.raises(ParserTypeError) as ei:
        _type_of(body)
    assert message in ei.value.message


def test_a_tail_load_may_extend_past_the_tensor_end():
    body = "t = pl.load(x, [8, 0], [16, 32], valid_shape=[8, 32])\ny_t = pl.exp(t)"
    x = rand("FP32", (16, 32))
    prog = kernel_program(body, [("x", "FP32", (16, 32))], [("y", "FP32", (16, 32))])
    y = torch.full((16, 32), SENTINEL)
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, y)
    torch.testing.assert_close(y[:8], torch.exp(x[8:]))
    assert bool((y[8:] == SENTINEL).all())
    with pytest.raises(ParserTypeError, match="exceeds dimension 16"):
        _type_of("r = pl.load(x, [8, 0], [16, 32])")


def test_an_empty_valid_region_round_trips_and_stores_nothing():
    """A valid extent of 0 prints as `valid_shape=[0, 64]`, parses back, and the store of such a
    tile leaves the output untouched."""
    text = """
import pypto.language as pl

@pl.program
class Empty:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 64], valid_shape=[0, 64])
        y = pl.store(t, [0, 0], y)
        return y
"""
    prog = pl.parse(text)
    printed = prog.as_python()
    assert "valid_shape=[0, 64]" in printed
    assert ir.structural_equal(pl.parse(printed), prog)
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    x, y = torch.randn(16, 64), torch.full((16, 64), SENTINEL)
    compiled(x, y)
    assert torch.all(y == SENTINEL)


def test_a_run_time_valid_extent_larger_than_the_tile_is_a_clear_error():
    from pypto.core.errors import RuntimeSimError

    text = """
import pypto.language as pl

@pl.program
class TooLong:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 64], pl.FP32], n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 64], valid_shape=[n, 64])
        y = pl.store(t, [0, 0], y)
        return y
"""
    compiled = ir.compile(pl.parse(text), dump_passes=False, skip_ptoas=True)
    with pytest.raises(RuntimeSimError, match=r"valid_shape \[20, 64\] does not fit the loaded tile of shape \[16, 64\]"):
        compiled(torch.randn(32, 64), 20, torch.zeros(32, 64))
