"""The rank processes' `Comm` (pypto.runtime.dist.comm) used directly in rank processes through the
test entry point `world.call_on_ranks`: peer views, atomic notifies, waits, remote writes and reads,
simulated arrival times, errors, and the deadlock report (SPEC §8; issue 10 items 3-5)."""

import pytest
import torch

from pypto.core.errors import RuntimeSimError
from pypto.runtime.config import DistributedConfig
from pypto.runtime.dist import DistributedDeadlockError
from pypto.runtime.dist.rank import WindowArg
from pypto.runtime.dist.world import World, call_on_ranks
from pypto.runtime.sim.cost_model import CONSTANTS, const

LAT = int(const("link_latency"))


@pytest.fixture
def world3():
    w = World({}, None, DistributedConfig(device_ids=[0, 1, 2], deadlock_timeout=0.3))
    yield w
    w.close()


def _win(w: World, shape, dtype=torch.float32):
    n = 1
    for d in shape:
        n *= d
    spec = w.alloc_window(n * torch.empty((), dtype=dtype).element_size())
    return WindowArg(spec.wid, 0, tuple(shape), dtype)


# ---- functions run inside the rank processes ------------------------------------------------------
def shift_ring(comm, data, sig):
    """Each rank writes its row into the next rank's copy, then notifies it."""
    r, n = comm.rank, comm.nranks
    peer = (r + 1) % n
    comm.remote_write(data[r], peer, torch.full((4,), float(10 * r + 1)), False)
    comm.notify(sig[0], peer, 1, "add")
    comm.wait(sig[0], 1, "eq")
    return data.clone()


def hammer(comm, sig, n):
    """Every rank adds 1 to rank 0's counter n times (atomicity), then rank 0 waits for all of them."""
    for _ in range(n):
        comm.notify(sig[0], 0, 1, "add")
    if comm.rank == 0:
        comm.wait(sig[0], n * comm.nranks, "ge")
    return int(sig[0])


def barrier_then_read(comm, acc, sig):
    """Every rank accumulates rank+1 into rank 0's copy; a barrier; everyone reads it back."""
    comm.remote_write(acc, 0, torch.full(tuple(acc.shape), float(comm.rank + 1)), True)
    for p in range(comm.nranks):
        comm.notify(sig[comm.rank], p, 1, "add")
    for p in range(comm.nranks):
        comm.wait(sig[p], 1, "ge")
    return comm.remote_read(acc, 0)


def bad_peer(comm, sig):
    comm.notify(sig[0], comm.nranks, 1, "add")


def not_a_window(comm, sig):
    comm.notify(torch.zeros(1, dtype=torch.int32), 0, 1, "add")


def stuck(comm, sig):
    """Rank 0 notifies rank 1 once; ranks 0 and 1 wait for 2 (never); rank 2 returns."""
    if comm.rank == 0:
        comm.notify(sig[1], 1, 1, "add")
    if comm.rank < 2:
        comm.wait(sig[1], 2, "ge")


def timed(comm, sig):
    """Rank 0 notifies rank 1 right away; rank 1 waits: released at the notify's arrival."""
    if comm.rank == 0:
        comm.notify(sig[0], 1, 1, "add")
    elif comm.rank == 1:
        comm.wait(sig[0], 1, "eq")
    return [(e.kind, e.time, e.arrival, e.cause) for e in comm.events]


# ---- tests ------------------------------------------------------------------------------------------
def test_remote_write_notify_wait_ring(world3: World) -> None:
    data, sig = _win(world3, (3, 4)), _win(world3, (1,), torch.int32)
    out = call_on_ranks(world3, shift_ring, [[data, sig]] * 3)
    for r in range(3):
        src = (r - 1) % 3
        expect = torch.zeros(3, 4)
        expect[src] = 10 * src + 1
        assert torch.equal(out[r], expect)


def test_notify_is_atomic_across_processes(world3: World) -> None:
    sig = _win(world3, (1,), torch.int32)
    got = call_on_ranks(world3, hammer, [[sig, 200]] * 3)
    assert got[0] == 600


def test_accumulate_and_remote_read(world3: World) -> None:
    acc, sig = _win(world3, (2, 3)), _win(world3, (3,), torch.int32)
    got = call_on_ranks(world3, barrier_then_read, [[acc, sig]] * 3)
    for r in range(3):
        assert torch.equal(got[r], torch.full((2, 3), 6.0))   # 1 + 2 + 3, seen by every rank


def test_bad_peer_and_non_window_cell_raise(world3: World) -> None:
    sig = _win(world3, (1,), torch.int32)
    with pytest.raises(RuntimeSimError, match=r"rank \d \(device \d\).*notify: peer 3 is outside the world \[0, 3\)"):
        call_on_ranks(world3, bad_peer, [[sig]] * 3)
    with pytest.raises(RuntimeSimError, match="the tensor is not in a window"):
        call_on_ranks(world3, not_a_window, [[sig]] * 3)


def test_deadlock_report_names_waits_and_missing_peers(world3: World) -> None:
    sig = _win(world3, (2,), torch.int32)
    with pytest.raises(DistributedDeadlockError) as ei:
        call_on_ranks(world3, stuck, [[sig]] * 3)
    e = ei.value
    msg = str(e)
    assert "every busy rank has been blocked" in msg
    assert [b.rank for b in e.blocked] == [0, 1]
    b0, b1 = e.blocked
    assert (b0.expected, b0.cmp, b0.current, b0.senders) == (2, "ge", 0, [])
    assert (b1.current, b1.senders) == (1, [0])
    assert ">= 2, current value 1; in this call it was notified by rank 0" in msg
    assert "no notify reached this cell from rank 2 in this call; rank 2 finished without notifying it: the likely missing sender" in msg and "rank 2 has nothing left to run" in msg
    assert e.idle == [2]
    # the world is usable again after the report
    assert call_on_ranks(world3, hammer, [[_win(world3, (1,), torch.int32), 1]] * 3)[0] == 3


def test_wait_completes_at_the_notify_arrival(world3: World) -> None:
    sig = _win(world3, (1,), torch.int32)
    ev = call_on_ranks(world3, timed, [[sig]] * 3)
    (kind, t, arrival, _), = ev[0]
    assert kind == "notify" and arrival == t + LAT
    (kind, t1, release, cause), = ev[1]
    assert kind == "wait" and release == max(t1, arrival) and cause == 1   # rank 0's first event
    assert "estimate" in CONSTANTS["link_latency"].source and "estimate" in CONSTANTS["link_bytes_per_cycle"].source


def fail_on_rank1(comm, sig):
    """Rank 1 fails; the others wait for a notify from it that never comes."""
    if comm.rank == 1:
        raise ValueError("rank 1 broke")
    comm.wait(sig[0], 1, "eq")


def test_a_failing_rank_releases_the_waiting_ones() -> None:
    w = World({}, None, DistributedConfig(device_ids=[0, 1, 2], deadlock_timeout=30))
    try:
        sig = _win(w, (1,), torch.int32)
        with pytest.raises(RuntimeSimError, match=r"rank 1 \(device 1\), running 'fail_on_rank1': "
                                                  r"ValueError: rank 1 broke") as ei:
            call_on_ranks(w, fail_on_rank1, [[sig]] * 3)
        assert ei.value.rank == 1
        assert call_on_ranks(w, hammer, [[_win(w, (1,), torch.int32), 1]] * 3)[0] == 3   # still usable
    finally:
        w.close()


def test_distributed_config_checks_its_fields() -> None:
    from pypto.runtime import RunConfig

    assert DistributedConfig(device_ids=[3, 1]).world_size == 2
    for bad, what in [({"device_ids": []}, "device_ids"), ({"device_ids": [0, 0]}, "device_ids"),
                      ({"device_ids": list(range(65))}, "device_ids"), ({"num_sub_workers": -1}, "num_sub_workers"),
                      ({"deadlock_timeout": 0}, "deadlock_timeout"), ({"start_method": "thread"}, "start_method")]:
        with pytest.raises(ValueError, match=f"DistributedConfig.{what}"):
            DistributedConfig(**bad)
    with pytest.raises(ValueError, match="RunConfig.distributed_config must be a DistributedConfig"):
        RunConfig(distributed_config=[0, 1])


def read_both_ways(comm, data, sig):
    """Each rank fills its copy with rank+1; a barrier; then it reads its successor's copy with
    `remote_read` and with `remote_read_into` (into a tensor of its own): same data, same cost."""
    data.fill_(float(comm.rank + 1))
    for p in range(comm.nranks):
        comm.notify(sig[comm.rank], p, 1, "add")
    for p in range(comm.nranks):
        comm.wait(sig[p], 1, "ge")
    peer = (comm.rank + 1) % comm.nranks
    got = comm.remote_read(data, peer)
    out = torch.full(tuple(data.shape), -1.0)
    same = comm.remote_read_into(data, peer, out)
    first, second = [e for e in comm.events if e.kind == "remote_read"]
    return (same is out, got.tolist(), out.tolist(), first.arrival - first.time, second.arrival - second.time,
            second.nbytes)


def test_remote_read_into_reads_like_remote_read(world3: World) -> None:
    data, sig = _win(world3, (2, 8)), _win(world3, (3,), torch.int32)
    for r, (same, got, into, cost1, cost2, nbytes) in enumerate(call_on_ranks(world3, read_both_ways,
                                                                                 [[data, sig]] * 3)):
        assert same and got == into == [[float((r + 1) % 3 + 1)] * 8] * 2
        assert cost1 == cost2 == LAT + -(-nbytes // int(const("link_bytes_per_cycle"))) and nbytes == 2 * 8 * 4


def test_comm_events_pickle_to_equal_events() -> None:
    import pickle

    from pypto.runtime.dist.comm import CommEvent

    e = CommEvent("wait", 1, 1, 30, 2730, (1 << 40) | 7, 0, 64, value=2, cause=(2 << 40) | 3, kernel="k",
                  task=4, core="AIV0")
    assert pickle.loads(pickle.dumps(e)) == e


def test_waits_spin_only_when_every_rank_has_a_core(monkeypatch) -> None:
    from pypto.runtime.dist import comm as comm_mod

    monkeypatch.setattr(comm_mod.os, "cpu_count", lambda: 4)
    make = lambda n: comm_mod.RankComm(0, n, None, [], {}, comm_mod.RankClock())  # noqa: E731
    assert make(2).spins == comm_mod.SPINS and make(3).spins == comm_mod.SPINS
    assert make(4).spins == 0 and make(8).spins == 0


def test_a_notify_wakes_a_blocked_peer_only_for_the_cell_it_waits_on() -> None:
    from pypto.runtime.dist.comm import RankClock, RankComm, WindowMap
    from pypto.runtime.dist.control import BLOCKED, Control
    from pypto.runtime.dist.shm import Segment, new_world_id

    class Bell:
        def __init__(self) -> None:
            self.rings = 0

        def release(self) -> None:
            self.rings += 1

    wid = new_world_id()
    ctl, seg = Control.create(f"{wid}_ctl", 2), Segment.create(f"{wid}_w0", 2 * 64)
    try:
        win = WindowMap(0, 64, 64, seg)
        bells = [Bell(), Bell()]
        comm = RankComm(0, 2, ctl, [torch.multiprocessing.Lock(), torch.multiprocessing.Lock()], {0: win},
                        RankClock(), bells)
        cells = win.view(0, 0, (2,), (1,), torch.int32)
        ctl.set_state(1, BLOCKED)
        ctl.set_waiting(1, Control.key(0, 4))            # rank 1 is blocked on cell [1]
        comm.notify(cells[0:1], 1, 1, "add")
        assert bells[1].rings == 0                       # another cell: rank 1 sleeps on
        comm.notify(cells[1:2], 1, 1, "add")
        assert bells[1].rings == 1
        assert win.view(1, 0, (2,), (1,), torch.int32).tolist() == [1, 1]
    finally:
        for s in (ctl.seg, seg):
            s.unlink()
            s.close()


def spin_cpu(comm, n):
    """Burn some CPU in the rank process (a Python loop), return the loop's result."""
    return sum(i * i for i in range(n))


def test_a_dispatch_record_carries_the_rank_processes_cpu_time(world3: World) -> None:
    n = 200_000
    assert call_on_ranks(world3, spin_cpu, [[n]] * 3) == [sum(i * i for i in range(n))] * 3
    assert len(world3.records) == 3 and all(0 < rec.cpu_seconds < 60 for rec in world3.records)
