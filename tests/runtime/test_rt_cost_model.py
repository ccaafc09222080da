"""Cost model: one documented constant table; op and task cycles from element counts, bytes and the
cube's block rate (issue 6)."""

import math

import pytest
from rt_ir import FP16, FP32, Acc, Left, Mat, Right, Vec, call, tensor_t, tile, tup

from pypto.backend import BackendType, get_soc
from pypto.core.enums import MemorySpace
from pypto.ir import Var
from pypto.ops import get_op
from pypto.runtime.sim.cost_model import (
    CONSTANTS,
    PIPES,
    OpCost,
    const,
    copy_cost,
    cycles_to_us,
    op_cost,
    task_cost,
)

SOC = get_soc(BackendType.Ascend910B)
SOC5 = get_soc(BackendType.Ascend950)


def test_every_constant_has_a_unit_and_a_source() -> None:
    assert {"clock_ghz", "vector_bytes_per_cycle", "cube_blocks_per_cycle", "mte2_bytes_per_cycle",
            "task_launch", "orch_submit"} <= set(CONSTANTS)
    for name, c in CONSTANTS.items():
        assert c.value > 0 and c.unit, name
        assert (c.source.startswith("estimate") or "Hot Chips" in c.source or "SPEC" in c.source
                or "CANN platform configuration" in c.source), name
    with pytest.raises(KeyError, match="no constant 'nope'"):
        const("nope")
    assert cycles_to_us(const("clock_ghz") * 1e3) == pytest.approx(1.0)


def _cost(op, args, result, soc=SOC, **kw):
    c = call(op, args, result, **kw)
    return op_cost(get_op(op), c, soc)


def test_vector_op_cycles_from_bytes() -> None:
    a, b = tile("a", (128, 128), FP32, Vec, 0), tile("b", (128, 128), FP32, Vec, 65536)
    c = tile("c", (128, 128), FP32, Vec, 0)
    got = _cost("tile.add", [a, b], c.type)
    assert got.pipe == "vector" and got.path is None
    assert got.cycles == const("vector_issue") + 128 * 128 * 4 // 256
    h = tile("h", (128, 128), FP16, Vec, 0)
    assert _cost("tile.add", [h, h], h.type).cycles == const("vector_issue") + 128 * 128 * 2 // 256


def test_cube_cycles_from_the_block_rate() -> None:
    left, right = tile("l", (128, 128), FP16, Left, 0), tile("r", (128, 128), FP16, Right, 0)
    acc = tile("acc", (128, 128), FP32, Acc, 0)
    got = _cost("tile.matmul", [left, right], acc.type)
    # 16 x 16 x 16 FP16 MACs per cycle: 8 * 8 * 8 blocks
    assert got == OpCost("cube", int(const("cube_issue")) + 512)
    l32, r32 = tile("l", (128, 128), FP32, Left, 0), tile("r", (128, 128), FP32, Right, 0)
    # FP32 operands: a block holds 32 bytes = 8 elements of K, so twice the blocks
    assert _cost("tile.matmul", [l32, r32], acc.type).cycles == const("cube_issue") + 2 * 512
    # accumulating into an FP32 Acc: the rate follows the FP16 Left operand, not the accumulator
    assert _cost("tile.matmul_acc", [acc, left, right], acc.type).cycles == const("cube_issue") + 512


def test_memory_ops_charge_their_path_and_whole_ddr_granules() -> None:
    src = Var("a", tensor_t((256, 256)))
    t = tile("t", (128, 128), FP32, Vec, 0)
    load = _cost("tile.load", [src, tup(0, 0), tup(128, 128)], t.type, target_memory=Vec)
    assert load.pipe == "mte2" and load.path == (MemorySpace.DDR, MemorySpace.Vec)
    assert load.nbytes == 65536
    assert load.cycles == const("mte_issue") + math.ceil(65536 / const("mte2_bytes_per_cycle"))
    # 8-byte rows: each row still costs one 512-byte granule on Ascend910B, 128 on Ascend950
    narrow = tile("n", (64, 2), FP32, Vec, 0)
    n910 = _cost("tile.load", [src, tup(0, 0), tup(64, 2)], narrow.type, target_memory=Vec)
    n950 = _cost("tile.load", [src, tup(0, 0), tup(64, 2)], narrow.type, SOC5, target_memory=Vec)
    assert n910.cycles == const("mte_issue") + math.ceil(64 * 512 / const("mte2_bytes_per_cycle"))
    assert n950.cycles == const("mte_issue") + math.ceil(64 * 128 / const("mte2_bytes_per_cycle"))
    assert n910.nbytes == n950.nbytes == 512
    out = Var("o", tensor_t((128, 128)))
    st = _cost("tile.store", [t, tup(0, 0), out], out.type)
    assert st.pipe == "mte3" and st.path == (MemorySpace.Vec, MemorySpace.DDR)
    acc = tile("acc", (128, 128), FP32, Acc, 0)
    assert _cost("tile.store", [acc, tup(0, 0), out], out.type).pipe == "fixpipe"
    m = tile("m", (128, 128), FP16, Mat, 0)
    mv = _cost("tile.move", [m], tile("l", (128, 128), FP16, Left, 0).type, target_memory=Left)
    assert mv.pipe == "mte1" and mv.path == (MemorySpace.Mat, MemorySpace.Left) and mv.nbytes == 32768
    # an extract moves its result (a part of the source tile), not the whole source
    ex = _cost("tile.extract", [m, tup(0, 32), tup(128, 32)], tile("e", (128, 32), FP16, Left, 0).type,
               target_memory=Left)
    assert ex.path == (MemorySpace.Mat, MemorySpace.Left) and ex.nbytes == 128 * 32 * 2
    assert ex.cycles == const("mte_issue") + math.ceil(128 * 32 * 2 / const("mte1_bytes_per_cycle"))


def test_creation_is_free_and_task_cost_sums_executions() -> None:
    t = tile("t", (16, 16), FP32, Vec, 0)
    assert _cost("tile.create", [tup(16, 16)], t.type, dtype=FP32, target_memory=Vec).cycles == 0
    a = OpCost("vector", 100)
    b = OpCost("mte2", 50, (MemorySpace.DDR, MemorySpace.Vec), 1024)
    tc = task_cost([a, b], [3, 2])
    assert tc.cycles == const("task_launch") + 300 + 100
    assert tc.pipe_cycles == {"vector": 300, "mte2": 100}
    assert tc.path_bytes == {(MemorySpace.DDR, MemorySpace.Vec): 2048}
    assert task_cost([a, b]).cycles == const("task_launch") + 150
    cc = copy_cost(MemorySpace.Acc, 65536)
    assert cc.pipe in PIPES and cc.path == (MemorySpace.Acc, MemorySpace.Acc) and cc.nbytes == 65536
