"""Every (src, dst) dtype pair, cast in a kernel on both simulated backends (SPEC §2.1, §5): either
the right numbers or a clear, located error naming both dtypes and the backend.

A source type torch cannot hold on the host (INT4, UINT4, HF4, HF8) is made in the kernel by a
cast from a host carrier type (FP16 / FP32); a destination likewise is cast back to one. The
values cast are the ones both types hold exactly, so every legal chain of native conversions must
return them unchanged (the chains' rounding is tested in tests/ops/test_cast_saturation.py).
"""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, cast_chain
from pypto.core import dtype as D
from pypto.core import packed
from pypto.core.errors import CompileError, PyPTOError, RuntimeSimError

CANDIDATES = [0, 1, 2, 3, 4, 6, -1, -2, -6, 0.5, 1.5, -0.5, 100, -100, 1000, 40000]
PAIRS = [(s, d) for s in D.ALL_DTYPES for d in D.ALL_DTYPES if s is not d]
SHAPE = (8, 32)


def holds(t, v):
    """Whether dtype `t` holds value `v` exactly."""
    if t.is_bool():
        return v in (0, 1)
    if t.int_range() is not None:
        lo, hi = t.int_range()
        return float(v).is_integer() and lo <= v <= hi
    if t is D.FP4:
        return v in packed.FP4_VALUES
    tdt = t.to_torch(strict=False)
    return tdt is not None and float(torch.tensor(float(v), dtype=torch.float64).to(tdt).double()) == v


def carrier(t):
    """The host dtype a kernel reads / writes for a value of dtype `t`."""
    if t.to_torch(strict=False) is not None and t is not D.TASK_ID:
        return t
    return D.FP16 if t.value_torch() is not None else D.FP32


def host_tensor(values, t):
    v = torch.tensor(values, dtype=torch.float64).reshape(SHAPE)
    if t is D.FP4:
        return packed.encode(v, t).view(t.to_torch())
    return (v != 0) if t.is_bool() else v.to(t.to_torch())


def from_host(x, t):
    return packed.decode(x, t).double() if t is D.FP4 else x.double()


def program(src, dst):
    hs, hd = carrier(src), carrier(dst)
    lines = [f"t = pl.load(x, [0, 0], [{SHAPE[0]}, {SHAPE[1]}])",
             f"s = pl.cast(t, pl.{src.name})" if hs is not src else "s = t",
             f"r = pl.cast(s, pl.{dst.name})",
             f"o = pl.cast(r, pl.{hd.name})" if hd is not dst else "o = r",
             "y = pl.store(o, [0, 0], y)", "return y"]
    body = "\n        ".join(lines)
    ty = lambda t: f"pl.Tensor[[{SHAPE[0]}, {SHAPE[1]}], pl.{t.name}]"  # noqa: E731
    return f"""
import pypto.language as pl

@pl.program
class Cast:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: {ty(hs)}, y: pl.Out[{ty(hd)}]) -> {ty(hd)}:
        {body}
"""


def expected_failure(backend, src, dst):
    """(error class, message fragment) the pair must fail with, or None when it must run."""
    if D.TASK_ID in (src, dst):
        return PyPTOError, "TASK_ID"
    hs, hd = carrier(src), carrier(dst)
    for a, b in ((hs, src), (src, dst), (dst, hd)):
        if a is not b and cast_chain(backend.name, a, b) is None:
            return CompileError, f"{backend.name} cannot convert {a.name} to {b.name}: "
    if {src, dst} & {D.HF4, D.HF8}:
        return RuntimeSimError, "which the simulator cannot hold"
    return None


@pytest.mark.parametrize("backend", list(BackendType), ids=lambda b: b.name)
@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_cast_pair(backend, src, dst):
    fail = expected_failure(backend, src, dst)
    hs, hd = carrier(src), carrier(dst)
    values = [v for v in CANDIDATES if holds(src, v) and holds(dst, v) and holds(hs, v) and holds(hd, v)]
    assert fail is not None or values, (src, dst)
    data = [values[i % len(values)] for i in range(SHAPE[0] * SHAPE[1])] if values else [0] * 256
    x = host_tensor(data, hs)
    y = host_tensor([0] * 256, hd)
    if fail is not None:
        cls, msg = fail
        with pytest.raises(cls, match=None) as ei:
            ir.compile(pl.parse(program(src, dst)), dump_passes=False, skip_ptoas=True,
                       backend_type=backend)(x, y)
        assert msg in str(ei.value)
        assert ":" in str(ei.value).splitlines()[0] and "pl.cast" in str(ei.value)   # located
        return
    compiled = ir.compile(pl.parse(program(src, dst)), dump_passes=False, skip_ptoas=True, backend_type=backend)
    compiled(x, y)
    want = torch.tensor(data, dtype=torch.float64).reshape(SHAPE)
    assert torch.equal(from_host(y, hd), want)
