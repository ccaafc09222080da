"""Collectives on the multi-rank runtime (one OS process per rank, windows in shared memory): the
builtin host-collective chip programs (`pypto.runtime.dist.builtin`, lowered by LowerCollectives)
dispatched on every rank by a hand-written host driver, checked against torch at P = 2, 3, 4, with
the signal back at zero after several calls (SPEC §8 "Collectives")."""

from __future__ import annotations

import math

import pytest
import torch

from pypto import ir
from pypto.core.dtype import FP32, INDEX, INT32
from pypto.core.enums import ReduceOp
from pypto.ir.expr import ConstInt, Var
from pypto.ir.types import DistributedTensorType, ScalarType
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig
from pypto.runtime.dist import DistributedBuild, DistributedWorker, HostParam, run
from pypto.runtime.dist.builtin import builtin_program, signal_shape
from pypto.runtime.dist.comm import CommEvent

SHAPE = [40, 300]    # 47 KiB FP32: mesh tiles of 19, 19 and 2 rows; ring tiles of 5 rows dealt to the segments
NR = Var("NR", ScalarType(INDEX))


def _dims(shape):
    return tuple(NR if d == "NR" else ConstInt(d, INDEX) for d in shape)


@pytest.fixture(scope="module")
def programs():
    x = DistributedTensorType(_dims(SHAPE), FP32)
    progs = {f"{mode}_{op.name}": builtin_program("allreduce", [x], {"mode": mode, "op": op})
             for mode in ("mesh", "ring") for op in (ReduceOp.Sum, ReduceOp.Max)}
    progs["allgather"] = builtin_program("allgather", [DistributedTensorType(_dims([4, 64]), FP32),
                                                       DistributedTensorType(_dims(["NR", 4, 64]), FP32),
                                                       DistributedTensorType(_dims(["NR", 1]), INT32)], {})
    return {name: ir.compile(p, dump_passes=False, skip_ptoas=True, diagnostic_phase="none")
            for name, p in progs.items()}


def _cfg(p: int) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p))))


def _window(rt, shape, dtype):
    nbytes = math.prod(shape) * 4
    return rt.window(rt.alloc_window_buffer(nbytes), list(shape), dtype)


def allreduce_host(program: str, mode: str, calls: int):
    """A host driver: each rank's window gets inp[r], then `calls` allreduces on one signal."""
    def host(rt, inp, out, sig_out):
        p = rt.world_size()
        data = _window(rt, SHAPE, "FP32")
        sig = _window(rt, signal_shape("allreduce", {"mode": mode}, p), "INT32")
        for r in range(p):
            data.on_rank(r).copy_(inp[r])                 # test only: fill each rank's window copy
        for _ in range(calls):
            for r in range(p):
                rt.dispatch(program, r, [data, sig])
        rt.sync()
        for r in range(p):
            out[r].copy_(data.on_rank(r))
            sig_out[r] = int(sig.on_rank(r).abs().sum())
        return out
    return host


PARAMS = [HostParam("inp", "In", None), HostParam("out", "Out", None), HostParam("sig_out", "Out", None)]


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_allreduce_on_rank_processes(programs, mode: str, p: int) -> None:
    inp, out, sig = torch.rand(p, *SHAPE), torch.zeros(p, *SHAPE), torch.full((p,), -1, dtype=torch.int64)
    build = DistributedBuild("ar", allreduce_host(f"{mode}_Sum", mode, 1), PARAMS, programs)
    run(build, (inp, out, sig), _cfg(p))
    for r in range(p):
        torch.testing.assert_close(out[r], inp.sum(0), rtol=1e-5, atol=1e-5, msg=lambda m, r=r: f"rank {r}: {m}")
        assert torch.equal(out[r], out[0])
    assert sig.tolist() == [0] * p, "the signal is not back to zero"


@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_one_signal_serves_repeated_allreduces(programs, mode: str) -> None:
    p = 3
    inp, out, sig = torch.rand(p, *SHAPE), torch.zeros(p, *SHAPE), torch.full((p,), -1, dtype=torch.int64)
    run(DistributedBuild("ar", allreduce_host(f"{mode}_Max", mode, 3), PARAMS, programs), (inp, out, sig), _cfg(p))
    for r in range(p):
        assert torch.equal(out[r], inp.amax(0))
    assert sig.tolist() == [0] * p


def test_allgather_on_rank_processes(programs) -> None:
    p = 4

    def host(rt, inp, out, sig_out):
        local = _window(rt, [4, 64], "FP32")
        target = _window(rt, [p, 4, 64], "FP32")
        sig = _window(rt, [p, 1], "INT32")
        for r in range(p):
            local.on_rank(r).copy_(inp[r])
        for r in range(p):
            rt.dispatch("allgather", r, [local, target, sig])
        rt.sync()
        for r in range(p):
            out[r].copy_(target.on_rank(r))
            sig_out[r] = int(sig.on_rank(r).abs().sum())
        return out

    inp, out, sig = torch.randn(p, 4, 64), torch.zeros(p, p, 4, 64), torch.full((p,), -1, dtype=torch.int64)
    run(DistributedBuild("ag", host, PARAMS, programs), (inp, out, sig), _cfg(p))
    for r in range(p):
        assert torch.equal(out[r], inp)
    assert sig.tolist() == [0] * p


@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_simulated_time_is_deterministic(programs, mode: str) -> None:
    """The same program run several times gives the same simulated cycles and the same event times
    on every rank, whatever the wall-clock interleaving of the rank processes (a fast peer's notify
    for the next rendezvous step must not change when the previous wait completes)."""
    p = 4
    inp, out, sig = (torch.rand(p, *SHAPE).share_memory_(), torch.zeros(p, *SHAPE).share_memory_(),
                     torch.full((p,), -1, dtype=torch.int64).share_memory_())
    build = DistributedBuild("ar", allreduce_host(f"{mode}_Sum", mode, 3), PARAMS, programs)
    seen = []
    with DistributedWorker(build, _cfg(p)) as rt:
        for _ in range(4):
            rt(inp, out, sig)
            events = sorted((rec.rank, rec.end, i, e.kind, e.peer, e.time, e.arrival)
                            for rec in rt.last_records for i, e in enumerate(rec.events) if isinstance(e, CommEvent))
            tasks = sorted((rec.rank, rec.end, [(t.start, t.end, t.stall) for t in rec.tasks])
                           for rec in rt.last_records)
            seen.append((rt.last_cycles, tasks, events))
            assert sig.tolist() == [0] * p
    assert seen[0][0] > 0 and sum(e[3] == "wait" for e in seen[0][2]) >= 3 * p * (p - 1)
    for run_ in seen[1:]:
        assert run_[0] == seen[0][0]
        assert run_[1] == seen[0][1]
        assert run_[2] == seen[0][2]
