"""Compare/select, reductions and broadcasts on the simulator against torch."""

import pytest
import torch
from op_harness import FLOATS, TORCH, close, rand, run_kernel

M, N = 16, 32
SHAPE = (M, N)
CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


@pytest.mark.parametrize("dt", ["FP32", "FP16", "BF16", "INT32", "INT8"])
@pytest.mark.parametrize("cmp_type", sorted(CMP))
def test_cmp_cmps_and_sel(cmp_type, dt):
    x = rand(dt, SHAPE, low=-3, high=3)
    z = rand(dt, SHAPE, low=-3, high=3)
    z[::3] = x[::3]  # some equal elements
    body = f"""
    a = pl.load(x, [0, 0], [{M}, {N}])
    b = pl.load(z, [0, 0], [{M}, {N}])
    m_t = pl.cmp(a, b, "{cmp_type}")
    ms_t = pl.cmps(a, 1, cmp_type="{cmp_type}")
    y_t = pl.sel(m_t, a, b)
    """
    outs = [("m", "UINT8", SHAPE), ("ms", "UINT8", SHAPE), ("y", dt, SHAPE)]
    m, ms, y = run_kernel(body, [("x", dt, SHAPE), ("z", dt, SHAPE)], outs, x, z)
    want = CMP[cmp_type](x, z)
    assert torch.equal(m, want.to(torch.uint8))
    assert torch.equal(ms, CMP[cmp_type](x, torch.tensor(1, dtype=x.dtype)).to(torch.uint8))
    assert torch.equal(y, torch.where(want, x, z))


@pytest.mark.parametrize("mode,pick", [(1, 0), (0, 1)])
def test_sels_selects_a_whole_operand(mode, pick):
    x, z = rand("FP32", SHAPE), rand("FP32", SHAPE)
    body = f"a = pl.load(x, [0, 0], [{M}, {N}])\nb = pl.load(z, [0, 0], [{M}, {N}])\ny_t = pl.sels(a, b, sm)"
    (y,) = run_kernel(body, [("x", "FP32", SHAPE), ("z", "FP32", SHAPE), ("sm", "INT32", None)],
                      [("y", "FP32", SHAPE)], x, z, mode)
    assert torch.equal(y, (x, z)[pick])


REDUCE = {
    "sum": lambda x, d: x.sum(d, keepdim=True, dtype=x.dtype if not x.is_floating_point() else torch.float32),
    "max": lambda x, d: x.amax(d, keepdim=True), "min": lambda x, d: x.amin(d, keepdim=True),
    "prod": lambda x, d: x.prod(d, keepdim=True, dtype=x.dtype if not x.is_floating_point() else torch.float32),
    "argmax": lambda x, d: x.argmax(d, keepdim=True).to(torch.int32),
    "argmin": lambda x, d: x.argmin(d, keepdim=True).to(torch.int32),
}
RED_CASES = [(side, op, dt) for side in ("row", "col") for op in REDUCE for dt in FLOATS + ("INT32",)]


@pytest.mark.parametrize("side,op,dt", RED_CASES)
def test_reductions(side, op, dt):
    dim = -1 if side == "row" else -2
    out = (M, 1) if side == "row" else (1, N)
    if op == "prod":
        x = (torch.rand(SHAPE) * 0.4 + 0.8).to(TORCH[dt]) if dt != "INT32" else torch.randint(-2, 3, SHAPE,
                                                                                             dtype=torch.int32)
    else:
        x = rand(dt, SHAPE)
    odt = "INT32" if op.startswith("arg") else dt
    if op.startswith("arg"):  # distinct values: the position of the extreme is unambiguous
        x = torch.randperm(M * N).reshape(SHAPE).to(TORCH[dt]) if dt != "BF16" else rand("FP32", SHAPE).to(torch.bfloat16)
    body = f"""
    t = pl.load(x, [0, 0], [{M}, {N}])
    tmp = pl.create_tile([{M}, {N}], dtype=pl.{dt}, target_memory=pl.Mem.Vec)
    y_t = pl.{side}_{op}(t, tmp)
    """
    (y,) = run_kernel(body, [("x", dt, SHAPE)], [("y", odt, out)], x)
    want = REDUCE[op](x, dim)
    if op.startswith("arg"):
        got_vals = torch.gather(x, dim, y.long())
        assert torch.equal(got_vals, torch.gather(x, dim, want.long()))  # same extreme (ties allowed in bf16)
    else:
        scale = {"sum": 4.0, "prod": 8.0}.get(op, 1.0)  # 32 roundings to the storage dtype
        close(y.float(), want.float(), dt if dt != "FP16" else "BF16", scale=scale)


EXPAND = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "max": torch.maximum,
          "min": torch.minimum, "expdif": lambda x, v: torch.exp(x - v)}


@pytest.mark.parametrize("dt", ["FP32", "FP16"])
@pytest.mark.parametrize("side", ["row", "col"])
def test_expand_family(side, dt):
    vshape = (M, 1) if side == "row" else (1, N)
    x, v = rand(dt, SHAPE), rand(dt, vshape, positive=True)
    lines = [f"t = pl.load(x, [0, 0], [{M}, {N}])", f"u = pl.load(w, [0, 0], [{vshape[0]}, {vshape[1]}])",
             f"e_t = pl.{side}_expand(t, u)"]
    lines += [f"{op}_t = pl.{side}_expand_{op}(t, u)" for op in EXPAND]
    outs = [("e", dt, SHAPE)] + [(op, dt, SHAPE) for op in EXPAND]
    got = run_kernel("\n".join(lines), [("x", dt, SHAPE), ("w", dt, vshape)], outs, x, v)
    assert torch.equal(got[0], v.expand(SHAPE))
    for g, op in zip(got[1:], EXPAND):
        close(g, EXPAND[op](x.float(), v.float()), dt, scale=2.0)


@pytest.mark.parametrize("dt,value", [("FP32", "2.5"), ("BF16", "-1.0"), ("INT32", "7")])
def test_expands_fills(dt, value):
    x = rand(dt, SHAPE)
    (y,) = run_kernel(f"t = pl.load(x, [0, 0], [{M}, {N}])\ny_t = pl.expands(t, {value})", [("x", dt, SHAPE)],
                      [("y", dt, SHAPE)], x)
    assert torch.equal(y, torch.full(SHAPE, float(value)).to(TORCH[dt]))


def test_tensor_level_reductions_and_compares_lower():
    import pypto.language as pl

    @pl.jit
    def f(x: pl.Tensor, s: pl.Out[pl.Tensor], p: pl.Out[pl.Tensor], m: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s[:] = pl.col_sum(x)
            p[:] = pl.row_argmax(x)
            m[:] = pl.cmps(x, 0.0, "gt")
        return s, p, m

    x = torch.randn(M, N)
    s, p, m = torch.empty(1, N), torch.empty(M, 1, dtype=torch.int32), torch.empty(M, N, dtype=torch.uint8)
    f(x, s, p, m)
    torch.testing.assert_close(s, x.sum(0, keepdim=True))
    assert torch.equal(p, x.argmax(-1, keepdim=True).to(torch.int32))
    assert torch.equal(m, (x > 0).to(torch.uint8))
