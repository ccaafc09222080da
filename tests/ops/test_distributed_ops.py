"""Numerics of the distributed primitives `pld.*` (pypto.ops.distributed, SPEC §8) on a fake world:
P ranks in threads of this process, each running the compiled program on its own simulated chip
with an in-memory `Comm` (`dist_harness`). Expected values come from torch directly."""

import pytest
import torch
from dist_harness import World, run_ranks

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.debug import torch_codegen

M, N = 16, 32


def windows(p: int, *shapes: tuple) -> World:
    """A world of `p` ranks, each with zeroed windows of (shape, torch dtype) `shapes`."""
    return World([[torch.zeros(s, dtype=dt) for s, dt in shapes] for _ in range(p)])


F32, I32 = torch.float32, torch.int32


@pl.program
class RingTile:
    """Each rank stores its x into the next rank's window (tile remote_store), announces it, waits
    for its own data, and copies its window to y."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
          sig: pld.DistributedTensor[[4, 1], pl.INT32],
          y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        t = pl.load(x, [0, 0], [M, N])
        pld.remote_store(t, data, (me + 1) % n, [0, 0])
        pld.notify(sig, (me + 1) % n, [me, 0], 1)
        pld.wait(sig, [(me + n - 1) % n, 0], 1)
        r = pl.load(data, [0, 0], [M, N])
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
             sig: pld.DistributedTensor[[4, 1], pl.INT32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, data, sig, y)
        return y


@pytest.fixture(scope="module")
def ring_tile():
    return ir.compile(RingTile, dump_passes=False, skip_ptoas=True)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_ring_shift_with_tile_remote_store(ring_tile, p):
    world = windows(p, ((M, N), F32), ((4, 1), I32))
    xs = [torch.randn(M, N) for _ in range(p)]
    ys = [torch.zeros(M, N) for _ in range(p)]
    run_ranks(ring_tile, world, lambda r: [xs[r], None, None, ys[r]], [1, 2])
    for r in range(p):
        src = (r - 1) % p
        assert torch.equal(world.windows[r][0], xs[src])
        assert torch.equal(ys[r], xs[src])
        want = torch.zeros(4, 1, dtype=I32)
        want[src] = 1   # the notify landed in the cell named by the sender's rank
        assert torch.equal(world.windows[r][1], want)


def test_torch_script_of_a_distributed_program_runs_under_the_comm(ring_tile):
    """The torch reference reaches the peers through the same Comm; without one it names the op."""
    import threading

    from pypto.ops.dist_comm import comm_context

    ns: dict = {}
    exec(torch_codegen(RingTile), ns)   # noqa: S102
    p = 3
    world = windows(p, ((M, N), F32), ((4, 1), I32))
    xs = [torch.randn(M, N) for _ in range(p)]
    ys = [torch.zeros(M, N) for _ in range(p)]

    def one(r):
        with comm_context(world.comm(r)):
            ns["run"](xs[r], world.windows[r][0], world.windows[r][1], ys[r])
    threads = [threading.Thread(target=one, args=(r,)) for r in range(p)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in range(p):
        assert torch.equal(ys[r], xs[(r - 1) % p])
    with pytest.raises(NotImplementedError, match="'pld.rank' talks to other ranks"):
        ns["run"](xs[0], world.windows[0][0], world.windows[0][1], ys[0])


@pl.program
class LoadPeer:
    """Each rank stages x in its own window, counts every peer's arrival in cell [0, 0], then
    remote-loads the leading `V` rows of the next rank's window."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], data: pl.InOut[pld.DistributedTensor[[M, N], pl.FP32]],
          sig: pld.DistributedTensor[[1, 1], pl.INT32],
          y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> tuple[pld.DistributedTensor[[M, N], pl.FP32],
                                                           pl.Tensor[[M, N], pl.FP32]]:
        ctx = pld.get_comm_ctx(sig)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        t = pl.load(x, [0, 0], [M, N])
        data = pl.store(t, [0, 0], data)
        for p in pl.range(n):
            if p != me:
                pld.notify(sig, p, [0, 0], 1, op=pld.NotifyOp.AtomicAdd)
        pld.wait(sig, [0, 0], n - 1, cmp=pld.WaitCmp.Ge)
        r = pld.remote_load(data, (me + 1) % n, [0, 0], [M, N], valid_shape=[10, N])
        y = pl.store(r, [0, 0], y)
        return data, y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], data: pl.InOut[pld.DistributedTensor[[M, N], pl.FP32]],
             sig: pld.DistributedTensor[[1, 1], pl.INT32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        data, y = self.k(x, data, sig, y)
        return y


@pytest.mark.parametrize("p", [2, 3])
def test_remote_load_of_a_partial_region_after_a_counting_signal(p):
    compiled = ir.compile(LoadPeer, dump_passes=False, skip_ptoas=True)
    world = windows(p, ((M, N), F32), ((1, 1), I32))
    xs = [torch.randn(M, N) for _ in range(p)]
    ys = [torch.zeros(M, N) for _ in range(p)]
    run_ranks(compiled, world, lambda r: [xs[r], None, None, ys[r]], [1, 2])
    for r in range(p):
        assert torch.equal(world.windows[r][0], xs[r])
        assert torch.equal(ys[r][:10], xs[(r + 1) % p][:10])
        assert torch.equal(ys[r][10:], torch.zeros(M - 10, N))   # only the valid rows are stored
        assert int(world.windows[r][1]) == p - 1


@pl.program
class SumToRoot:
    """Every rank adds its x into rank 0's window (atomic remote store) and announces it; rank 0
    waits until all did (Eq) and copies the sum out; a Set notify then tells every rank it is done."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], acc: pld.DistributedTensor[[M, N], pl.FP32],
          sig: pld.DistributedTensor[[2, 1], pl.INT64],
          y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ctx = pld.get_comm_ctx(acc)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        t = pl.load(x, [0, 0], [M, N])
        pld.tile.remote_store(t, acc, 0, [0, 0], atomic=pld.AtomicType.Add)
        pld.system.fence()
        pld.system.notify(sig, 0, [0, 0], 1)
        if me == 0:
            pld.system.wait(sig, [0, 0], n, cmp=pld.WaitCmp.Eq)
            for p in pl.range(n):
                pld.system.notify(sig, p, [1, 0], 7, op=pld.NotifyOp.Set)
        pld.system.defer_wait(sig, [1, 0], 7)
        r = pld.tile.remote_load(acc, 0, [0, 0], [M, N])
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], acc: pld.DistributedTensor[[M, N], pl.FP32],
             sig: pld.DistributedTensor[[2, 1], pl.INT64],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, acc, sig, y)
        return y


@pytest.mark.parametrize("p", [2, 4])
def test_atomic_add_into_one_rank_with_eq_wait_set_notify_and_defer_wait(p):
    compiled = ir.compile(SumToRoot, dump_passes=False, skip_ptoas=True)
    world = windows(p, ((M, N), F32), ((2, 1), torch.int64))
    xs = [torch.randn(M, N) for _ in range(p)]
    ys = [torch.zeros(M, N) for _ in range(p)]
    run_ranks(compiled, world, lambda r: [xs[r], None, None, ys[r]], [1, 2])
    total = sum(xs)
    torch.testing.assert_close(world.windows[0][0], total, rtol=1e-5, atol=1e-5)
    for r in range(p):
        torch.testing.assert_close(ys[r], total, rtol=1e-5, atol=1e-5)
        assert int(world.windows[r][1][1]) == 7          # set, not added
    assert int(world.windows[0][1][0]) == p
    assert sum(1 for e in world.log if e[1] == "fence") == p


@pl.program
class Transfers:
    """Tensor-level transfers in InCore code: rank r puts its x's rows 0:8 into rows 8:16 of the next
    rank's window, remote_stores its whole x into the next rank's `whole`, announces both; then gets
    (region, atomically added) the previous rank's rows 0:4 of `whole` into y and puts back
    (whole tensor) its `small` into the previous rank's `back`."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], small: pl.Tensor[[4, N], pl.FP32],
          data: pld.DistributedTensor[[M, N], pl.FP32], whole: pld.DistributedTensor[[M, N], pl.FP32],
          back: pld.DistributedTensor[[4, N], pl.FP32], sig: pld.DistributedTensor[[2, 1], pl.INT32],
          y: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        nxt = (me + 1) % n
        prv = (me + n - 1) % n
        pld.put(data, nxt, x, [8, 0], [0, 0], [8, N], chunk_rows=4, chunk_cols=N, pipeline=True)
        pld.tensor.remote_store(x, whole, nxt, [0, 0])
        pld.notify(sig, nxt, [0, 0], 1)
        pld.wait(sig, [0, 0], 1)
        pld.notify(sig, prv, [1, 0], 1)
        pld.wait(sig, [1, 0], 1)
        y = pld.get(y, me, whole, [4, 0], [0, 0], [4, N], atomic=pld.AtomicType.Add)
        pld.tensor.put(back, prv, small)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], small: pl.Tensor[[4, N], pl.FP32],
             data: pld.DistributedTensor[[M, N], pl.FP32], whole: pld.DistributedTensor[[M, N], pl.FP32],
             back: pld.DistributedTensor[[4, N], pl.FP32], sig: pld.DistributedTensor[[2, 1], pl.INT32],
             y: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, small, data, whole, back, sig, y)
        return y


@pytest.mark.parametrize("p", [2, 3])
def test_put_get_and_tensor_remote_store_in_tensor_level_incore_code(p):
    compiled = ir.compile(Transfers, dump_passes=False, skip_ptoas=True)
    world = windows(p, ((M, N), F32), ((M, N), F32), ((4, N), F32), ((2, 1), I32))
    xs = [torch.randn(M, N) for _ in range(p)]
    smalls = [torch.randn(4, N) for _ in range(p)]
    y0 = [torch.randn(M, N) for _ in range(p)]
    ys = [t.clone() for t in y0]
    run_ranks(compiled, world, lambda r: [xs[r], smalls[r], None, None, None, None, ys[r]], [2, 3, 4, 5])
    for r in range(p):
        prv, nxt = (r - 1) % p, (r + 1) % p
        assert torch.equal(world.windows[r][0][8:], xs[prv][:8])
        assert torch.equal(world.windows[r][0][:8], torch.zeros(8, N))
        assert torch.equal(world.windows[r][1], xs[prv])
        assert torch.equal(world.windows[r][2], smalls[nxt])
        want = y0[r].clone()
        want[4:8] += xs[prv][:4]
        torch.testing.assert_close(ys[r], want, rtol=1e-6, atol=1e-6)


@pl.program
class Lonely:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, sig: pld.DistributedTensor[[2, 1], pl.INT32], peer: pl.Scalar[pl.INT32]):
        pld.notify(sig, peer, [0, 0], 1)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, sig: pld.DistributedTensor[[2, 1], pl.INT32], peer: pl.Scalar[pl.INT32]):
        self.k(sig, peer)


def test_outside_a_distributed_run_a_remote_op_is_a_located_error():
    compiled = ir.compile(Lonely, dump_passes=False, skip_ptoas=True)
    with pytest.raises(RuntimeSimError, match="'pld.system.notify' talks to other ranks") as info:
        compiled(torch.zeros(2, 1, dtype=I32), 1)
    assert info.value.span is not None and info.value.span.begin_line == Lonely.get_function("k").span.begin_line + 1


def test_a_bad_peer_is_the_comms_error_located_at_the_op():
    compiled = ir.compile(Lonely, dump_passes=False, skip_ptoas=True)
    world = windows(2, ((2, 1), I32))
    with pytest.raises(RuntimeSimError, match="peer 5 is not a rank") as info:
        run_ranks(compiled, world, lambda r: [None, 5], [0])
    assert info.value.span is not None


def test_link_costs_are_latency_plus_bytes_over_bandwidth():
    from pypto.backend.soc import BackendType, get_soc
    from pypto.ops import get_op
    from pypto.runtime.sim.cost_model import CONSTANTS, op_cost

    soc = get_soc(BackendType.Ascend910B)
    lat, bw = CONSTANTS["link_latency"], CONSTANTS["link_bytes_per_cycle"]
    assert "estimate" in lat.source and "estimate" in bw.source
    calls = {}
    for f in (RingTile.get_function("k"), Transfers.get_function("k")):
        for s in f.body.stmts:
            call = getattr(s, "value", None) or getattr(s, "expr", None)
            if getattr(call, "op", "").startswith("pld."):
                calls.setdefault(call.op, call)
    nbytes = M * N * 4
    want = {"pld.tile.remote_store": ("mte3", lat.value + -(-nbytes // bw.value)),
            "pld.system.notify": ("mte3", lat.value),
            "pld.tensor.put": ("mte3", lat.value + -(-(8 * N * 4) // bw.value)),   # the [8, N] region
            "pld.tensor.get": ("mte2", lat.value + -(-(4 * N * 4) // bw.value)),   # the [4, N] region
            "pld.rank": ("scalar", CONSTANTS["scalar_op"].value)}
    for op, (pipe, cycles) in want.items():
        c = op_cost(get_op(op), calls[op], soc)
        assert (c.pipe, c.cycles) == (pipe, cycles), op


def test_pto_text_names_each_transfer_box(tmp_path):
    """Each tensor argument of a pld op is the partition view of its own box (OpSpec.regions)."""
    import re
    from pathlib import Path

    compiled = ir.compile(Transfers, dump_passes=False, skip_ptoas=True, output_dir=str(tmp_path / "b"))
    text = (Path(compiled.output_dir) / "kernels" / "aiv" / "k.pto").read_text()
    views = {m[0]: m[1:] for m in re.findall(r"(%pv\w*) = pto.partition_view %(\w+)_view, offsets = \[([^\]]*)\], "
                                               r"sizes = \[([^\]]*)\]", text)}

    def boxes(op):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(op) or f"= {op} " in ln)
        names = re.findall(r"%pv\w*", line)
        return [views[n] for n in names]
    assert boxes("pto.remote_put") == [("data", "%c8, %c0", "%c8, %c32"), ("x", "%c0, %c0", "%c8, %c32")]
    assert boxes("pto.remote_tstore") == [("x", "%c0, %c0", "%c16, %c32"), ("whole", "%c0, %c0", "%c16, %c32")]
    assert boxes("pto.signal_notify") == [("sig", "%c0, %c0", "%c1, %c1")]
    assert boxes("pto.signal_wait") == [("sig", "%c0, %c0", "%c1, %c1")]
    assert boxes("pto.remote_get") == [("whole", "%c0, %c0", "%c4, %c32"), ("y", "%c4, %c0", "%c4, %c32")]
    assert 'chunk_rows = 4, chunk_cols = 32, pipeline = true' in text and 'atomic = "Add"' in text


@pl.program
class OnChipTransfers:
    """Tensor-level transfers whose local operand lives on chip (a computed value, a slice region):
    ConvertTensorToTileOps lowers them to tile ops (OpSpec.on_chip)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
          whole: pld.DistributedTensor[[M, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32],
          y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        nxt = (me + 1) % pld.nranks(ctx)
        z = pl.add(x, x)
        pld.put(data, nxt, z, [8, 0], [0, 0], [8, N])
        s = pl.slice(x, [4, N], [4, 0])
        pld.remote_store(s, whole, nxt, [0, 0])
        pld.notify(sig, nxt, [0, 0], 1)
        pld.wait(sig, [0, 0], 1)
        acc = pl.create_tensor([M, N], dtype=pl.FP32)
        acc = pld.get(acc, me, data, [0, 0], [8, 0], [8, N])
        acc = pld.get(acc, me, whole, [8, 0], [0, 0], [4, N], atomic=pld.AtomicType.Add)
        acc = pld.get(acc, me, data, atomic=pld.AtomicType.Add)
        y = pl.assemble(y, acc, [0, 0])
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
             whole: pld.DistributedTensor[[M, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, data, whole, sig, y)
        return y


def test_transfers_of_on_chip_values_are_lowered_to_tile_ops():
    compiled = ir.compile(OnChipTransfers, dump_passes=False, skip_ptoas=True)
    kernel = compiled.program.get_function("k").as_python()
    assert "pld.tensor." not in kernel   # every transfer became tile code
    for op in ("pld.tile.remote_store(", "pl.tile.slice(", "pld.tile.remote_load(", "pl.tile.assemble("):
        assert op in kernel, op
    p = 3
    world = windows(p, ((M, N), F32), ((M, N), F32), ((1, 1), I32))
    xs = [torch.randn(M, N) for _ in range(p)]
    ys = [torch.zeros(M, N) for _ in range(p)]
    run_ranks(compiled, world, lambda r: [xs[r], None, None, None, ys[r]], [1, 2, 3])
    for r in range(p):
        prv = xs[(r - 1) % p]
        data = torch.zeros(M, N)
        data[8:] = 2 * prv[:8]
        whole = torch.zeros(M, N)
        whole[:4] = prv[4:8]
        assert torch.equal(world.windows[r][0], data) and torch.equal(world.windows[r][1], whole)
        acc = torch.zeros(M, N)
        acc[:8] = data[8:]
        acc[8:12] += whole[:4]
        acc = acc + data
        torch.testing.assert_close(ys[r], acc, rtol=1e-6, atol=1e-6)


@pl.program
class Deferred:
    """Rank 1 stores into rank 0's window and then notifies; rank 0 submits a waiter task
    (`defer_wait`) and a reader that depends on it (`deps=[tid]`) in a manual scope."""

    @pl.function(type=pl.FunctionType.InCore)
    def waiter(self, sig: pld.DistributedTensor[[1, 1], pl.INT32]):
        pld.system.defer_wait(sig, [0, 0], 1)

    @pl.function(type=pl.FunctionType.InCore)
    def send(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32]):
        t = pl.load(x, [0, 0], [M, N])
        pld.remote_store(t, data, 0, [0, 0])
        pld.notify(sig, 0, [0, 0], 1)

    @pl.function(type=pl.FunctionType.InCore)
    def read(self, data: pld.DistributedTensor[[M, N], pl.FP32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(data, [0, 0], [M, N])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], data: pld.DistributedTensor[[M, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], me: pl.Scalar[pl.INT32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        if me == 1:
            self.send(x, data, sig)
        else:
            with pl.manual_scope():
                (tid,) = pl.submit(self.waiter, sig)
                y, t2 = pl.submit(self.read, data, y, deps=[tid])
        return y


def test_defer_wait_task_orders_its_consumers():
    compiled = ir.compile(Deferred, dump_passes=False, skip_ptoas=True)
    world = windows(2, ((M, N), F32), ((1, 1), I32))
    xs = [torch.randn(M, N) for _ in range(2)]
    ys = [torch.zeros(M, N) for _ in range(2)]
    run_ranks(compiled, world, lambda r: [xs[r], None, None, r, ys[r]], [1, 2])
    assert torch.equal(ys[0], xs[1])
    assert [e[1] for e in world.log if e[0] == 0] == ["wait"]
