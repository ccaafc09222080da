"""Elementwise ops on the simulator against torch: binary ops with their scalar forms, unary math,
activations and bitwise ops, over the dtypes each supports."""

import pytest
import torch
from op_harness import FLOATS, close, rand, run_kernel

M, N = 16, 32
SHAPE = (M, N)


def trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc") if not a.is_floating_point() else a / b


BINARY = {  # op: (torch reference, dtypes, needs a non-zero divisor)
    "add": (torch.add, FLOATS + ("INT32", "INT8"), False),
    "sub": (torch.sub, FLOATS + ("INT32", "INT8"), False),
    "mul": (torch.mul, FLOATS + ("INT32", "INT16"), False),
    "div": (trunc_div, FLOATS + ("INT32",), True),
    "maximum": (torch.maximum, FLOATS + ("INT32", "INT8"), False),
    "minimum": (torch.minimum, FLOATS + ("INT32", "INT8"), False),
    "fmod": (torch.fmod, FLOATS + ("INT32",), True),
    "rem": (torch.remainder, FLOATS + ("INT32",), True),
}
BINARY_CASES = [(op, dt) for op, (_, dts, _) in BINARY.items() for dt in dts]


@pytest.mark.parametrize("op,dt", BINARY_CASES)
def test_binary_and_scalar_forms(op, dt):
    ref, _, nonzero = BINARY[op]
    small = dt in ("INT8", "INT16")
    x = rand(dt, SHAPE, low=-10 if small else -50, high=10 if small else 50)
    z = rand(dt, SHAPE, positive=nonzero, low=-10 if small else -50, high=10 if small else 50)
    if nonzero and dt == "INT32":
        z = z * torch.where(torch.rand(SHAPE) < 0.5, -1, 1).to(z.dtype)  # negative divisors too
    s = "3" if not torch.empty(0, dtype=x.dtype).is_floating_point() else "1.5"
    body = f"""
    a = pl.load(x, [0, 0], [{M}, {N}])
    b = pl.load(z, [0, 0], [{M}, {N}])
    y1_t = pl.{op}(a, b)
    y2_t = pl.{op}(a, {s})
    """
    y1, y2 = run_kernel(body, [("x", dt, SHAPE), ("z", dt, SHAPE)], [("y1", dt, SHAPE), ("y2", dt, SHAPE)], x, z)
    close(y1, ref(x, z), dt)
    sv = torch.tensor(float(s), dtype=x.dtype) if x.is_floating_point() else torch.tensor(int(s), dtype=x.dtype)
    close(y2, ref(x, sv), dt)  # the scalar form keeps the tile dtype


def test_integer_division_by_zero_is_reported_at_the_op():
    x, z = torch.ones(SHAPE, dtype=torch.int32), torch.zeros(SHAPE, dtype=torch.int32)
    from pypto.core.errors import RuntimeSimError

    with pytest.raises(RuntimeSimError, match="tile.div failed.*division by zero"):
        run_kernel("a = pl.load(x, [0, 0], [16, 32])\nb = pl.load(z, [0, 0], [16, 32])\ny_t = pl.div(a, b)",
                   [("x", "INT32", SHAPE), ("z", "INT32", SHAPE)], [("y", "INT32", SHAPE)], x, z)


UNARY = {  # op: (torch reference, input kind)
    "exp": (torch.exp, "any"), "log": (torch.log, "positive"), "sqrt": (torch.sqrt, "positive"),
    "rsqrt": (torch.rsqrt, "positive"), "recip": (torch.reciprocal, "positive"), "sin": (torch.sin, "any"),
    "cos": (torch.cos, "any"), "neg": (torch.neg, "any"), "abs": (torch.abs, "any"), "relu": (torch.relu, "any"),
}
UNARY_CASES = [(op, dt) for op in UNARY for dt in FLOATS] + [(op, "INT32") for op in ("neg", "abs", "relu")]


@pytest.mark.parametrize("op,dt", UNARY_CASES)
def test_unary(op, dt):
    ref, kind = UNARY[op]
    x = rand(dt, SHAPE, positive=kind == "positive")
    (y,) = run_kernel(f"t = pl.load(x, [0, 0], [{M}, {N}])\ny_t = pl.{op}(t)", [("x", dt, SHAPE)],
                      [("y", dt, SHAPE)], x)
    close(y, ref(x.float()), dt, scale=2.0)


@pytest.mark.parametrize("dt", FLOATS)
def test_lrelu_and_prelu(dt):
    x, slope = rand(dt, SHAPE), rand(dt, SHAPE, positive=True)
    body = f"""
    t = pl.load(x, [0, 0], [{M}, {N}])
    sl = pl.load(w, [0, 0], [{M}, {N}])
    y1_t = pl.lrelu(t, 0.125)
    y2_t = pl.prelu(t, sl)
    """
    y1, y2 = run_kernel(body, [("x", dt, SHAPE), ("w", dt, SHAPE)], [("y1", dt, SHAPE), ("y2", dt, SHAPE)], x, slope)
    close(y1, torch.nn.functional.leaky_relu(x.float(), 0.125), dt)
    close(y2, torch.where(x >= 0, x, x * slope), dt)


BITWISE = {"and_": torch.bitwise_and, "or_": torch.bitwise_or, "xor": torch.bitwise_xor,
           "shl": torch.bitwise_left_shift, "shr": torch.bitwise_right_shift}
SCALAR_FORM = {"and_": "ands", "or_": "ors", "xor": "xors", "shl": "shls", "shr": "shrs"}


@pytest.mark.parametrize("dt", ["INT32", "INT16", "INT8"])
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_and_shifts(op, dt):
    ref = BITWISE[op]
    x = rand(dt, SHAPE, low=-100, high=100)
    z = rand(dt, SHAPE, low=0, high=5) if op in ("shl", "shr") else rand(dt, SHAPE, low=-100, high=100)
    body = f"""
    a = pl.load(x, [0, 0], [{M}, {N}])
    b = pl.load(z, [0, 0], [{M}, {N}])
    y1_t = pl.{op}(a, b)
    y2_t = pl.tile.{SCALAR_FORM[op]}(a, 2)
    y3_t = pl.not_(a)
    """
    outs = [("y1", dt, SHAPE), ("y2", dt, SHAPE), ("y3", dt, SHAPE)]
    y1, y2, y3 = run_kernel(body, [("x", dt, SHAPE), ("z", dt, SHAPE)], outs, x, z)
    assert torch.equal(y1, ref(x, z))
    assert torch.equal(y2, ref(x, torch.tensor(2, dtype=x.dtype)))
    assert torch.equal(y3, torch.bitwise_not(x))


def test_tensor_level_ops_with_scalars_and_broadcast_lower_inside_incore():
    import pypto.language as pl

    @pl.jit
    def f(x: pl.Tensor, z: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.fmod(x, z)
            b = pl.mul(a, 2.0)
            c = pl.lrelu(b, 0.5)
            y[:] = pl.sin(c)
        return y

    x, z, y = torch.randn(M, N), torch.rand(M, N) + 0.5, torch.empty(M, N)
    f(x, z, y)
    torch.testing.assert_close(y, torch.sin(torch.nn.functional.leaky_relu(torch.fmod(x, z) * 2, 0.5)))
