"""Checks at the end of a distributed call (issue 10 item 5, `pypto.runtime.dist.checks`): credit signals
back to zero (only signals marked as credits: raw notify counters are not reset, SPEC §8), every rank ran
the same collectives, and a remote access outside a window fails at the op with its file and line."""

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.core.span import Span
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig
from pypto.runtime.dist import DistributedBuild, HostParam, run
from pypto.runtime.dist.checks import (
    CollectiveCall,
    DistributedCheckError,
    check_collectives,
    end_of_call,
    mark_credit,
    mark_credit_window,
    record_collective,
)
from pypto.runtime.dist.rank import WindowArg
from pypto.runtime.dist.world import World, call_on_ranks


@pl.jit.incore
def handshake(sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(sig)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.notify(sig, (me + 1) % n, [me, 0], 1)
    pld.wait(sig, [(me + n - 1) % n, 0], 1)
    pld.notify(sig, me, [(me + n - 1) % n, 0], -1)      # give the credit back: the cell is 0 again
    out = pld.get(out, me, sig)
    return out


@pl.jit
def clean(out: pl.Out[pl.Tensor], sig: pld.DistributedTensor):
    out = handshake(sig, out)
    return out


@pl.jit.incore
def handshake_leak(sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(sig)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.notify(sig, (me + 1) % n, [me, 0], 1)
    pld.wait(sig, [(me + n - 1) % n, 0], 1)              # the credit is never given back
    out = pld.get(out, me, sig)
    return out


@pl.jit
def leaky(out: pl.Out[pl.Tensor], sig: pld.DistributedTensor):
    out = handshake_leak(sig, out)
    return out


@pl.jit.incore
def store_to(inp: pl.Tensor, data: pld.DistributedTensor):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.tensor.remote_store(inp, data, (me + 1) % n, [0, 0])     # tag: remote store outside a window


@pl.jit
def unbound(inp: pl.Tensor, data: pld.DistributedTensor):
    store_to(inp, data)


def _compile(jit_fn, *args):
    return ir.compile(jit_fn.specialize(*args), dump_passes=False, skip_ptoas=True)


P = 3


@pytest.fixture(scope="module")
def programs():
    s, x = torch.zeros(P, 1, dtype=torch.int32), torch.zeros(1, 8)
    return {"clean": _compile(clean, s, s), "leaky": _compile(leaky, s, s), "unbound": _compile(unbound, x, x)}


def _cfg(p, **kw):
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p)), **kw))


def _host(program, mark):
    def host(rt, out):
        sig = rt.window(rt.alloc_window_buffer(P * 4), [P, 1], "INT32")
        if mark:
            mark_credit_window(rt, sig, "credits")
        for r in range(rt.world_size()):
            rt.dispatch(program, r, [out[r], sig])
        rt.sync()
        return out
    return host


def _run(programs, program, mark, p=P, **kw):
    out = torch.zeros(p, P, 1, dtype=torch.int32)
    run(DistributedBuild("h", _host(program, mark), [HostParam("out", "Out", None)], programs), (out,), _cfg(p, **kw))
    return out


@pytest.mark.parametrize("p", [2, 3])
def test_a_credit_signal_back_at_zero_passes(programs, p: int) -> None:
    out = _run(programs, "clean", True, p)
    assert torch.equal(out, torch.zeros_like(out))


@pytest.mark.parametrize("p", [2, 3])
def test_a_leaked_credit_names_the_signal_and_its_cells(programs, p: int) -> None:
    with pytest.raises(DistributedCheckError) as ei:
        _run(programs, "leaky", True, p)
    e = ei.value
    assert isinstance(e, RuntimeSimError) and e.kind == "credit_leak"
    assert sorted((r, ix, v) for _, r, ix, v in e.details) == [(r, ((r - 1) % p, 0), 1) for r in range(p)]
    lines = str(e).splitlines()
    assert lines[0].endswith("credit leak: signal 'credits' is not back to zero at the end of the call: a later "
                             "call that reuses it starts with stale credits (collective signals are "
                             "self-clearing, SPEC §8)")
    assert lines[1:] == [f"  rank {r}: credits[{(r - 1) % p}, 0] = 1" for r in range(p)]


def test_raw_counters_that_nobody_marked_are_not_flagged(programs) -> None:
    out = _run(programs, "leaky", False)
    assert out.sum() == P            # each rank's cell from its predecessor is still 1: legal for raw counters


def test_the_end_of_call_checks_can_be_switched_off(programs) -> None:
    out = _run(programs, "leaky", True, end_of_call_checks=False)
    assert out.sum() == P


def test_a_remote_access_outside_a_window_fails_at_the_op(programs) -> None:
    p = 2
    inp, plain = torch.ones(p, 1, 8), torch.zeros(1, 8).share_memory_()

    def host(rt, inp):
        for r in range(rt.world_size()):
            rt.dispatch("unbound", r, [inp[r], plain])       # a host tensor where a window belongs
        rt.sync()

    with pytest.raises(RuntimeSimError) as ei:
        run(DistributedBuild("h", host, [HostParam("inp", "In", None)], programs), (inp,), _cfg(p))
    e = ei.value
    line = next(i for i, s in enumerate(open(__file__, encoding="utf-8"), 1) if "# tag: remote store outside" in s)
    assert e.span is not None and (e.span.filename, e.span.begin_line) == (__file__, line)
    assert "remote_write: the tensor is not in a window (remote accesses and signals need a window-bound " \
           "tensor: a pld.DistributedTensor made by pld.window)" in str(e)
    assert str(e).count("rank ") >= 1 and "running 'unbound'" in str(e)


# ---- the collective sequence, from what each rank recorded ----------------------------------------
def _c(rank, name, *sig, line=1):
    return CollectiveCall(rank, name, tuple(sig), Span("model.py", line, 5, line, 30), "step")


def test_identical_collective_sequences_pass() -> None:
    seq = [("pld.allreduce", "signal [3, 1]", "op=Sum"), ("pld.barrier", "signal [3, 1]")]
    check_collectives([_c(r, *s) for s in seq for r in range(3)], 3)
    check_collectives([], 3)


def test_a_different_collective_names_the_first_divergence() -> None:
    calls = [_c(r, "pld.allreduce", "signal [3, 1]", "op=Sum", line=10) for r in range(3)]
    calls += [_c(0, "pld.barrier", "signal [3, 1]", line=11), _c(1, "pld.barrier", "signal [3, 1]", line=11),
              _c(2, "pld.broadcast", "signal [3, 1]", "root=0", line=14)]
    with pytest.raises(DistributedCheckError) as ei:
        check_collectives(calls, 3)
    e = ei.value
    assert e.kind == "collective_mismatch" and [c.name for c in e.details] == ["pld.barrier"] * 2 + ["pld.broadcast"]
    assert str(e).splitlines()[1:] == [
        "  rank 0: pld.barrier(signal [3, 1]) in kernel 'step' at model.py:11",
        "  rank 1: pld.barrier(signal [3, 1]) in kernel 'step' at model.py:11",
        "  rank 2: pld.broadcast(signal [3, 1], root=0) in kernel 'step' at model.py:14"]
    assert "they differ at collective #2 of the call:" in str(e)


def test_a_rank_that_skips_a_collective_or_uses_another_signal_shape() -> None:
    calls = [_c(0, "pld.allreduce", "signal [2, 1]"), _c(1, "pld.allreduce", "signal [2, 1]"),
             _c(0, "pld.allreduce", "signal [2, 1]")]
    with pytest.raises(DistributedCheckError, match=r"rank 1: nothing \(it ran 1 collective in this call\)"):
        check_collectives(calls, 2)
    with pytest.raises(DistributedCheckError, match=r"rank 1: pld.allreduce\(signal \[4, 2\]\)"):
        check_collectives([_c(0, "pld.allreduce", "signal [2, 1]"), _c(1, "pld.allreduce", "signal [4, 2]")], 2)


# ---- the rank-side hooks the collectives call ------------------------------------------------------
def collective_then_leak(comm, sig, leak_on):
    """Each rank records a collective (rank 1 another one when asked), marks `sig` as its credit
    signal and leaves a credit in it on rank `leak_on` (-1: none)."""
    name = "pld.barrier" if comm.rank == 1 and leak_on == -2 else "pld.allreduce"
    record_collective(comm, name, ["signal [2]"])
    mark_credit(comm, sig, "ar_sig", collective=name)
    if comm.rank == leak_on:
        comm.notify(sig[1], comm.rank, 5, "add")
    return None


@pytest.mark.parametrize("leak_on,kind", [(-1, None), (1, "credit_leak"), (-2, "collective_mismatch")])
def test_hooks_recorded_on_the_ranks_are_checked_at_the_end(leak_on, kind) -> None:
    w = World({}, None, DistributedConfig(device_ids=[0, 1]))
    try:
        spec = w.alloc_window(8)
        sig = WindowArg(spec.wid, 0, (2,), torch.int32)
        call_on_ranks(w, collective_then_leak, [[sig, leak_on], [sig, leak_on]])
        if kind is None:
            end_of_call(w)
            return
        with pytest.raises(DistributedCheckError) as ei:
            end_of_call(w)
        assert ei.value.kind == kind
        if kind == "credit_leak":
            assert str(ei.value).splitlines()[1:] == ["  rank 1: ar_sig[1] = 5"]
            assert "signal 'ar_sig' (used by pld.allreduce) is not back to zero" in str(ei.value)
        else:
            assert "  rank 1: pld.barrier(signal [2])" in str(ei.value)
    finally:
        w.close()


# ---- builtin host collectives: their signal is a credit signal ------------------------------------
@pytest.fixture(scope="module")
def allreduce_program():
    from pypto.core.dtype import FP32, INDEX, INT32
    from pypto.ir.expr import ConstInt, Var
    from pypto.ir.types import DistributedTensorType, ScalarType
    from pypto.runtime.dist.builtin import builtin_program

    nr = Var("NR", ScalarType(INDEX))
    x = DistributedTensorType((ConstInt(4, INDEX), ConstInt(64, INDEX)), FP32)
    s = DistributedTensorType((nr, ConstInt(1, INDEX)), INT32)
    prog = builtin_program("allreduce", [x, s], {"mode": "mesh"})
    return prog.name, ir.compile(prog, dump_passes=False, skip_ptoas=True, diagnostic_phase="none")


@pytest.mark.parametrize("tamper", [False, True])
def test_a_builtin_collective_signal_must_end_at_zero(allreduce_program, tamper: bool) -> None:
    name, cp = allreduce_program
    p = 2

    def host(rt, out):
        data = rt.window(rt.alloc_window_buffer(4 * 64 * 4), [4, 64], "FP32")
        sig = rt.window(rt.alloc_window_buffer(p * 4), [p, 1], "INT32")
        for r in range(p):
            data.on_rank(r).fill_(r + 1.0)
        for r in range(p):
            rt.dispatch(name, r, [data, sig])
        rt.sync()
        if tamper:                                   # test only: a stale credit left in rank 1's signal
            sig.on_rank(1)[0, 0] += 1
        out.copy_(data.on_rank(0))
        return out

    out = torch.zeros(4, 64)
    build = DistributedBuild("h", host, [HostParam("out", "Out", None)], {name: cp})
    if not tamper:
        run(build, (out,), _cfg(p))
        assert torch.equal(out, torch.full((4, 64), 3.0))
        return
    with pytest.raises(DistributedCheckError) as ei:
        run(build, (out,), _cfg(p))
    assert ei.value.kind == "credit_leak" and torch.equal(out, torch.zeros(4, 64))
    assert str(ei.value).splitlines() == [
        f"credit leak: signal 'signal' (used by host pld.allreduce ('{name}')) is not back to zero at the end of "
        f"the call: a later call that reuses it starts with stale credits (collective signals are self-clearing, "
        f"SPEC §8)", "  rank 1: signal[0, 0] = 1"]


# ---- kernel-level collectives: recorded per rank, their signals are credit signals ------------------
@pl.jit.incore
def bcast_k(x: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor):
    pld.broadcast(x, sig, root=0)                              # tag: broadcast
    return x


@pl.jit
def bcast(x: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor):
    x = bcast_k(x, sig)
    return x


@pl.jit.incore
def gather_k(local: pld.DistributedTensor, x: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor):
    pld.allgather(local, x, sig)                               # tag: allgather
    return x


@pl.jit
def gather(local: pld.DistributedTensor, x: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor):
    x = gather_k(local, x, sig)
    return x


@pl.jit.incore
def barrier_k(sig: pld.DistributedTensor):
    ctx = pld.get_comm_ctx(sig)
    me = pld.rank(ctx)
    pld.barrier(sig)                                           # tag: barrier
    pld.notify(sig, (me + 1) % pld.nranks(ctx), [me, 0], 1)    # a stray credit on the collective's signal


@pl.jit
def stray(sig: pld.DistributedTensor):
    barrier_k(sig)


@pytest.fixture(scope="module")
def coll_programs():
    x, loc, s = torch.zeros(2, 64), torch.zeros(64), torch.zeros(2, 1, dtype=torch.int32)
    return {"bcast": _compile(bcast, x, s), "gather": _compile(gather, loc, x, s), "stray": _compile(stray, s)}


def _tag(tag):
    return next(i for i, s in enumerate(open(__file__, encoding="utf-8"), 1) if f"# tag: {tag}" in s)


def test_ranks_that_ran_different_kernel_collectives(coll_programs) -> None:
    def host(rt, out):
        loc = rt.window(rt.alloc_window_buffer(64 * 4), [64], "FP32")
        x = rt.window(rt.alloc_window_buffer(2 * 64 * 4), [2, 64], "FP32")
        sig = rt.window(rt.alloc_window_buffer(2 * 4), [2, 1], "INT32")
        rt.dispatch("bcast", 0, [x, sig])                      # the planted bug: rank 0 broadcasts,
        rt.dispatch("gather", 1, [loc, x, sig])                # rank 1 gathers
        rt.sync()
        return out

    out = torch.zeros(1)
    with pytest.raises(DistributedCheckError) as ei:
        run(DistributedBuild("h", host, [HostParam("out", "Out", None)], coll_programs), (out,), _cfg(2))
    e = ei.value
    assert e.kind == "collective_mismatch" and [c.name for c in e.details] == ["pld.broadcast", "pld.allgather"]
    assert e.message.splitlines()[1:] == [
        f"  rank 0: pld.broadcast(signal [2, 1]) in kernel 'bcast_k' at {__file__}:{_tag('broadcast')}",
        f"  rank 1: pld.allgather(signal [2, 1]) in kernel 'gather_k' at {__file__}:{_tag('allgather')}"]


def test_a_stray_notify_on_a_collective_signal_is_a_credit_leak(coll_programs) -> None:
    def host(rt, out):
        sig = rt.window(rt.alloc_window_buffer(2 * 4), [2, 1], "INT32")
        for r in range(2):
            rt.dispatch("stray", r, [sig])
        rt.sync()
        return out

    with pytest.raises(DistributedCheckError) as ei:
        run(DistributedBuild("h", host, [HostParam("out", "Out", None)], coll_programs), (torch.zeros(1),), _cfg(2))
    e = ei.value
    assert e.kind == "credit_leak" and e.span.begin_line == _tag("barrier")
    assert e.message.splitlines() == [
        f"credit leak: signal 'sig' (used by pld.barrier at {__file__}:{_tag('barrier')}) is not back to zero at "
        f"the end of the call: a later call that reuses it starts with stale credits (collective signals are "
        f"self-clearing, SPEC §8)", "  rank 0: sig[1, 0] = 1", "  rank 1: sig[0, 0] = 1"]
