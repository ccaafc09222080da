"""LowerCollectives, run: every collective and ReduceOp against torch at P = 2, 3, 4, on the
in-process thread harness (`thread_ranks`: one thread and one SimDevice per rank, a Comm over
shared torch buffers). The chip programs are the builtin host-collective programs
(`pypto.runtime.dist.builtin`): an InCore kernel whose body is the kernel-level collective, so these
tests check the lowering and the builtins at once. Signals are checked back to zero after every run.
"""

from __future__ import annotations

import functools

import pytest
import torch
from thread_ranks import ThreadWorld, on_ranks, run_ranks

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.dtype import BF16, FP16, FP32, INDEX, INT32, DataType
from pypto.core.enums import ReduceOp
from pypto.ir.expr import ConstInt, Var
from pypto.ir.types import DistributedTensorType, ScalarType
from pypto.ops import get_op
from pypto.passes import lower_collectives
from pypto.runtime.dist.builtin import builtin_program, signal_shape

RANKS = (2, 3, 4)
NR = Var("NR", ScalarType(INDEX))
_TORCH = {FP32: torch.float32, INT32: torch.int32, FP16: torch.float16, BF16: torch.bfloat16}
REDUCE = {ReduceOp.Sum: lambda xs: torch.stack(xs).sum(0), ReduceOp.Max: lambda xs: torch.stack(xs).amax(0),
          ReduceOp.Min: lambda xs: torch.stack(xs).amin(0), ReduceOp.Prod: lambda xs: torch.stack(xs).prod(0)}


def window(shape: list, dtype: DataType) -> DistributedTensorType:
    """A window-bound tensor type; "NR" in `shape` is the dynamic rank count."""
    return DistributedTensorType(tuple(NR if d == "NR" else ConstInt(d, INDEX) for d in shape), dtype)


def mesh_signal() -> DistributedTensorType:
    return window(["NR", 1], INT32)


@functools.cache
def _compiled(name: str, types: tuple, attrs: tuple, tiny_chunks: bool):
    budget = lower_collectives.CHUNK_FRACTION, lower_collectives.LONE_CHUNK_FRACTION
    if tiny_chunks:   # 184 KiB / 720: ~256-byte tiles, so small tensors still take many chunks
        lower_collectives.CHUNK_FRACTION = lower_collectives.LONE_CHUNK_FRACTION = 720
    try:
        prog = builtin_program(name, list(types), dict(attrs))
        return ir.compile(prog, skip_ptoas=True, dump_passes=False, diagnostic_phase="none")
    finally:
        lower_collectives.CHUNK_FRACTION, lower_collectives.LONE_CHUNK_FRACTION = budget


def compiled(name: str, types: list, tiny_chunks: bool = False, **attrs):
    return _compiled(name, tuple(types), tuple(sorted(attrs.items(), key=lambda kv: kv[0])), tiny_chunks)


def run(cp, nranks: int, operands: list[tuple[list[int], DataType, list[torch.Tensor] | None]]) -> list[list[torch.Tensor]]:
    """Allocate each operand in every rank's window (filled from the per-rank list, or zero), run
    `cp` on all ranks, return the window tensors per operand."""
    world = ThreadWorld(nranks, 1 << 20)
    wins = []
    for shape, dtype, init in operands:
        w = world.alloc(shape, _TORCH[dtype])
        if init is not None:
            for r in range(nranks):
                w[r].copy_(init[r])
        wins.append(w)
    run_ranks(cp, world, lambda r: [w[r] for w in wins])
    return wins


def assert_zero(signal: list[torch.Tensor]) -> None:
    for r, s in enumerate(signal):
        assert int(s.abs().sum()) == 0, f"rank {r}'s signal is not back to zero: {s.flatten().tolist()}"


def assert_all_equal(got: list[torch.Tensor], want: list[torch.Tensor], rtol: float = 1e-5, atol: float = 1e-5):
    for r, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, msg=lambda m, r=r: f"rank {r}: {m}")


@pytest.mark.parametrize("mode", ["mesh", "ring"])
@pytest.mark.parametrize("op", list(ReduceOp))
@pytest.mark.parametrize("nranks", RANKS)
def test_allreduce_every_op_and_mode(mode, op, nranks):
    shape = [6, 70]   # rows of 70 FP32 in ~256-byte tiles: 64 + 6 per row (mesh), 48 + 22 (ring segments)
    cp = compiled("allreduce", [window(shape, FP32)], tiny_chunks=True, mode=mode, op=op)
    torch.manual_seed(nranks)
    xs = [torch.rand(*shape) + 0.5 for _ in range(nranks)]
    x, sig = run(cp, nranks, [(shape, FP32, xs), (signal_shape("allreduce", {"mode": mode}, nranks), INT32, None)])
    want = REDUCE[op](xs)
    assert_all_equal(x, [want] * nranks)
    assert all(torch.equal(x[0], x[r]) for r in range(nranks)), "ranks disagree bit-wise"
    assert_zero(sig)


@pytest.mark.parametrize("mode", ["mesh", "ring"])
@pytest.mark.parametrize("shape, dtype", [([1000], FP32), ([3, 5, 130], FP16), ([64, 64], BF16)],
                         ids=["1d-fp32", "3d-fp16", "2d-bf16"])
def test_allreduce_of_other_ranks_and_dtypes(mode, shape, dtype):
    nranks = 3
    cp = compiled("allreduce", [window(shape, dtype)], tiny_chunks=True, mode=mode)
    xs = [torch.rand(*shape).to(_TORCH[dtype]) for _ in range(nranks)]
    x, sig = run(cp, nranks, [(shape, dtype, xs), (signal_shape("allreduce", {"mode": mode}, nranks), INT32, None)])
    want = sum(t.float() for t in xs)
    tol = 1e-5 if dtype is FP32 else 2e-2
    assert_all_equal([t.float() for t in x], [want] * nranks, rtol=tol, atol=tol)
    assert_zero(sig)


@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_allreduce_integers_and_an_explicit_static_signal(mode):
    nranks = 3
    sig_shape = signal_shape("allreduce", {"mode": mode}, nranks)
    cp = compiled("allreduce", [window([7, 9], INT32), window(sig_shape, INT32)], mode=mode)
    xs = [torch.randint(-100, 100, (7, 9), dtype=torch.int32) for _ in range(nranks)]
    x, sig = run(cp, nranks, [([7, 9], INT32, xs), (sig_shape, INT32, None)])
    assert_all_equal(x, [sum(xs)] * nranks, 0, 0)
    assert_zero(sig)


@pytest.mark.parametrize("nranks", RANKS)
def test_barrier_leaves_the_signal_zero(nranks):
    cp = compiled("barrier", [mesh_signal()])
    (sig,) = run(cp, nranks, [([nranks, 1], INT32, None)])
    assert_zero(sig)


@pytest.mark.parametrize("nranks", RANKS)
def test_broadcast_from_every_root(nranks):
    for root in range(nranks):
        cp = compiled("broadcast", [window([5, 70], FP32), mesh_signal()], tiny_chunks=True, root=root)
        xs = [torch.randn(5, 70) for _ in range(nranks)]
        x, sig = run(cp, nranks, [([5, 70], FP32, xs), ([nranks, 1], INT32, None)])
        assert_all_equal(x, [xs[root]] * nranks, 0, 0)
        assert_zero(sig)


@pytest.mark.parametrize("nranks", RANKS)
def test_allgather(nranks):
    cp = compiled("allgather", [window([3, 50], FP32), window(["NR", 3, 50], FP32), mesh_signal()],
                  tiny_chunks=True)
    xs = [torch.randn(3, 50) for _ in range(nranks)]
    _, out, sig = run(cp, nranks, [([3, 50], FP32, xs), ([nranks, 3, 50], FP32, None), ([nranks, 1], INT32, None)])
    assert_all_equal(out, [torch.stack(xs)] * nranks, 0, 0)
    assert_zero(sig)


@pytest.mark.parametrize("op", list(ReduceOp))
@pytest.mark.parametrize("nranks", RANKS)
def test_reduce_scatter(op, nranks):
    cp = compiled("reduce_scatter", [window(["NR", 2, 45], FP32), mesh_signal()], tiny_chunks=True, op=op)
    xs = [torch.rand(nranks, 2, 45) + 0.5 for _ in range(nranks)]
    out, sig = run(cp, nranks, [([nranks, 2, 45], FP32, xs), ([nranks, 1], INT32, None)])
    full = REDUCE[op](xs)
    want = []
    for r in range(nranks):
        w = xs[r].clone()
        w[r] = full[r]    # only the own row changes
        want.append(w)
    assert_all_equal(out, want)
    assert_zero(sig)


@pytest.mark.parametrize("nranks", RANKS)
def test_all_to_all(nranks):
    cp = compiled("all_to_all", [window(["NR", 2, 40], FP32), window(["NR", 2, 40], FP32), mesh_signal()])
    xs = [torch.randn(nranks, 2, 40) for _ in range(nranks)]
    _, out, sig = run(cp, nranks, [([nranks, 2, 40], FP32, xs), ([nranks, 2, 40], FP32, None),
                                   ([nranks, 1], INT32, None)])
    assert_all_equal(out, [torch.stack([xs[s][r] for s in range(nranks)]) for r in range(nranks)], 0, 0)
    assert_zero(sig)


@pytest.mark.parametrize("nranks", RANKS)
def test_all_to_all_v_sends_each_peer_its_count(nranks):
    width = 77
    counts_t = window(["NR"], INT32)
    cp = compiled("all_to_all_v", [window(["NR", width], FP32), window(["NR", width], FP32), mesh_signal(),
                                   counts_t, counts_t])
    torch.manual_seed(10 + nranks)
    xs = [torch.randn(nranks, width) for _ in range(nranks)]
    counts = torch.randint(0, width + 1, (nranks, nranks), dtype=torch.int32)   # counts[s, p]: s sends p
    counts[0, nranks - 1] = width
    counts[nranks - 1, 0] = 0
    before = [torch.full((nranks, width), -7.0) for _ in range(nranks)]
    _, out, sig, _, _ = run(cp, nranks, [([nranks, width], FP32, xs), ([nranks, width], FP32, before),
                                         ([nranks, 1], INT32, None), ([nranks], INT32, list(counts)),
                                         ([nranks], INT32, [counts[:, r].clone() for r in range(nranks)])])
    want = []
    for r in range(nranks):
        w = before[r].clone()
        for s in range(nranks):
            n = int(counts[s, r])
            w[s, :n] = xs[s][r, :n]
        want.append(w)
    assert_all_equal(out, want, 0, 0)
    assert_zero(sig)


@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_the_reference_semantics_agree_with_the_lowering_bit_for_bit(mode):
    """The OpSpec's compute (the collective written directly against the Comm) and the lowered kernel
    give the same bits, and both leave the signal at zero; twice in a row on the same signal."""
    nranks, shape = 3, [6, 50]
    sig_shape = signal_shape("allreduce", {"mode": mode}, nranks)
    xs = [torch.rand(*shape) for _ in range(nranks)]
    world = ThreadWorld(nranks)
    x, sig = world.alloc(shape, torch.float32), world.alloc(sig_shape, torch.int32)
    for r in range(nranks):
        x[r].copy_(xs[r])
    compute = get_op("pld.allreduce").compute
    for _ in range(2):
        on_ranks(world, lambda r: compute(x[r], sig[r], op=ReduceOp.Sum, mode=mode, core_num=1))
    assert_zero(sig)
    lowered, lsig = run(compiled("allreduce", [window(shape, FP32)], tiny_chunks=True, mode=mode, op=ReduceOp.Sum),
                        nranks, [(shape, FP32, xs), (sig_shape, INT32, None)])
    lowered, _ = run(compiled("allreduce", [window(shape, FP32)], tiny_chunks=True, mode=mode, op=ReduceOp.Sum),
                     nranks, [(shape, FP32, lowered), (sig_shape, INT32, None)])
    if mode == "mesh":
        assert all(torch.equal(x[r], lowered[r]) for r in range(nranks))
    else:   # the ring adds in another order per segment: equal up to rounding
        assert_all_equal(lowered, list(x))


def test_every_collective_reference_leaves_the_signal_at_zero():
    nranks = 3
    world = ThreadWorld(nranks)
    sig = world.alloc([nranks, 1], torch.int32)
    t = world.alloc([nranks, 4, 8], torch.float32)
    u = world.alloc([nranks, 4, 8], torch.float32)
    v = world.alloc([nranks, 8], torch.float32)
    w = world.alloc([nranks, 8], torch.float32)
    cnt = world.alloc([nranks], torch.int32)
    for r in range(nranks):
        t[r].copy_(torch.randn(nranks, 4, 8))
        v[r].copy_(torch.randn(nranks, 8))
        cnt[r].fill_(5)
    t0 = [t[r].clone() for r in range(nranks)]

    def calls(r: int) -> None:
        get_op("pld.barrier").compute(sig[r])
        get_op("pld.all_to_all").compute(t[r], u[r], sig[r])
        get_op("pld.broadcast").compute(t[r], sig[r], root=1)
        get_op("pld.reduce_scatter").compute(u[r], sig[r], op=ReduceOp.Max)
        get_op("pld.allgather").compute(v[r][0], w[r], sig[r])
        get_op("pld.all_to_all_v").compute(v[r], w[r], sig[r], cnt[r], cnt[r])

    on_ranks(world, calls)
    assert_zero(sig)
    assert all(torch.equal(t[r], t0[1]) for r in range(nranks))      # broadcast from rank 1
    for r in range(nranks):
        swapped = torch.stack([t0[s][r] for s in range(nranks)])      # all_to_all, then its row r maxed
        assert torch.equal(u[r][r], torch.stack([torch.stack([t0[s][q] for s in range(nranks)])[r]
                                                 for q in range(nranks)]).amax(0))
        assert torch.equal(u[r][(r + 1) % nranks], swapped[(r + 1) % nranks])
        assert torch.equal(w[r][:, :5], torch.stack([v[s][r, :5] for s in range(nranks)]))
        assert torch.equal(w[r][:, 5:], torch.stack([v[s][0, 5:] for s in range(nranks)]))


NRD = pl.dynamic("NR")
STEPS = pl.dynamic("STEPS")


@pl.program
class Reuse:
    """One ring signal for four allreduces (three in a loop), one mesh signal for a barrier and
    two mesh collectives, in one kernel."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[4, 100], pl.FP32]],
          ring: pld.DistributedTensor[[STEPS, NRD], pl.INT32],
          mesh: pld.DistributedTensor[[NRD, 1], pl.INT32]) -> pld.DistributedTensor[[4, 100], pl.FP32]:
        for i in pl.range(3):
            x = pld.allreduce(x, ring, mode="ring")
            t = pl.load(x, [0, 0], [4, 100])
            t = pl.tile.muls(t, 0.5)
            x = pl.store(t, [0, 0], x)
        pld.allreduce(x, ring, op=pld.ReduceOp.Max, mode="ring")
        pld.barrier(mesh)
        pld.broadcast(x, mesh, root=1)
        pld.allreduce(x, mesh, op=pld.ReduceOp.Sum)
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.InOut[pld.DistributedTensor[[4, 100], pl.FP32]],
             ring: pld.DistributedTensor[[STEPS, NRD], pl.INT32],
             mesh: pld.DistributedTensor[[NRD, 1], pl.INT32]) -> pld.DistributedTensor[[4, 100], pl.FP32]:
        x = self.k(x, ring, mesh)
        return x


@functools.cache
def _reuse():
    return ir.compile(Reuse, skip_ptoas=True, dump_passes=False, diagnostic_phase="none")


@pytest.mark.parametrize("nranks", RANKS)
def test_signals_are_reused_across_calls_and_inside_a_loop(nranks):
    xs = [torch.rand(4, 100) for _ in range(nranks)]
    x, ring, mesh = run(_reuse(), nranks, [([4, 100], FP32, xs),
                                           (signal_shape("allreduce", {"mode": "ring"}, nranks), INT32, None),
                                           ([nranks, 1], INT32, None)])
    want = torch.stack(xs).sum(0) * 0.5
    for _ in range(2):
        want = (want * nranks) * 0.5     # every rank holds the same value after the first allreduce
    want = want * nranks                 # Max of equal values, broadcast, then the sum over ranks
    assert_all_equal(x, [want] * nranks, rtol=1e-5, atol=1e-4)
    assert_zero(ring)
    assert_zero(mesh)


@pl.program
class ScriptProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[4, 16], pl.FP32]],
          g: pl.InOut[pld.DistributedTensor[[NRD, 4, 16], pl.FP32]],
          sig: pld.DistributedTensor[[NRD, 1], pl.INT32]) -> tuple[pld.DistributedTensor[[4, 16], pl.FP32],
                                                                  pld.DistributedTensor[[NRD, 4, 16], pl.FP32]]:
        x = pld.allreduce(x, sig, op=pld.ReduceOp.Min)
        g = pld.allgather(x, g, sig)
        return x, g

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.InOut[pld.DistributedTensor[[4, 16], pl.FP32]],
             g: pl.InOut[pld.DistributedTensor[[NRD, 4, 16], pl.FP32]],
             sig: pld.DistributedTensor[[NRD, 1], pl.INT32]) -> tuple[pld.DistributedTensor[[4, 16], pl.FP32],
                                                                     pld.DistributedTensor[[NRD, 4, 16], pl.FP32]]:
        x, g = self.k(x, g, sig)
        return x, g


def test_the_torch_script_of_a_program_with_collectives_runs_under_the_comm():
    """`torch_codegen` of the program as written (collectives not lowered yet) reaches the peers
    through the same Comm, with the registry's reference semantics."""
    from pypto.debug import torch_codegen

    ns: dict = {}
    exec(torch_codegen(ScriptProgram), ns)   # noqa: S102
    nranks = 3
    world = ThreadWorld(nranks)
    x, g, sig = world.alloc([4, 16], torch.float32), world.alloc([nranks, 4, 16], torch.float32), \
        world.alloc([nranks, 1], torch.int32)
    xs = [torch.randn(4, 16) for _ in range(nranks)]
    for r in range(nranks):
        x[r].copy_(xs[r])
    on_ranks(world, lambda r: ns["run"](x[r], g[r], sig[r]))
    want = torch.stack(xs).amin(0)
    for r in range(nranks):
        assert torch.equal(x[r], want) and torch.equal(g[r], torch.stack([want] * nranks))
    assert_zero(sig)
