"""Type inference of every op family (shape, dtype, memory space), and the parse-time errors that
name the op, the argument and what was expected."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError

PARAMS = ("a: pl.Tensor[[16, 32], pl.FP32], h: pl.Tensor[[16, 32], pl.FP16], i: pl.Tensor[[16, 32], pl.INT32], "
          "i8: pl.Tensor[[32], pl.INT8], u8: pl.Tensor[[16, 32], pl.UINT8], c: pl.Tensor[[16, 1], pl.FP32], "
          "m: pl.Tensor[[32, 16], pl.FP16], s: pl.Scalar[pl.FP32], n: pl.Scalar[pl.INT32]")
TILES = ("ta = pl.load(a, [0, 0], [16, 32])\nth = pl.load(h, [0, 0], [16, 32])\nti = pl.load(i, [0, 0], [16, 32])\n"
         "tc = pl.load(c, [0, 0], [16, 1])\ntmp = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n"
         "mh = pl.load(m, [0, 0], [32, 16], target_memory=pl.Mem.Mat)\n"
         "hm = pl.load(h, [0, 0], [16, 32], target_memory=pl.Mem.Mat)\n")


def infer(body: str) -> str:
    text = f"import pypto.language as pl\n\n@pl.function\ndef f({PARAMS}):\n" + \
        "\n".join("    " + line for line in (TILES + body).strip().splitlines()) + "\n    return r\n"
    fn = pl.parse(text)
    return ir.python_print(fn.body.stmts[-2].var.type)


def T(shape: str, dt: str) -> str:
    return f"pl.Tensor[{shape}, pl.{dt}]"


def V(shape: str, dt: str, space: str = "Vec") -> str:
    return f"pl.Tile[{shape}, pl.{dt}, pl.Mem.{space}]"


@pytest.mark.parametrize("body,expected", [
    # elementwise: tensors broadcast and promote; tiles keep their dtype with scalars
    ("r = pl.sub(a, c)", T("[16, 32]", "FP32")),
    ("r = pl.mul(h, a)", T("[16, 32]", "FP32")),
    ("r = pl.maximum(i, i8)", T("[16, 32]", "INT32")),
    ("r = pl.fmod(i, 2.5)", T("[16, 32]", "FP32")),
    ("r = pl.rem(i, 3)", T("[16, 32]", "INT32")),
    ("r = pl.divs(th, 3)", V("[16, 32]", "FP16")),
    ("r = pl.add(ti, 0.5)", V("[16, 32]", "INT32")),
    ("r = pl.sin(th)", V("[16, 32]", "FP16")),
    ("r = pl.lrelu(a, s)", T("[16, 32]", "FP32")),
    ("r = pl.prelu(a, c)", T("[16, 32]", "FP32")),
    # bitwise: shifts keep the lhs dtype
    ("r = pl.shl(i8, i)", T("[16, 32]", "INT8")),
    ("r = pl.and_(i, i8)", T("[16, 32]", "INT32")),
    ("r = pl.tile.xors(ti, n)", V("[16, 32]", "INT32")),
    ("r = pl.not_(ti)", V("[16, 32]", "INT32")),
    # compare / select
    ("r = pl.cmp(a, c, \"lt\")", T("[16, 32]", "UINT8")),
    ("r = pl.cmp(ta, 0.0, \"ge\")", V("[16, 32]", "UINT8")),
    ("k = pl.cmp(ta, ta, \"eq\")\nr = pl.sel(k, ta, ta)", V("[16, 32]", "FP32")),
    ("r = pl.sels(th, th, n)", V("[16, 32]", "FP16")),
    # reductions keep the reduced dim as 1; arg reductions give INT32
    ("r = pl.col_prod(a)", T("[1, 32]", "FP32")),
    ("r = pl.row_argmax(ta, tmp)", V("[16, 1]", "INT32")),
    ("r = pl.col_argmin(i)", T("[1, 32]", "INT32")),
    # broadcasts
    ("r = pl.row_expand(ta, tc)", V("[16, 32]", "FP32")),
    ("r = pl.row_expand_expdif(a, c)", T("[16, 32]", "FP32")),
    ("r = pl.expands(th, s)", V("[16, 32]", "FP16")),
    # shape and view
    ("r = pl.reshape(a, [512])", T("[512]", "FP32")),
    ("r = pl.transpose(ta, 0, 1)", V("[32, 16]", "FP32")),
    ("r = pl.concat(ta, ta, axis=0)", V("[32, 32]", "FP32")),
    ("r = pl.concat(a, a)", T("[16, 64]", "FP32")),
    ("r = pl.extract(mh, [0, 0], [16, 16], target_memory=pl.Mem.Left)", V("[16, 16]", "FP16", "Left")),
    ("r = pl.tile.view(ta, [32, 16])", V("[32, 16]", "FP32")),
    # creation
    ("r = pl.full([4, n], 1.0, dtype=pl.FP16)", "pl.Tensor[[4, n], pl.FP16]"),
    ("r = pl.arange(0, [1, 16], dtype=pl.INT32)", T("[1, 16]", "INT32")),
    ("r = pl.tile.tri([8, 8], 0, dtype=pl.FP32, target_memory=pl.Mem.Vec)", V("[8, 8]", "FP32")),
    # memory
    ("r = pl.read(a, [1, 2])", "pl.Scalar[pl.FP32]"),
    ("r = pl.tile.read(ti, [0, n])", "pl.Scalar[pl.INT32]"),
    ("r = pl.dim(a, axis=-1)", "pl.Scalar[pl.INDEX]"),
    # matmul: accumulator dtype, out_dtype, transposes, bias, gemv
    ("r = pl.matmul(h, m)", T("[16, 16]", "FP32")),
    ("r = pl.matmul(h, h, out_dtype=pl.FP16, b_trans=True)", T("[16, 16]", "FP16")),
    ("r = pl.matmul(pl.move(hm, target_memory=pl.Mem.Left), pl.move(hm, target_memory=pl.Mem.Right), "
     "a_trans=True)", V("[32, 32]", "FP32", "Acc")),
    ("r = pl.gemv(pl.load(h, [0, 0], [1, 32], target_memory=pl.Mem.Mat), mh)", V("[1, 16]", "FP32", "Acc")),
    # gather / sort
    ("r = pl.gather(ta, pl.load(i, [0, 0], [16, 8]))", V("[16, 8]", "FP32")),
    ("r = pl.gather_row(a, pl.tensor.slice(i, [4, 1], [0, 0]))", T("[4, 32]", "FP32")),
    ("r = pl.sort32(ta, ti)", V("[16, 64]", "FP32")),
    # block identity and system
    ("r = pl.get_subblock_idx()", "pl.Scalar[pl.INDEX]"),
    ("r = pl.system.tpop_from_aic([16, 32], dtype=pl.BF16)", V("[16, 32]", "BF16")),
    ("r = pl.system.tpop_from_aiv([16, 32], dtype=pl.FP16)", V("[16, 32]", "FP16", "Mat")),
    ("r = pl.system.bar_v()", "tuple[]"),
])
def test_type_inference(body, expected):
    assert infer(body) == expected


@pytest.mark.parametrize("body,message", [
    ("r = pl.add(a, m)", "tensor.add: shapes [16, 32] and [32, 16] cannot be broadcast together"),
    ("r = pl.tile.add(ta, a)", "tile.add: argument 'rhs' must be a Tile, got Tensor (use the pl.tensor.* form "
                               "or load it first)"),
    ("r = pl.tensor.exp(ta)", "tensor.exp: argument 'x' must be a Tensor, got Tile (use the pl.tile.* form)"),
    ("r = pl.add(ta, th)", "tile.add: 'lhs' and 'rhs' must have the same dtype, got FP32 and FP16; cast one "
                           "first, e.g. pl.cast(value, pl.FP32)"),
    ("r = pl.exp(ti)", "tile.exp: argument 'x' must have dtype FP16, BF16, FP32, got INT32"),
    ("r = pl.and_(a, a)", "tensor.and: argument 'lhs' must have dtype INT8, INT16, INT32, INT64, UINT8"),
    ("r = pl.tile.shls(ti, 1.5)", "tile.shls: argument 'rhs' must be an integer scalar, got FP32"),
    ("r = pl.cmp(ta, ta, \"less\")", "tile.cmp: attribute 'cmp_type' must be one of 'eq', 'ne', 'lt', 'le', "
                                     "'gt', 'ge', got 'less'"),
    ("r = pl.sel(ta, ta, ta)", "tile.sel: argument 'mask' must have dtype UINT8 (a cmp result) or BOOL, got FP32"),
    ("s2 = pl.create_tile([16, 8], dtype=pl.FP32, target_memory=pl.Mem.Vec)\nr = pl.row_sum(ta, s2)",
     "tile.row_sum: argument 'tmp_tile' must have the input's shape [16, 32], got [16, 8]"),
    ("r = pl.row_expand_add(ta, ta)", "tile.row_expand_add: argument 'vec' must have shape [16, 1] to broadcast "
                                      "over [16, 32], got [16, 32]"),
    ("r = pl.tile.matmul(th, th)", "tile.matmul: argument 'lhs' must be in memory space Left or Mat, but it is in Vec"),
    ("r = pl.matmul(h, h)", "tensor.matmul: inner dimensions differ: lhs [16, 32] and rhs [16, 32]"),
    ("r = pl.gemv(h, m)", "tensor.gemv: argument 'lhs' must be a single row [1, K] for gemv, got [16, 32]"),
    ("r = pl.matmul_bias(h, m, c)", "tensor.matmul_bias: argument 'bias' must have shape [1, 16], got [16, 1]"),
    ("r = pl.reshape(ta, [16, 16])", "tile.reshape: cannot reshape shape [16, 32] (512 elements) to [16, 16] "
                                     "(256 elements)"),
    ("r = pl.concat(ta, tc, axis=0)", "tile.concat: shapes [16, 32] and [16, 1] differ outside the concat axis 0"),
    ("r = pl.transpose(ta, 0, 2)", "tile.transpose: attribute 'axis2' must be an integer in [-2, 1], got 2"),
    ("r = pl.read(a, [16, 0])", "tensor.read: region at offset 16 of size 1 exceeds dimension 16"),
    ("r = pl.full([4, 4], 1.0, dtype=pl.BOOL)", "tensor.full: attribute 'dtype' must be one of FP16, BF16, FP32"),
    ("r = pl.tile.ci(0.5, [1, 8], dtype=pl.INT32)", "tile.ci: argument 'start' must be an integer scalar, got FP32"),
    ("r = pl.gather(ta, ta)", "tile.gather: argument 'indices' must have dtype INT32, got FP32"),
    ("r = pl.sort32(th, ti)", "tile.sort32: argument 'src' must have dtype FP32, got FP16"),
    ("r = pl.mrgsort(pl.sort32(ta, ti), block_len=64)",
     "tile.mrgsort: attribute 'block_len' must be an integer in [1, 32], got 64"),
    ("r = pl.system.sync_src(set_pipe=\"V\", wait_pipe=\"X\", event_id=0)",
     "system.sync_src: attribute 'wait_pipe' must be one of 'MTE1', 'MTE2', 'MTE3', 'V', 'M', 'S', 'FIX', got 'X'"),
    ("r = pl.system.tpush_to_aic(mh)", "system.tpush_to_aic: argument 'tile' must be in memory space Vec, "
                                       "but it is in Mat"),
    ("o = pl.create_tensor([16, 32], dtype=pl.FP16)\nr = pl.tensor.assemble(o, a, [0, 0])",
     "tensor.assemble: cannot write a value of dtype FP32 into 'o', whose dtype is FP16; cast it first, "
     "e.g. pl.cast(value, pl.FP16)"),
    ("r = pl.tile.assemble(ti, ta, [0, 0])", "tile.assemble: cannot write a value of dtype FP32 into 'ti', whose "
                                             "dtype is INT32; cast it first, e.g. pl.cast(value, pl.INT32)"),
    ("r = pl.cast(ta, pl.TASK_ID)", "tile.cast: attribute 'target_type' must be any element type except "
                                    "TASK_ID, got TASK_ID"),
    ("r = pl.tile.load(a, [0, 0], [16, 32], [8, 32], pl.Mem.Left)",
     "tile.load: attribute 'target_memory' must be one of pl.Mem.Vec, pl.Mem.Mat, got pl.Mem.Left"),
])
def test_errors_name_the_op_the_argument_and_the_expectation(body, message):
    with pytest.raises(ParserTypeError) as ei:
        infer(body)
    assert message in ei.value.message
    assert ei.value.span is not None and ei.value.span.begin_line > 0


def test_a_tensor_transpose_of_3d_in_a_kernel_names_the_2d_workaround():
    """The cores transpose 2-D tiles: a 3-D pl.transpose inside pl.at is a located compile error
    that shows the per-block form, and that form gives torch's numbers."""
    import torch

    from pypto.core.errors import CompileError
    from pypto.runtime import RunConfig

    @pl.jit
    def whole(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.transpose(a, 1, 2)  # MARK-3d-transpose
        return c

    a = torch.randn(2, 16, 32)
    with pytest.raises(CompileError) as ei:
        whole(a, torch.empty(2, 32, 16), config=RunConfig(platform="a2a3sim"))
    assert ei.value.message == (
        "tile.transpose: argument 'x' must be 2-D, got shape [2, 16, 32]: the cores transpose 2-D tiles only; "
        "transpose each [16, 32] block instead, e.g. in a loop over the leading dimension: "
        "pl.transpose(pl.reshape(x[b:b+1, :, :], [16, 32]), 0, 1)")
    assert ei.value.span.filename == __file__
    assert "MARK-3d-transpose" in open(__file__).read().splitlines()[ei.value.span.begin_line - 1]

    @pl.jit
    def per_block(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        for b in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.reshape(a[b:b + 1, :, :], [16, 32])
                c[b:b + 1, :, :] = pl.reshape(pl.transpose(t, 0, 1), [1, 32, 16])
        return c

    c = torch.empty(2, 32, 16)
    per_block(a, c, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(c, a.transpose(1, 2))
