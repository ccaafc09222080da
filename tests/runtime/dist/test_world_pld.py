"""`pld` kernels on the multi-rank runtime: notify / wait / remote_load / remote_store / put / get
across rank processes at P = 2, 3, 4, simulated time across ranks (a wait stalls until the notify
arrives), and the deadlock report of a real kernel (SPEC §8; issue 10 items 3-5)."""

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig
from pypto.runtime.dist import DistributedBuild, DistributedDeadlockError, DistributedWorker, HostParam, run
from pypto.runtime.sim.cost_model import const

N = 256


@pl.jit.incore
def shift_store(inp: pl.Tensor, data: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.tensor.remote_store(inp, data, (me + 1) % n, [0, 0])
    pld.notify(sig, (me + 1) % n, [0, 0], 1)
    pld.wait(sig, [0, 0], 1)
    out = pld.get(out, me, data)
    return out


@pl.jit
def ring_store(inp: pl.Tensor, out: pl.Out[pl.Tensor], data: pl.InOut[pld.DistributedTensor],
               sig: pld.DistributedTensor):
    out = shift_store(inp, data, sig, out)
    return out


@pl.jit.incore
def pull_load(data: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.notify(sig, (me + 1) % n, [0, 0], 1)          # "my data is ready" to the rank that reads it
    pld.wait(sig, [0, 0], 1)
    t = pld.remote_load(data, (me + n - 1) % n, [0, 0], [1, N])
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def ring_load(out: pl.Out[pl.Tensor], data: pld.DistributedTensor, sig: pld.DistributedTensor):
    out = pull_load(data, sig, out)
    return out


@pl.jit.incore
def sum_at_root(inp: pl.Tensor, acc: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(acc)
    n = pld.nranks(ctx)
    pld.put(acc, 0, inp, atomic=pld.AtomicType.Add)       # every rank accumulates into rank 0's copy
    for p in pl.range(n):
        pld.notify(sig, p, [0, 0], 1)
    pld.wait(sig, [0, 0], n, cmp=pld.WaitCmp.Ge)         # a barrier: everyone's put has landed
    out = pld.get(out, 0, acc)
    return out


@pl.jit
def all_sum(inp: pl.Tensor, out: pl.Out[pl.Tensor], acc: pld.DistributedTensor, sig: pld.DistributedTensor):
    out = sum_at_root(inp, acc, sig, out)
    return out


@pl.jit.incore
def wait_for_two(sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(sig)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.notify(sig, (me + 1) % n, [0, 0], 1)
    pld.wait(sig, [0, 0], 2)                               # the planted bug: only one notify comes
    out = pld.get(out, me, sig)
    return out


@pl.jit
def stuck(out: pl.Out[pl.Tensor], sig: pld.DistributedTensor):
    out = wait_for_two(sig, out)
    return out


WAIT_LINE = next(i for i, line in enumerate(open(__file__, encoding="utf-8"), 1) if "the planted bug" in line)


def _compile(jit_fn, *args):
    return ir.compile(jit_fn.specialize(*args), dump_passes=False, skip_ptoas=True)


@pytest.fixture(scope="module")
def programs():
    x, i = torch.zeros(1, N), torch.zeros(1, 1, dtype=torch.int32)
    return {"ring_store": _compile(ring_store, x, x, x, i), "ring_load": _compile(ring_load, x, x, i),
            "stuck": _compile(stuck, i, i), "all_sum": _compile(all_sum, x, x, x, i)}


def _windows(rt):
    data = rt.window(rt.alloc_window_buffer(N * 4), [1, N], "FP32")
    sig = rt.window(rt.alloc_window_buffer(4), [1, 1], "INT32")
    return data, sig


def store_host(rt, inp, out):
    data, sig = _windows(rt)
    for r in range(rt.world_size()):
        rt.dispatch("ring_store", r, [inp[r], out[r], data, sig])
    rt.sync()
    return out


def load_host(rt, inp, out):
    data, sig = _windows(rt)
    for r in range(rt.world_size()):
        data.on_rank(r).copy_(inp[r])                    # test only: fill each rank's window copy
    for r in range(rt.world_size()):
        rt.dispatch("ring_load", r, [out[r], data, sig])
    rt.sync()
    return out


def sum_host(rt, inp, out):
    acc, sig = _windows(rt)
    for r in range(rt.world_size()):
        rt.dispatch("all_sum", r, [inp[r], out[r], acc, sig])
    rt.sync()
    return out


PARAMS = [HostParam("inp", "In", None), HostParam("out", "Out", None)]


def _cfg(p, **kw):
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p)), **kw))


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("host", [store_host, load_host], ids=["remote_store+get", "remote_load"])
def test_ring_shift_across_rank_processes(programs, p: int, host) -> None:
    inp, out = torch.randn(p, 1, N), torch.zeros(p, 1, N)
    run(DistributedBuild("ring", host, PARAMS, programs), (inp, out), _cfg(p))
    for r in range(p):
        assert torch.equal(out[r], inp[(r - 1) % p]), f"rank {r}"


@pytest.mark.parametrize("p", [2, 3, 4])
def test_put_accumulate_barrier_get(programs, p: int) -> None:
    inp, out = torch.randn(p, 1, N), torch.zeros(p, 1, N)
    run(DistributedBuild("sum", sum_host, PARAMS, programs), (inp, out), _cfg(p))
    for r in range(p):
        torch.testing.assert_close(out[r], inp.sum(0), rtol=1e-5, atol=1e-5)


def test_waits_complete_when_the_notify_arrives(programs) -> None:
    p = 3
    inp, out = torch.randn(p, 1, N).share_memory_(), torch.zeros(p, 1, N).share_memory_()
    with DistributedWorker(DistributedBuild("ring", store_host, PARAMS, programs), _cfg(p)) as rt:
        rt(inp, out)
        recs = {r.rank: r for r in rt.last_records}
        trace = rt.merged_swimlane()["traceEvents"]
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace if e["ph"] == "f"}
    assert len(starts) == p and starts.keys() == ends.keys()     # an arrow from each notify to its wait
    assert all(ends[i]["pid"] == (starts[i]["pid"] + 1) % p and ends[i]["ts"] >= starts[i]["ts"] for i in starts)
    lat = int(const("link_latency"))
    notifies = {e.eid: e for r in recs.values() for e in r.events if e.kind == "notify"}
    waits = [e for r in recs.values() for e in r.events if e.kind == "wait"]
    assert len(notifies) == p and len(waits) == p
    for w in waits:
        n = notifies[w.cause]                            # the notify that released it
        assert n.peer == w.rank == (n.rank + 1) % p
        assert n.arrival >= n.time + lat                 # after the data it announces, too
        assert w.arrival == max(w.time, n.arrival)
        assert w.kernel.startswith("shift_store") and w.core
    writes = {r: [e for e in recs[r].events if e.kind == "remote_write"] for r in recs}
    for r in recs:
        (wr,) = writes[r]
        assert wr.nbytes == N * 4 and wr.arrival == wr.time + lat + -(-N * 4 // int(const("link_bytes_per_cycle")))
    # each rank's task lasted at least until its wait released
    for r, rec in recs.items():
        (task,) = rec.tasks
        (w,) = [e for e in rec.events if e.kind == "wait"]
        assert task.end >= w.arrival


@pl.jit
def busy(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(x, 2.0), 1.0)
    return out


def skew_host(rt, inp, out, scratch):
    """Rank 0 runs a busy program first, so its notify reaches rank 1 late: rank 1's wait stalls."""
    data, sig = _windows(rt)
    rt.dispatch("busy", 0, [scratch, scratch])
    for r in range(rt.world_size()):
        rt.dispatch("ring_store", r, [inp[r], out[r], data, sig])
    rt.sync()


def test_a_late_notify_stalls_the_waiting_task(programs) -> None:
    p = 2
    inp, out, scratch = torch.randn(p, 1, N), torch.zeros(p, 1, N), torch.zeros(512, 512)
    progs = dict(programs, busy=busy.compile(scratch, scratch))
    build = DistributedBuild("skew", skew_host, [*PARAMS, HostParam("scratch", "In", None)], progs)
    with DistributedWorker(build, _cfg(p), _stage_all=True) as rt:
        rt(inp, out, scratch)
        recs = rt.last_records
    torch.testing.assert_close(out[1], inp[0])
    busy_end = next(r.end for r in recs if r.program == "busy")
    (ring1,) = [r for r in recs if r.rank == 1]
    (w,) = [e for e in ring1.events if e.kind == "wait"]
    (task,) = ring1.tasks
    assert w.arrival > busy_end > w.time                   # released by rank 0's late notify
    assert task.stall >= w.arrival - w.time                # the task grew by the stall
    assert task.end >= w.arrival


def test_deadlock_report_of_a_real_kernel(programs) -> None:
    p = 3
    out = torch.zeros(p, 1, 1, dtype=torch.int32)

    def host(rt, out):
        sig = rt.window(rt.alloc_window_buffer(4), [1, 1], "INT32")
        for r in range(rt.world_size()):
            rt.dispatch("stuck", r, [out[r], sig])
        rt.sync()

    build = DistributedBuild("stuck_host", host, [HostParam("out", "Out", None)], programs)
    with pytest.raises(DistributedDeadlockError) as ei:
        run(build, (out,), _cfg(p, deadlock_timeout=0.3))
    e = ei.value
    assert [b.rank for b in e.blocked] == [0, 1, 2] and e.idle == []
    msg = str(e)
    for b in e.blocked:
        assert b.kernel.startswith("wait_for_two") and b.signal == "sig" and b.cell == (0, 0)
        assert (b.expected, b.cmp, b.current, b.senders) == (2, "eq", 1, [(b.rank - 1) % p])
        assert b.span is not None and b.span.begin_line == WAIT_LINE
        assert f"rank {b.rank}: kernel '{b.kernel}' (task 0) at {b.span.filename}:{WAIT_LINE} waits for " \
               f"signal 'sig'[0, 0] == 2, current value 1; in this call it was notified by rank {(b.rank - 1) % p}" in msg
    assert "no notify reached this cell from rank 1 in this call" in msg          # rank 0's cell: only rank 2 notified it
    assert torch.equal(out, torch.zeros_like(out))
