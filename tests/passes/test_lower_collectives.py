"""LowerCollectives (SPEC §8 "Collectives"): the chunk plan, the pipeline position, the lowered IR of
a kernel-level collective, and its errors. Numerics on several ranks: test_lower_collectives_ranks.py."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.dtype import FP16, FP32, INT8
from pypto.core.enums import FunctionType
from pypto.core.errors import CompileError, InvalidOperationError
from pypto.passes.base import PassContext
from pypto.passes.collective_builder import ChunkGroup, plan_chunks
from pypto.passes.lower_collectives import LowerCollectives
from pypto.passes.pipeline import DEBUG_TILE_PIPELINE, DEFAULT_PIPELINE

NR = pl.dynamic("NR")
STEPS = pl.dynamic("STEPS")


def lower(prog):
    return LowerCollectives().run(prog, PassContext())


def covered(shape: tuple[int, ...], groups: list[ChunkGroup]) -> torch.Tensor:
    """How often each element is covered by the planned tiles."""
    hits = torch.zeros(shape, dtype=torch.int32)
    seen = []
    for g in groups:
        for idx in itertools.product(*(range(c) for c in g.count)):
            off = [b + i * t for b, i, t in zip(g.base, idx, g.tile)]
            hits[tuple(slice(o, o + t) for o, t in zip(off, g.tile))] += 1
            seen.append(g.first + sum(i * s for i, s in zip(idx, _strides(g.count))))
    assert sorted(seen) == list(range(len(seen))), "linear tile indices are not 0..n-1"
    return hits


def _strides(count: tuple[int, ...]) -> list[int]:
    out, s = [], 1
    for c in reversed(count):
        out.append(s)
        s *= c
    return out[::-1]


def test_a_small_tensor_is_one_tile():
    assert plan_chunks((5, 40), FP32, 4096) == [ChunkGroup((5, 40), (0, 0), (1, 1), 0)]


def test_rows_too_wide_are_cut_at_32_byte_multiples_with_a_remainder_tile():
    groups = plan_chunks((5, 300), FP32, 1024)        # 256 FP32 per tile
    assert groups == [ChunkGroup((1, 256), (0, 0), (5, 1), 0), ChunkGroup((1, 44), (0, 256), (5, 1), 5)]


def test_rows_are_grouped_up_to_the_budget_and_leading_axes_go_one_at_a_time():
    assert plan_chunks((2, 30, 16), FP16, 512) == [ChunkGroup((1, 16, 16), (0, 0, 0), (2, 1, 1), 0),
                                                   ChunkGroup((1, 14, 16), (0, 16, 0), (2, 1, 1), 2)]
    assert plan_chunks((1000,), FP32, 1024) == [ChunkGroup((256,), (0,), (3,), 0), ChunkGroup((232,), (768,), (1,), 3)]


@pytest.mark.parametrize("shape, dtype, budget", [
    ((7, 300), FP32, 1024), ((33, 33), FP16, 256), ((3, 5, 70), INT8, 64), ((999,), FP32, 100), ((1, 1), FP32, 4)])
def test_the_tiles_cover_every_element_once(shape, dtype, budget):
    groups = plan_chunks(shape, dtype, budget)
    assert bool((covered(shape, groups) == 1).all())
    for g in groups:
        n = 1
        for t in g.tile:
            n *= t
        assert n * dtype.get_bit() // 8 <= max(budget, 32), f"tile {g.tile} exceeds the budget"


def test_the_pass_runs_first_after_inlining_in_both_pipelines():
    for pipeline in (DEFAULT_PIPELINE, DEBUG_TILE_PIPELINE):
        assert pipeline.index(LowerCollectives) == 1 and pipeline[0].__name__ == "InlineFunctions"


# ---- Before / Expected ------------------------------------------------------------------------

@pl.program
class MeshBefore:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
          sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
        pld.allreduce(x, sig, op=pld.ReduceOp.Max)  # MESH
        return x


@pl.program
class MeshExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
          sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
        ar0_ctx: pld.CommCtx = pld.get_comm_ctx(sig)
        ar0_me: pl.Scalar[pl.INDEX] = pl.cast(pld.rank(ar0_ctx), pl.INDEX)
        ar0_nr: pl.Scalar[pl.INDEX] = pl.cast(pld.nranks(ar0_ctx), pl.INDEX)
        ar0_step: pl.Scalar[pl.INDEX] = 0
        # rendezvous 1: every rank's x is ready
        ar0_step: pl.Scalar[pl.INDEX] = ar0_step + 1
        for ar0_to_i in pl.range(1, ar0_nr, 1):
            ar0_to: pl.Scalar[pl.INDEX] = (ar0_me + ar0_to_i) % ar0_nr
            pld.system.notify(sig, ar0_to, [ar0_me, 0], 1, op=pld.NotifyOp.AtomicAdd)
        for ar0_from_i in pl.range(1, ar0_nr, 1):
            ar0_from: pl.Scalar[pl.INDEX] = (ar0_me + ar0_from_i) % ar0_nr
            pld.system.wait(sig, [ar0_from, 0], ar0_step, cmp=pld.WaitCmp.Ge)
        # the one chunk (index 0) is owned by rank 0 % nr: it reduces rank 0's, then every other rank's
        if (0 % ar0_nr) == ar0_me:
            ar0_acc: pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec] = pld.tile.remote_load(x, 0, [0, 0], [8, 64])
            for ar0_q in pl.range(1, ar0_nr, 1):
                ar0_part: pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec] = pld.tile.remote_load(x, ar0_q, [0, 0], [8, 64])
                ar0_acc: pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec] = pl.tile.maximum(ar0_acc, ar0_part)
            x: pld.DistributedTensor[[8, 64], pl.FP32] = pl.tile.store(ar0_acc, [0, 0], x)
        # rendezvous 2: every chunk is final at its owner
        ar0_step: pl.Scalar[pl.INDEX] = ar0_step + 1
        for ar0_to_i_1 in pl.range(1, ar0_nr, 1):
            ar0_to_1: pl.Scalar[pl.INDEX] = (ar0_me + ar0_to_i_1) % ar0_nr
            pld.system.notify(sig, ar0_to_1, [ar0_me, 0], 1, op=pld.NotifyOp.AtomicAdd)
        for ar0_from_i_1 in pl.range(1, ar0_nr, 1):
            ar0_from_1: pl.Scalar[pl.INDEX] = (ar0_me + ar0_from_i_1) % ar0_nr
            pld.system.wait(sig, [ar0_from_1, 0], ar0_step, cmp=pld.WaitCmp.Ge)
        # the other ranks copy the chunk from its owner
        ar0_owner: pl.Scalar[pl.INDEX] = 0 % ar0_nr
        if ar0_owner != ar0_me:
            ar0_part_1: pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec] = pld.tile.remote_load(x, ar0_owner, [0, 0], [8, 64])
            x: pld.DistributedTensor[[8, 64], pl.FP32] = pl.tile.store(ar0_part_1, [0, 0], x)
        # rendezvous 3: nobody reads this rank's x any more
        ar0_step: pl.Scalar[pl.INDEX] = ar0_step + 1
        for ar0_to_i_2 in pl.range(1, ar0_nr, 1):
            ar0_to_2: pl.Scalar[pl.INDEX] = (ar0_me + ar0_to_i_2) % ar0_nr
            pld.system.notify(sig, ar0_to_2, [ar0_me, 0], 1, op=pld.NotifyOp.AtomicAdd)
        for ar0_from_i_2 in pl.range(1, ar0_nr, 1):
            ar0_from_2: pl.Scalar[pl.INDEX] = (ar0_me + ar0_from_i_2) % ar0_nr
            pld.system.wait(sig, [ar0_from_2, 0], ar0_step, cmp=pld.WaitCmp.Ge)
        # self-clearing: take back what the peers added to my cells
        for ar0_own_i in pl.range(1, ar0_nr, 1):
            ar0_own: pl.Scalar[pl.INDEX] = (ar0_me + ar0_own_i) % ar0_nr
            pld.system.notify(sig, ar0_me, [ar0_own, 0], 0 - ar0_step, op=pld.NotifyOp.AtomicAdd)
        return x


def test_mesh_allreduce_becomes_owner_reduce_then_gather_between_rendezvous():
    ir.assert_structural_equal(lower(MeshBefore), MeshExpected)


@pl.program
class RingBefore:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
          sig: pld.DistributedTensor[[STEPS, NR], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
        y = pld.allreduce(x, sig, mode="ring")
        return y


@pl.program
class RingExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
          sig: pld.DistributedTensor[[STEPS, NR], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
        ar0_ctx: pld.CommCtx = pld.get_comm_ctx(sig)
        ar0_me: pl.Scalar[pl.INDEX] = pl.cast(pld.rank(ar0_ctx), pl.INDEX)
        ar0_nr: pl.Scalar[pl.INDEX] = pl.cast(pld.nranks(ar0_ctx), pl.INDEX)
        if ar0_nr > 1:
            ar0_prev: pl.Scalar[pl.INDEX] = (ar0_me + (ar0_nr - 1)) % ar0_nr
            ar0_next: pl.Scalar[pl.INDEX] = (ar0_me + 1) % ar0_nr
            pld.system.notify(sig, ar0_next, [0, ar0_me], 1, op=pld.NotifyOp.AtomicAdd)
            for ar0_t in pl.range(0, (ar0_nr * 2) - 2, 1):
                pld.system.wait(sig, [ar0_t, ar0_prev], 1, cmp=pld.WaitCmp.Ge)
                ar0_seg: pl.Scalar[pl.INDEX] = ((ar0_me + ((ar0_nr * 2) - 1)) - ar0_t) % ar0_nr
                # the tiles j of segment seg (j % nr == seg) are seg, seg + nr, ...: a loop over exactly those
                if ar0_t < (ar0_nr - 1):     # reduce-scatter: add the predecessor's partial sums
                    for ar0_g0_k in pl.range(0, ((8 - ar0_seg) + (ar0_nr - 1)) // ar0_nr, 1):
                        ar0_g0_j: pl.Scalar[pl.INDEX] = ar0_seg + (ar0_g0_k * ar0_nr)
                        ar0_mine: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(
                            x, [ar0_g0_j, 0], [1, 64], target_memory=pl.Mem.Vec)
                        ar0_part: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pld.tile.remote_load(
                            x, ar0_prev, [ar0_g0_j, 0], [1, 64])
                        ar0_mine: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(ar0_mine, ar0_part)
                        x: pld.DistributedTensor[[8, 64], pl.FP32] = pl.tile.store(ar0_mine, [ar0_g0_j, 0], x)
                if ar0_t >= (ar0_nr - 1):    # allgather: copy the predecessor's finished segment
                    for ar0_g0_k_1 in pl.range(0, ((8 - ar0_seg) + (ar0_nr - 1)) // ar0_nr, 1):
                        ar0_g0_j_1: pl.Scalar[pl.INDEX] = ar0_seg + (ar0_g0_k_1 * ar0_nr)
                        ar0_part_1: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pld.tile.remote_load(
                            x, ar0_prev, [ar0_g0_j_1, 0], [1, 64])
                        x: pld.DistributedTensor[[8, 64], pl.FP32] = pl.tile.store(ar0_part_1, [ar0_g0_j_1, 0], x)
                if (ar0_t + 1) < ((ar0_nr * 2) - 2):
                    pld.system.notify(sig, ar0_next, [ar0_t + 1, ar0_me], 1, op=pld.NotifyOp.AtomicAdd)
            pld.system.notify(sig, ar0_prev, [0, ar0_me], 1, op=pld.NotifyOp.AtomicAdd)
            pld.system.wait(sig, [0, ar0_next], 1 + pl.max(0, 3 - ar0_nr), cmp=pld.WaitCmp.Ge)
            for ar0_c in pl.range(0, (ar0_nr * 2) - 2, 1):
                pld.system.notify(sig, ar0_me, [ar0_c, ar0_prev], -1, op=pld.NotifyOp.AtomicAdd)
            pld.system.notify(sig, ar0_me, [0, ar0_next], -1, op=pld.NotifyOp.AtomicAdd)
        y: pld.DistributedTensor[[8, 64], pl.FP32] = x
        return y


def test_ring_allreduce_deals_row_tiles_to_segments_and_steps_around_the_ring():
    ir.assert_structural_equal(lower(RingBefore), RingExpected)


@pl.program
class BarrierBefore:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, sig: pld.DistributedTensor[[NR, 1], pl.INT32]):
        pld.barrier(sig)


def test_a_barrier_is_one_rendezvous_and_the_clearing():
    text = lower(BarrierBefore).as_python()
    assert text.count("pld.system.notify(") == 2 and text.count("pld.system.wait(") == 1
    assert "pld.system.notify(sig, bar0_me, [bar0_own, 0], 0 - bar0_step" in text


def test_programs_without_collectives_are_left_alone():
    @pl.program
    class Plain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.InOut[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
            t = pl.load(x, [0, 0], [8, 8])
            x = pl.store(t, [0, 0], x)
            return x

    assert lower(Plain) is Plain


# ---- errors ----------------------------------------------------------------------------------

def _line(marker: str) -> int:
    from pathlib import Path

    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, hits
    return hits[0]


def test_a_collective_in_chip_orchestration_code_is_refused():
    """The parser refuses it at the user's line (no "orchestration" trait); IR built otherwise meets
    the same refusal in the pass."""
    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class Orch:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
                     sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
                pld.allreduce(x, sig)  # ORCH
                return x
    assert "'pld.allreduce' in Orchestration function" in e.value.message
    assert e.value.span.begin_line == _line("ORCH")

    k = MeshBefore.functions[0]
    orch = replace(MeshBefore, functions=(replace(k, func_type=FunctionType.Orchestration),))
    with pytest.raises(CompileError) as e2:
        lower(orch)
    assert e2.value.message.startswith("'pld.allreduce' in chip orchestration function 'k': a collective moves "
                                       "data between the ranks' windows, which kernels do; call it inside a kernel")
    assert e2.value.span.begin_line == _line("MESH")


def test_a_kernel_allreduce_needs_a_signal():
    @pl.program
    class NoSignal:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
            pld.allreduce(x)  # NOSIG
            return x

    with pytest.raises(CompileError) as e:
        lower(NoSignal)
    assert e.value.message.startswith("pld.allreduce in a kernel needs a signal: a window-bound "
                                      "pld.DistributedTensor of INT32 cells, shape [NR, 1] for mode=\"mesh\"")
    assert e.value.span.begin_line == _line("NOSIG")


def test_a_kernel_with_a_collective_is_not_launched_inside_pl_spmd():
    @pl.program
    class Spmd:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
              sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
            x = pld.allreduce(x, sig)
            return x

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
                 sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[8, 64], pl.FP32]:
            with pl.spmd(core_num=4):
                x = self.k(x, sig)  # SPMD
            return x

    with pytest.raises(CompileError) as e:
        lower(Spmd)
    assert e.value.message.startswith("'k' calls 'pld.allreduce', but this pl.spmd launch runs it on several "
                                      "cores: a collective must run once per rank")
    assert e.value.span.begin_line == _line("SPMD")


# ---- chunk budget ---------------------------------------------------------------------------------

@pl.program
class LoneBig:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[1024, 1024], pl.FP32]],
          sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[1024, 1024], pl.FP32]:
        pld.allreduce(x, sig)
        return x


@pl.program
class BusyBig:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.InOut[pld.DistributedTensor[[1024, 1024], pl.FP32]],
          sig: pld.DistributedTensor[[NR, 1], pl.INT32]) -> pld.DistributedTensor[[1024, 1024], pl.FP32]:
        t: pl.Tile[[8, 1024], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 1024], target_memory=pl.Mem.Vec)
        x: pld.DistributedTensor[[1024, 1024], pl.FP32] = pl.tile.store(t, [0, 0], x)
        pld.allreduce(x, sig)
        return x


def _remote_load_shapes(prog) -> set[str]:
    import re

    return set(re.findall(r"pld\.tile\.remote_load\([^\n]*?, (\[\d+, \d+\])\)", lower(prog).as_python()))


def test_a_kernel_that_is_only_its_collective_gets_a_third_of_vec_per_chunk():
    # Ascend910B Vec: 188416 B usable. Alone, a chunk may take a third (62805 B: 15 rows of 4 KiB, with a
    # 4-row remainder tile); next to the kernel's own tiles an eighth (23552 B: 5 rows, remainder 4 rows)
    assert _remote_load_shapes(LoneBig) == {"[15, 1024]", "[4, 1024]"}
    assert _remote_load_shapes(BusyBig) == {"[5, 1024]", "[4, 1024]"}
