"""Cross-core pipe rings in memory planning (SPEC §6 "Cross-core pipe ring depth"; Language Guide
"InCore Scopes", `pl.cross_core_slot`): the consumer of a pipe that runs on chip reserves
slots × slot_bytes of its Vec / Mat (InitMemRef, `pipe_rings`), AllocateMemoryAddr places and
capacity-checks the ring, the memory report shows it; through DDR (Ascend910B) nothing is reserved."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, get_soc
from pypto.core.errors import CompileError, MemoryCapacityError
from pypto.passes.base import PassContext
from pypto.passes.init_memref import InitMemRef
from pypto.passes.pipe_rings import add_pipe_rings
from pypto.runtime import RunConfig

A5, B910 = get_soc(BackendType.Ascend950), get_soc(BackendType.Ascend910B)
UD, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.NONE

_PIPED = """
import pypto.language as pl

@pl.program
class Piped:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16]):
        a1 = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        pl.system.tpush_to_aiv(p, split={split})
        return

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        p = pl.system.tpop_from_aic([{rows}, 32], dtype=pl.FP32, split={split})
        r = pl.relu(p)
        pl.system.tfree_to_aic(p)
        c = pl.store(r, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Group{gopts})
    def grp(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
            c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        self.cube(a, b)
        c = self.vec(c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        c = self.grp(a, b, c)
        return c
"""


def piped(split: str = "NONE", gopts: str = "") -> ir.Program:
    rows = 32 if split != "NONE" else 64
    return pl.parse(_PIPED.format(split=f"pl.SplitMode.{split}", rows=rows, gopts=gopts))


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        # one direction live: 8 slots, each a vector core's [32, 32] FP32 half (4096 B in Vec)
        ring: pl.Tile[[8, 4096], pl.UINT8, pl.Mem.Vec] = pl.tile.create([8, 4096], dtype=pl.UINT8,
                                                                          target_memory=pl.Mem.Vec)
        p: pl.Tile[[32, 32], pl.FP32, pl.Mem.Vec] = pl.system.tpop_from_aic([32, 32], ring, dtype=pl.FP32,
                                                                            split=UD)
        r: pl.Tile[[32, 32], pl.FP32, pl.Mem.Vec] = pl.tile.relu(p)
        pl.system.tfree_to_aic(p)
        c = pl.store(r, [0, 0], c)
        return c


def test_the_consumer_of_an_on_chip_pipe_gets_a_ring_its_pops_name():
    before = piped("UP_DOWN", ", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]")
    after = add_pipe_rings(before.get_function("vec"), before, A5)
    ir.assert_structural_equal(after, Expected.get_function("vec"))
    # the producer reserves nothing: its push writes the consumer's memory
    assert add_pipe_rings(before.get_function("cube"), before, A5) is before.get_function("cube")


def test_through_ddr_nothing_is_reserved_on_chip():
    before = piped("UP_DOWN")
    assert add_pipe_rings(before.get_function("vec"), before, B910) is before.get_function("vec")


@pytest.mark.parametrize("gopts,slots", [("", 8), (", optimizations=[pl.cross_core_slot(slot_num=3)]", 3)])
def test_the_ring_holds_the_pipe_depth(gopts, slots):
    before = piped("NONE", gopts)
    ring = add_pipe_rings(before.get_function("vec"), before, A5).body.stmts[0].var
    assert [d.value for d in ring.type.shape] == [slots, 64 * 32 * 4]


def test_kernels_outside_a_group_and_pops_naming_their_own_ring_are_left_alone():
    prog = piped("NONE")
    lone = replace(prog, functions=tuple(f for f in prog.functions if f.name != "grp"))   # no Group calls vec
    assert add_pipe_rings(lone.get_function("vec"), lone, A5) is lone.get_function("vec")
    prog = piped("UP_DOWN", ", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]")
    own = add_pipe_rings(prog.get_function("vec"), prog, A5)
    prog = replace(prog, functions=tuple(own if f.name == "vec" else f for f in prog.functions))
    assert add_pipe_rings(own, prog, A5) is own


_V2C = """
import pypto.language as pl

@pl.program
class V2C:
    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[64, 32], pl.FP16]):
        t = pl.load(a, [0, 0], {vshape})
        pl.system.tpush_to_aic(t, split={split})
        return

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, b: pl.Tensor[[32, 32], pl.FP16], c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        a1 = pl.system.tpop_from_aiv([64, 32], dtype=pl.FP16, split={split})
        b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        pl.system.tfree_to_aiv(a1)
        c = pl.store(p, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Group, optimizations=[{opts}])
    def grp(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
            c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        self.vec(a)
        c = self.cube(b, c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        c = self.grp(a, b, c)
        return c
"""


@pytest.mark.parametrize("split,vshape,slots,slot_bytes", [
    ("UP_DOWN", [32, 32], 2 * 2, 32 * 32 * 2),   # a ring per vector core; a slot: a [32, 32] FP16 half
    ("LEFT_RIGHT", [64, 16], 2 * 2, 64 * 32),    # a [64, 16] FP16 half: 64 rows of 32 bytes
    ("NONE", [64, 32], 2, 64 * 32 * 2),          # one vector core, whole tiles
])
def test_the_cube_core_hosts_its_ring_in_mat_as_plain_bytes(split, vshape, slots, slot_bytes):
    opts = f"pl.split(pl.SplitMode.{split}), pl.cross_core_slot(slot_num=2)"
    prog = pl.parse(_V2C.format(split=f"pl.SplitMode.{split}", vshape=vshape, opts=opts))
    out = InitMemRef().run(prog, PassContext(BackendType.Ascend950))
    cube = out.get_function("cube")
    ring = cube.body.stmts[0].var
    assert ring.name == "v2c_ring" and ring.type.memory_space is pl.Mem.Mat
    assert [d.value for d in ring.type.shape] == [slots, slot_bytes]
    # a byte array: no 16-row fractal boxes, exactly slots x slot_bytes
    assert ring.type.memref.size == slots * slot_bytes
    assert f"pl.system.tpop_from_aiv([64, 32], {ring.name}," in cube.as_python()
    assert "tile.create" not in out.get_function("vec").as_python()   # the producer reserves nothing


def test_groups_that_disagree_on_the_ring_are_an_error():
    text = _PIPED.format(split="pl.SplitMode.NONE", rows=64, gopts="")
    grp2 = text[text.index("    @pl.function(type=pl.FunctionType.Group"):text.index("    @pl.function(type=pl.FunctionType.Orch")]
    grp2 = grp2.replace("pl.FunctionType.Group", "pl.FunctionType.Group, optimizations=[pl.cross_core_slot(slot_num=2)]")
    prog = pl.parse(text.replace("    @pl.function(type=pl.FunctionType.Orch", grp2.replace("def grp", "def grp2")
                                 + "    @pl.function(type=pl.FunctionType.Orch"))
    with pytest.raises(CompileError, match=r"kernel 'vec' is called by Group functions grp, grp2 with different "
                                           r"cross-core pipe rings"):
        add_pipe_rings(prog.get_function("vec"), prog, A5)


# ---- the Language Guide's scenario: "Shrink the ring to 4 slots to free buffer space for a larger tile"

@pl.jit
def mm_relu_add(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        c[:] = pl.add(pl.relu(pl.matmul(a, b)), w)
    return c


@pl.jit
def mm_relu_add_4(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP,
               optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]):
        c[:] = pl.add(pl.relu(pl.matmul(a, b)), w)
    return c


N = 224   # each vector core receives [32, 224] FP32 halves: 28 KiB per slot


def _args():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=g).half(), torch.randn(64, N, generator=g).half()
    return a, b, torch.randn(64, N, generator=g), torch.zeros(64, N)


def test_eight_slots_leave_no_room_for_the_tiles_and_the_error_says_how_to_shrink_the_ring():
    slot = 32 * N * 4
    with pytest.raises(MemoryCapacityError) as e:
        mm_relu_add.compile(*_args(), config=RunConfig(platform="a5sim"))
    msg = e.value.message
    assert msg.startswith("function 'mm_relu_add_incore_0_aiv': its tiles and cross-core pipe ring need ")
    assert f"but Ascend950 has only {240 * 1024} bytes of Vec per core" in msg
    assert f"ring 'c2v_ring' of pipe AIC->AIV (8 slots of {slot} B) takes Vec [0, {8 * slot})" in msg
    assert f"tile 'matmul_tile_vec' ({slot} B at [{8 * slot}, {9 * slot}), line " in msg and "no longer fits" in msg
    assert "shrink the ring with pl.cross_core_slot(slot_num=7)" in msg
    assert e.value.span.is_known() and e.value.span.filename == __file__


def test_four_slots_fit_run_like_torch_and_show_in_the_memory_report():
    a, b, w, c = _args()
    mm_relu_add_4(a, b, w, c, config=RunConfig(platform="a5sim", sanitize=True))
    torch.testing.assert_close(c, torch.relu(a.float() @ b.float()) + w, rtol=1e-3, atol=1e-3)
    cp = mm_relu_add_4.compile(a, b, w, c, config=RunConfig(platform="a5sim"))
    usage = json.loads((Path(cp.output_dir) / "report" / "memory_usage.json").read_text())
    vec = usage["mm_relu_add_4_incore_0_aiv"]["Vec"]
    slot = 32 * N * 4
    assert vec["rings"] == [{"name": "c2v_ring", "direction": "AIC->AIV", "addr": 0, "bytes": 4 * slot,
                             "slots": 4, "slot_bytes": slot}]
    assert 4 * slot + slot <= vec["peak"] <= vec["capacity"]   # the ring plus at least the popped tile
    assert "rings" not in usage["mm_relu_add_4_incore_0_aic"].get("Mat", {})


def test_the_same_kernel_reserves_no_ring_on_ascend910b():
    a, b, w, c = (x[:, :96] if x.shape[1] == N else x for x in _args())
    mm_relu_add(a, b, w, c, config=RunConfig(platform="a2a3sim", sanitize=True))
    torch.testing.assert_close(c, torch.relu(a.float() @ b.float()) + w, rtol=1e-3, atol=1e-3)
    cp = mm_relu_add.compile(a, b, w, c, config=RunConfig(platform="a2a3sim"))
    usage = json.loads((Path(cp.output_dir) / "report" / "memory_usage.json").read_text())
    assert not any("rings" in spaces for kernel in usage.values() for spaces in kernel.values())
    assert "tile.create" not in cp.program.get_function("mm_relu_add_incore_0_aiv").as_python()


def test_the_suggested_ring_depth_compiles():
    @pl.jit
    def mm_relu_add_7(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP,
                   optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=7)]):
            c[:] = pl.add(pl.relu(pl.matmul(a, b)), w)
        return c

    a, b, w, c = _args()
    mm_relu_add_7(a, b, w, c, config=RunConfig(platform="a5sim"))
    torch.testing.assert_close(c, torch.relu(a.float() @ b.float()) + w, rtol=1e-3, atol=1e-3)
