"""Cross-core pipe rings on the simulator (SPEC §6; DESIGN idea 5): where a pipe runs on chip, its
slots are the bytes memory planning reserved in the consumer core's arena (`PipeChannel.attach`),
so the tiles in flight sit there, and a tile planned over the ring corrupts them — wrong numbers,
and a sanitizer finding naming the ring."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from test_rt_cluster import KINDS, SPLITS, M, N, build, inputs

from pypto.backend import BackendType
from pypto.core.enums import MemorySpace
from pypto.ops.system import TO_AIC, TO_AIV, PipeChannel
from pypto.passes.pipe_rings import ring_uses
from pypto.passes.rewrite import MemRefRewriter
from pypto.runtime.sim import SanitizerError, SimDevice

A5 = (BackendType.Ascend950, "a5sim")


def ring_of(func):
    (u,) = ring_uses(func).values()
    return u.var


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_tile_shares_bytes_with_a_ring_while_the_loop_pops_from_it(tmp_path, kind, split):
    cp = build(tmp_path, kind, *A5, split=split)
    consumers = [f for f in cp.program.functions if ring_uses(f)]
    assert {f.name for f in consumers} == {"C2V": {"k_aiv"}, "V2C": {"k_aic"}, "BOTH": {"k_aiv", "k_aic"}}[kind]
    for f in consumers:
        ring = ring_of(f).type.memref
        lo, hi = ring.addr, ring.addr + ring.size
        tiles = {v.type.memref for v in _tile_vars(f) if v is not ring_of(f)}
        # every tile is defined before or inside the loop whose pops use the ring: none may overlap it
        clash = [m for m in tiles if m.memory_space is ring.memory_space and m.addr < hi and lo < m.addr + m.size]
        assert not clash, (f.name, ring, clash)


def _tile_vars(func):
    from pypto.ir import AssignStmt, IRVisitor, TileType

    out = []

    class V(IRVisitor):
        def visit_AssignStmt(self, s: AssignStmt) -> None:
            super().visit_AssignStmt(s)
            if isinstance(s.var.type, TileType):
                out.append(s.var)

    V().visit_function(func)
    return out


def test_the_slots_hold_the_tiles_in_flight_in_the_consumer_cores_arena(tmp_path):
    nb = 12   # 8 slots: slot s ends up holding the last row block i with i % 8 == s
    cp = build(tmp_path, "C2V", *A5, split="NONE", nb=nb)
    a, b, bias, c = inputs(nb)
    cp(a, b, bias, c)
    ring = ring_of(cp.program.get_function("k_aiv")).type.memref
    assert (ring.memory_space, ring.size) == (MemorySpace.Vec, 8 * M * N * 4)
    aiv = next(t for t in cp.last_run.tasks if t.core_type == "AIV")
    raw = cp.device.arena("AIV", aiv.core_index).buffer(MemorySpace.Vec)[ring.addr:ring.addr + ring.size]
    slots = raw.clone().view(torch.float32).view(8, M, N)
    for s in range(8):
        i = max(i for i in range(nb) if i % 8 == s)
        torch.testing.assert_close(slots[s], a[i * M:(i + 1) * M].float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_a_tile_planned_over_the_ring_gives_wrong_numbers_and_a_sanitizer_finding(tmp_path):
    cp = build(tmp_path, "C2V", *A5, split="NONE")
    k = cp.program.get_function("k_aiv")
    bt = next(v for v in _tile_vars(k) if v.name == "bt").type.memref   # bias row, live through the loop

    class OntoTheRing(MemRefRewriter):   # a memory-planning bug: the bias row at the ring's address
        def rewrite_memref(self, m):
            return replace(m, addr=0) if (m.memory_space, m.id) == (bt.memory_space, bt.id) else m

    bad = OntoTheRing().visit_function(k)
    prog = replace(cp.program, functions=tuple(bad if f is k else f for f in cp.program.functions))
    dev, main = SimDevice(BackendType.Ascend950), prog.get_function("main")
    a, b, bias, c = inputs()
    dev.run(prog, main, [a, b, bias, c])
    assert not torch.allclose(c, KINDS["C2V"][1](a, b, bias), rtol=1e-3, atol=1e-3)
    with pytest.raises(SanitizerError) as e:
        dev.run(prog, main, [a, b, bias, torch.zeros_like(c)], sanitize=True)
    (f,) = e.value.findings
    assert f.kind == "overlapping-live-buffers" and f.kernel == "k_aiv"
    assert "reads tile 'bt'" in f.message and "overwritten by tile 'c2v_ring'" in f.message
    assert "system.tpop_from_aic" in f.message


# ---- PipeChannel with rings --------------------------------------------------------------------

def test_tiles_pushed_before_the_ring_is_attached_move_into_their_slots():
    ch = PipeChannel(depth=2)
    t0, t1 = torch.arange(8, dtype=torch.float32).view(2, 4), torch.full((2, 4), 7.0)
    ch.push(TO_AIV, (0,), [t0])
    ch.push(TO_AIV, (0,), [t1])
    ring = torch.zeros(2, 64, dtype=torch.uint8)
    ch.attach(TO_AIV, 0, ring)
    assert torch.equal(ring[0, :32].view(torch.float32).view(2, 4), t0)
    assert torch.equal(ring[1, :32].view(torch.float32).view(2, 4), t1)
    ch.attach(TO_AIV, 0, ring)   # the same tile again: nothing changes
    assert torch.equal(ch.pop(TO_AIV, (0,), 0)[0], t0)
    ch.free(TO_AIV, 0)
    t2 = torch.full((2, 4), -1.0)
    ch.push(TO_AIV, (0,), [t2])   # straight into the freed slot 0
    assert torch.equal(ring[0, :32].view(torch.float32).view(2, 4), t2)
    ring[1, :4] = 0               # the consumer overwrote slot 1 while its tile was in flight
    got = ch.pop(TO_AIV, (0,), 0)[0]
    assert got[0, 0].item() == 0.0 and torch.equal(got[1], t1[1])
    assert torch.equal(ch.pop(TO_AIV, (0,), 0)[0], t2)


def test_the_cube_cores_ring_tile_holds_one_ring_per_vector_core():
    ch = PipeChannel(depth={TO_AIC: 2})
    ring = torch.zeros(4, 32, dtype=torch.uint8)
    ch.attach(TO_AIC, 0, ring)
    ch.push(TO_AIC, (1,), [torch.ones(2, 4)])    # vector core 1's first half: its ring, rows 2..3
    assert ring[2, :32].view(torch.float32).eq(1).all() and not ring[:2].any()
    ch.push(TO_AIC, (0,), [torch.full((2, 4), 2.0)])
    assert [x[0, 0].item() for x in ch.pop(TO_AIC, (0, 1), 0)] == [2.0, 1.0]


def test_a_ring_that_does_not_fit_the_pipe_is_an_error():
    ch = PipeChannel(depth=4)
    with pytest.raises(RuntimeError, match=r"has 6 slots, which is not a whole number of rings of the pipe's 4"):
        ch.attach(TO_AIV, 0, torch.zeros(6, 64, dtype=torch.uint8))
    ch.attach(TO_AIV, 0, torch.zeros(4, 16, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match=r"a tile of 32 bytes does not fit the 16-byte slots"):
        ch.push(TO_AIV, (0,), [torch.zeros(2, 4)])
    with pytest.raises(RuntimeError, match="already has its slots in another ring tile"):
        ch.attach(TO_AIV, 0, torch.zeros(4, 16, dtype=torch.uint8))
    unbounded = PipeChannel()
    unbounded.attach(TO_AIV, 0, torch.zeros(3, 8, dtype=torch.uint8))   # no slots to keep: ignored
    assert unbounded.rings == {}
