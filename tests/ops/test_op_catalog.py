"""The op catalog: type inference tables and numerics on the simulator against torch.

Kernels are generated from DSL text with `pl.parse`, one per op × dtype; the expected values are
computed here with torch directly (never through the registry's own `compute`).
"""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError

M, N = 16, 32
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32}
TOL = {"FP32": (1e-5, 1e-5), "FP16": (1e-3, 1e-3), "BF16": (1e-2, 1e-2), "INT32": (0, 0)}


def program(body: str, ins: list[tuple[str, str, tuple]], out: tuple[str, str, tuple]) -> ir.Program:
    """A program: InCore kernel `k` with `body`, and an orchestration `main` calling it."""
    def t(dt, shape):
        return f"pl.Tensor[[{', '.join(map(str, shape))}], pl.{dt}]"

    params = ", ".join(f"{n}: {t(dt, s)}" for n, dt, s in ins)
    on, odt, oshape = out
    sig = f"self, {params}, {on}: pl.Out[{t(odt, oshape)}]) -> {t(odt, oshape)}"
    args = ", ".join(n for n, _, _ in ins)
    body = "\n".join("        " + line for line in body.strip().splitlines())
    text = f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k({sig}:
{body}
        {on} = pl.store(r, [0, 0], {on})
        return {on}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main({sig}:
        {on} = self.k({args}, {on})
        return {on}
"""
    return pl.parse(text)


def rand(dt: str, shape=(M, N), positive=False):
    if dt == "INT32":
        return torch.randint(-50, 50, shape, dtype=torch.int32)
    x = torch.randn(*shape)
    if positive:
        x = x.abs() + 0.5
    return x.to(TORCH[dt])


def run(prog, *args, out_shape, out_dt):
    y = torch.zeros(*out_shape, dtype=TORCH[out_dt])
    ir.compile(prog, dump_passes=False)(*args, y)
    return y


UNARY = [  # op, torch reference, needs positive input
    ("exp", torch.exp, False), ("log", torch.log, True), ("sqrt", torch.sqrt, True),
    ("rsqrt", torch.rsqrt, True), ("recip", torch.reciprocal, True), ("neg", torch.neg, False),
    ("abs", torch.abs, False), ("relu", torch.relu, False),
]


@pytest.mark.parametrize("dt", ["FP32", "FP16"])
@pytest.mark.parametrize("op,ref,positive", UNARY)
def test_tile_unary(op, ref, positive, dt):
    prog = program(f"t = pl.load(x, [0, 0], [{M}, {N}])\nr = pl.{op}(t)", [("x", dt, (M, N))], ("y", dt, (M, N)))
    x = rand(dt, positive=positive)
    y = run(prog, x, out_shape=(M, N), out_dt=dt)
    rtol, atol = TOL[dt]
    torch.testing.assert_close(y, ref(x), rtol=rtol, atol=atol)


BINARY = [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
          ("maximum", torch.maximum), ("minimum", torch.minimum)]


BINARY_CASES = [(op, ref, dt) for op, ref in BINARY for dt in ("FP32", "FP16", "BF16", "INT32")
                if not (op == "div" and dt == "INT32")]  # integer division is not a tile instruction


@pytest.mark.parametrize("op,ref,dt", BINARY_CASES)
def test_tile_binary_and_scalar_forms(op, ref, dt):
    body = (f"a = pl.load(x, [0, 0], [{M}, {N}])\nb = pl.load(z, [0, 0], [{M}, {N}])\n"
            f"r = pl.{op}(a, b)")
    prog = program(body, [("x", dt, (M, N)), ("z", dt, (M, N))], ("y", dt, (M, N)))
    x, z = rand(dt), rand(dt, positive=op == "div")
    y = run(prog, x, z, out_shape=(M, N), out_dt=dt)
    rtol, atol = TOL[dt]
    torch.testing.assert_close(y, ref(x, z), rtol=rtol, atol=atol)
    # scalar form: pl.X(tile, 2) dispatches to tile.Xs and keeps the tile dtype
    s = "2" if dt == "INT32" else "2.0"
    prog_s = program(f"a = pl.load(x, [0, 0], [{M}, {N}])\nr = pl.{op}(a, {s})", [("x", dt, (M, N))],
                     ("y", dt, (M, N)))
    assert any("s(" in line for line in prog_s.as_python().splitlines() if f"tile.{op}" in line)
    y = run(prog_s, x, out_shape=(M, N), out_dt=dt)
    expected = ref(x, torch.tensor(2, dtype=x.dtype)).to(x.dtype)
    torch.testing.assert_close(y, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dt", ["FP32", "FP16"])
@pytest.mark.parametrize("op,ref", [("row_sum", lambda x: x.float().sum(-1, keepdim=True)),
                                    ("row_max", lambda x: x.amax(-1, keepdim=True)),
                                    ("row_min", lambda x: x.amin(-1, keepdim=True))])
def test_tile_row_reductions(op, ref, dt):
    body = (f"t = pl.load(x, [0, 0], [{M}, {N}])\n"
            f"tmp = pl.create_tile([{M}, {N}], dtype=pl.{dt}, target_memory=pl.Mem.Vec)\n"
            f"r = pl.{op}(t, tmp)")
    prog = program(body, [("x", dt, (M, N))], ("y", dt, (M, 1)))
    x = rand(dt)
    y = run(prog, x, out_shape=(M, 1), out_dt=dt)
    rtol, atol = (1e-2, 1e-2) if dt == "FP16" else (1e-5, 1e-5)
    torch.testing.assert_close(y.float(), ref(x).float(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("op,ref", [("row_expand_sub", torch.sub), ("row_expand_div", torch.div),
                                    ("row_expand_mul", torch.mul), ("row_expand_add", torch.add)])
def test_tile_row_expand(op, ref):
    body = (f"t = pl.load(x, [0, 0], [{M}, {N}])\nv = pl.load(c, [0, 0], [{M}, 1])\n"
            f"r = pl.{op}(t, v)")
    prog = program(body, [("x", "FP32", (M, N)), ("c", "FP32", (M, 1))], ("y", "FP32", (M, N)))
    x, c = rand("FP32"), rand("FP32", (M, 1), positive=True)
    y = run(prog, x, c, out_shape=(M, N), out_dt="FP32")
    torch.testing.assert_close(y, ref(x, c))


@pytest.mark.parametrize("src,dst", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("INT32", "FP32")])
def test_tile_cast(src, dst):
    body = f"t = pl.load(x, [0, 0], [{M}, {N}])\nr = pl.cast(t, pl.{dst})"
    prog = program(body, [("x", src, (M, N))], ("y", dst, (M, N)))
    x = rand(src)
    y = run(prog, x, out_shape=(M, N), out_dt=dst)
    assert torch.equal(y, x.to(TORCH[dst]))


def test_cast_float_to_int_modes():
    for mode, ref in [("round", torch.round), ("floor", torch.floor), ("ceil", torch.ceil), ("trunc", torch.trunc)]:
        body = f"t = pl.load(x, [0, 0], [{M}, {N}])\nr = pl.cast(t, pl.INT32, mode=\"{mode}\")"
        prog = program(body, [("x", "FP32", (M, N))], ("y", "INT32", (M, N)))
        x = torch.randn(M, N) * 10
        x[0, :4] = torch.tensor([0.5, 1.5, -0.5, -2.5])
        y = run(prog, x, out_shape=(M, N), out_dt="INT32")
        assert torch.equal(y, ref(x).to(torch.int32)), mode


@pytest.mark.parametrize("dt", ["FP16", "BF16"])
def test_tile_matmul_and_matmul_acc(dt):
    K = 32
    body = (f"a1 = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)\n"
            f"b1 = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)\n"
            "a0 = pl.move(a1, target_memory=pl.Mem.Left)\n"
            "b0 = pl.move(b1, target_memory=pl.Mem.Right)\n"
            "c0 = pl.matmul(a0, b0)\n"
            "r = pl.matmul_acc(c0, a0, b0)")
    prog = program(body, [("a", dt, (M, K)), ("b", dt, (K, N))], ("y", "FP32", (M, N)))
    a, b = rand(dt, (M, K)), rand(dt, (K, N))
    y = run(prog, a, b, out_shape=(M, N), out_dt="FP32")
    torch.testing.assert_close(y, 2 * (a.float() @ b.float()), rtol=1e-4, atol=1e-4)


def test_tensor_level_ops_lower_through_incore():
    @pl.jit
    def f(x: pl.Tensor, z: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.sub(x, z)
            e = pl.exp(s)
            m = pl.row_max(e)
            y[:] = pl.row_expand_div(e, m)
        return y

    x, z, y = torch.randn(M, N), torch.randn(M, N), torch.empty(M, N)
    f(x, z, y)
    e = torch.exp(x - z)
    torch.testing.assert_close(y, e / e.amax(-1, keepdim=True))


def test_tensor_matmul_lowers_to_cube_pipeline():
    @pl.jit
    def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul(a, b)
        return c

    a, b = torch.randn(32, 16, dtype=torch.float16), torch.randn(16, 32, dtype=torch.float16)
    c = torch.empty(32, 32)
    mm(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    text = mm.compile(a, b, c).program.as_python()
    assert "target_memory=pl.Mem.Left" in text and "target_memory=pl.Mem.Right" in text


# ---- type inference ------------------------------------------------------------------------------

def infer(body: str, params: str) -> str:
    text = f"""
import pypto.language as pl

@pl.function
def f({params}):
{chr(10).join('    ' + line for line in body.strip().splitlines())}
    return r
"""
    fn = pl.parse(text)
    return ir.python_print(fn.body.stmts[-2].var.type)


@pytest.mark.parametrize("params,body,expected", [
    ("a: pl.Tensor[[4, 1], pl.FP16], b: pl.Tensor[[1, 8], pl.FP32]", "r = pl.add(a, b)",
     "pl.Tensor[[4, 8], pl.FP32]"),
    ("a: pl.Tensor[[4, 8], pl.INT32], b: pl.Tensor[[8], pl.INT8]", "r = pl.mul(a, b)",
     "pl.Tensor[[4, 8], pl.INT32]"),
    ("a: pl.Tensor[[4, 8], pl.FP16]", "r = pl.add(a, 1.0)", "pl.Tensor[[4, 8], pl.FP16]"),
    ("a: pl.Tensor[[4, 8], pl.FP32]", "r = pl.row_sum(a)", "pl.Tensor[[4, 1], pl.FP32]"),
    ("a: pl.Tensor[[4, 8], pl.FP32]", "r = pl.cast(a, pl.BF16)", "pl.Tensor[[4, 8], pl.BF16]"),
    ("a: pl.Tensor[[4, 8], pl.FP16], b: pl.Tensor[[8, 2], pl.FP16]", "r = pl.matmul(a, b)",
     "pl.Tensor[[4, 2], pl.FP32]"),
    ("a: pl.Tensor[[64, 64], pl.FP16]", "r = pl.load(a, [0, 32], [16, 32])",
     "pl.Tile[[16, 32], pl.FP16, pl.Mem.Vec]"),
    ("a: pl.Tensor[[64, 64], pl.FP16]", "t = pl.load(a, [0, 0], [16, 32])\nr = pl.adds(t, 3.0)",
     "pl.Tile[[16, 32], pl.FP16, pl.Mem.Vec]"),
    ("a: pl.Tensor[[64, 64], pl.FP16]",
     "t = pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)\nr = pl.move(t, target_memory=pl.Mem.Left)",
     "pl.Tile[[16, 32], pl.FP16, pl.Mem.Left]"),
    ("a: pl.Tensor[[64, 64], pl.FP32]", "r = pl.create_tile([8, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)",
     "pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec]"),
])
def test_type_inference(params, body, expected):
    assert infer(body, params) == expected


@pytest.mark.parametrize("params,body,message", [
    ("a: pl.Tensor[[4, 3], pl.FP32], b: pl.Tensor[[4, 8], pl.FP32]", "r = pl.add(a, b)",
     "tensor.add: shapes [4, 3] and [4, 8] cannot be broadcast together"),
    ("a: pl.Tensor[[64, 64], pl.FP32]", "t = pl.load(a, [0, 0], [16, 16])\nu = pl.load(a, [0, 0], [16, 32])\nr = pl.add(t, u)",
     "tile.add: arguments 'lhs' and 'rhs' must have the same shape, got [16, 16] and [16, 32]"),
    ("a: pl.Tensor[[64, 64], pl.FP16]", "t = pl.load(a, [0, 0], [16, 16])\nr = pl.tile.matmul(t, t)",
     "tile.matmul: argument 'lhs' must be in memory space Left or Mat, but it is in Vec"),
    ("a: pl.Tensor[[64, 64], pl.FP32]",
     "t = pl.load(a, [0, 0], [16, 16])\ns = pl.create_tile([16, 8], dtype=pl.FP32, target_memory=pl.Mem.Vec)\nr = pl.row_max(t, s)",
     "tile.row_max: argument 'tmp_tile' must have the input's shape [16, 16], got [16, 8]"),
    ("a: pl.Tensor[[64, 64], pl.FP32]", "r = pl.tile.exp(a)", "tile.exp: argument 'x' must be a Tile, got Tensor"),
    ("a: pl.Tensor[[64, 64], pl.FP32]", "r = pl.load(a, [0, 60], [16, 16])",
     "tile.load: region at offset 60 of size 16 exceeds dimension 64"),
])
def test_type_errors_name_op_and_argument(params, body, message):
    with pytest.raises(ParserTypeError) as ei:
        infer(body, params)
    assert message in ei.value.message


def test_matmul_acc_with_transposed_operands():
    K = 32
    body = (f"a1 = pl.load(a, [0, 0], [{K}, {M}], target_memory=pl.Mem.Mat)\n"
            f"b1 = pl.load(b, [0, 0], [{N}, {K}], target_memory=pl.Mem.Mat)\n"
            "a0 = pl.move(a1, target_memory=pl.Mem.Left)\n"
            "b0 = pl.move(b1, target_memory=pl.Mem.Right)\n"
            "c0 = pl.matmul(a0, b0, a_trans=True, b_trans=True)\n"
            "r = pl.matmul_acc(c0, a0, b0, a_trans=True, b_trans=True)")
    prog = program(body, [("a", "FP16", (K, M)), ("b", "FP16", (N, K))], ("y", "FP32", (M, N)))
    assert "pl.tile.matmul_acc(c0, a0, b0, a_trans=True, b_trans=True)" in prog.as_python()
    a, b = rand("FP16", (K, M)), rand("FP16", (N, K))
    y = run(prog, a, b, out_shape=(M, N), out_dt="FP32")
    torch.testing.assert_close(y, 2 * (a.float().T @ b.float().T), rtol=1e-4, atol=1e-4)
