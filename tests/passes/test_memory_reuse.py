"""MemoryReuse: lifetime-based buffer sharing (SPEC §5), with the SPEC §9 bug class — a buffer
reused while a loop's carried or returned value still lives in it — checked by running programs."""

import json
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.liveness import buffer_intervals, numbered_statements, value_intervals
from pypto.passes.memory_reuse import MemoryReuse
from pypto.runtime import RunConfig

R, C, N = 64, 128, 4
KIB32 = R * C * 4  # one [64, 128] FP32 tile: 32 KiB


def _vec(i):
    return pl.MemRef(pl.Mem.Vec, id=i, size=KIB32, addr=-1)


B0, B1, B2, B3, B4, B5 = (_vec(i) for i in range(6))
T = [R, C]


@pl.program
class Before:
    """The output of InitMemRef: one buffer per tile; the loop's init, iter arg and result share B1."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[N * R, C], pl.FP32], z: pl.Tensor[[R, C], pl.FP32],
          y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        keep: pl.Tile[T, pl.FP32, B0] = pl.tile.load(z, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        acc0: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for i, (acc,) in pl.range(1, N, 1, init_values=(acc0,)):
            blk: pl.Tile[T, pl.FP32, B2] = pl.tile.load(x, [i * R, 0], [R, C], target_memory=pl.Mem.Vec)
            e: pl.Tile[T, pl.FP32, B3] = pl.tile.exp(blk)
            s: pl.Tile[T, pl.FP32, B4] = pl.tile.add(acc, e)
            out: pl.Tile[T, pl.FP32, B1] = pl.yield_(s)
        f: pl.Tile[T, pl.FP32, B5] = pl.tile.mul(out, keep)
        y = pl.tile.store(f, [0, 0], y)
        return y


@pl.program
class Expected:
    """`keep` (used after the loop) and the carried buffer B1 stay private through the loop;
    `e` is computed in place over `blk` (read for the last time by the exp), `s` in place over
    `e` (the carried `acc` lives on through the loop, so not over it), and `f` in place over `keep`,
    which it reads for the last time."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[N * R, C], pl.FP32], z: pl.Tensor[[R, C], pl.FP32],
          y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        keep: pl.Tile[T, pl.FP32, B0] = pl.tile.load(z, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        acc0: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for i, (acc,) in pl.range(1, N, 1, init_values=(acc0,)):
            blk: pl.Tile[T, pl.FP32, B2] = pl.tile.load(x, [i * R, 0], [R, C], target_memory=pl.Mem.Vec)
            e: pl.Tile[T, pl.FP32, B2] = pl.tile.exp(blk)
            s: pl.Tile[T, pl.FP32, B2] = pl.tile.add(acc, e)
            out: pl.Tile[T, pl.FP32, B1] = pl.yield_(s)
        f: pl.Tile[T, pl.FP32, B0] = pl.tile.mul(out, keep)
        y = pl.tile.store(f, [0, 0], y)
        return y


def test_reuse_respects_loop_carried_and_loop_crossing_lifetimes():
    ctx = PassContext()
    out = MemoryReuse().run(Before, ctx)
    ir.assert_structural_equal(out, Expected)
    assert ctx.records["memory_reuse"]["k"]["Vec"] == {
        "naive": 6 * KIB32, "reused": 3 * KIB32, "buffers": 6, "groups": 3}


def test_intervals_of_carried_buffer_cover_the_whole_loop_and_later_uses():
    iv = buffer_intervals(Before.get_function("k"))
    carried, keep, blk = iv[(pl.Mem.Vec, 1)], iv[(pl.Mem.Vec, 0)], iv[(pl.Mem.Vec, 2)]
    f = iv[(pl.Mem.Vec, 5)]
    assert carried.names == ["acc0", "acc", "out"]
    assert carried.start < blk.start and carried.end >= f.start  # read by `f` after the loop
    assert keep.overlaps(blk)  # defined before the loop, read after it: live through the loop
    assert not blk.overlaps(f)


def test_value_intervals_regroup_the_same_live_ranges_and_number_the_statements():
    """Per Var (the memory map's grouping), each buffer's interval is the hull of its Vars' ones;
    the numbers are those of `numbered_statements`, loops numbered at header and end."""
    func = Before.get_function("k")
    per_buffer = buffer_intervals(func)
    per_var = value_intervals(func, lambda v: v)
    assert sorted(n for iv in per_var.values() for n in iv.names) == sorted(n for iv in per_buffer.values()
                                                                            for n in iv.names)
    for key, iv in per_buffer.items():
        mine = [v for v in per_var if (v.type.memref.memory_space, v.type.memref.id) == key]
        assert (iv.start, iv.end) == (min(per_var[v].start for v in mine), max(per_var[v].end for v in mine))
    numbered = numbered_statements(func)
    assert [n.number for n in numbered] == list(range(1, len(numbered) + 1))
    loop = [n for n in numbered if isinstance(n.stmt, ir.ForStmt)]
    assert [n.is_end for n in loop] == [False, True] and loop[0].stmt is loop[1].stmt
    (acc,) = [v for v in per_var if v.name == "acc"]
    assert (per_var[acc].start, per_var[acc].end) == (loop[0].number, loop[1].number)  # the whole loop


@pl.program
class Chain:
    """Naively 7 tiles of 32 KiB (224 KiB) exceed Ascend910B's 184 KiB of Vec; lifetimes need 4."""

    @pl.function(type=pl.FunctionType.InCore)
    def chain(self, x: pl.Tensor[[N * R, C], pl.FP32], z: pl.Tensor[[R, C], pl.FP32],
              y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        keep = pl.load(z, [0, 0], [R, C])
        acc = pl.load(x, [0, 0], [R, C])
        for i in pl.range(1, N):
            blk = pl.load(x, [i * R, 0], [R, C])
            e = pl.exp(blk)
            acc = pl.add(acc, e)  # rebinding: a loop-carried value
        f = pl.mul(acc, keep)
        g = pl.sub(f, keep)
        y = pl.store(g, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[N * R, C], pl.FP32], z: pl.Tensor[[R, C], pl.FP32],
             y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        y = self.chain(x, z, y)
        return y


def _reference(x, z):
    acc = x[:R].clone()
    for i in range(1, N):
        acc = acc + torch.exp(x[i * R:(i + 1) * R])
    return acc * z - z


def test_naive_allocation_over_capacity_compiles_runs_and_reports_peak(tmp_path):
    torch.manual_seed(0)
    x, z = torch.randn(N * R, C), torch.randn(R, C)
    for backend, platform in ((BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")):
        out = tmp_path / backend.name
        compiled = ir.compile(Chain, output_dir=out, backend_type=backend, platform=platform,
                              verification_level=ir.VerificationLevel.ROUNDTRIP)
        y = torch.zeros(R, C)
        compiled(x, z, y, config=RunConfig(platform=platform, sanitize=True))  # checks live buffers
        torch.testing.assert_close(y, _reference(x, z), rtol=1e-5, atol=1e-5)
        usage = json.loads((Path(out) / "report" / "memory_usage.json").read_text())["chain"]["Vec"]
        assert usage["naive"] > 184 * 1024 >= usage["peak"]
        assert usage["peak"] < usage["naive"]
        assert usage["capacity"] == (184 if backend is BackendType.Ascend910B else 240) * 1024


def test_the_run_catches_a_reuse_that_ignores_lifetimes(tmp_path, monkeypatch):
    """Guard for the test above: sharing buffers that are still live gives wrong numbers, which
    the simulator (tiles at their planned addresses) and its sanitizer catch."""
    import pypto.passes.memory_reuse as mr
    from pypto.runtime.sim.sanitizer import SanitizerError

    real = mr.buffer_intervals_in_place

    def too_short(func):
        ivs, in_place = real(func)
        for iv in ivs.values():
            iv.end = iv.start  # as if every value died where it is made
        return ivs, in_place

    monkeypatch.setattr(mr, "buffer_intervals_in_place", too_short)
    compiled = ir.compile(Chain, output_dir=tmp_path / "bad")
    x, z = torch.randn(N * R, C), torch.randn(R, C)
    y = torch.zeros(R, C)
    compiled(x, z, y)
    assert not torch.allclose(y, _reference(x, z), rtol=1e-5, atol=1e-5)
    with pytest.raises(SanitizerError, match="overlapping-live-buffers"):
        compiled(x, z, torch.zeros(R, C), config=RunConfig(platform="a2a3sim", sanitize=True))


@pl.program
class AddInPlace:
    """Two 64 KiB operands and their sum: 192 KiB naively (over Ascend910B's 184 KiB of Vec), but
    the sum is computed in place over an operand read for the last time by the add."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
          c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        tc = pl.add(ta, tb)
        c = pl.store(tc, [0, 0], c)
        return c


@pl.program
class OperandReadAfter:
    """`ta` is read again after the add: the sum needs a buffer of its own (3 x 32 KiB)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        ta = pl.load(a, [0, 0], [64, 128])
        tb = pl.load(b, [0, 0], [64, 128])
        tc = pl.add(ta, tb)
        td = pl.mul(tc, ta)
        c = pl.store(td, [0, 0], c)
        return c


def _tiles(compiled):
    k = compiled.program.get_function("k")
    return {s.var.name: s.var.type.memref for s in k.body.stmts
            if isinstance(s, ir.AssignStmt) and isinstance(s.var.type, ir.TileType)}


def test_a_result_takes_the_buffer_of_an_operand_that_dies_at_its_op(tmp_path):
    compiled = ir.compile(AddInPlace, output_dir=tmp_path / "b", verification_level=ir.VerificationLevel.ROUNDTRIP)
    m = _tiles(compiled)
    assert m["tc"].addr in (m["ta"].addr, m["tb"].addr) and m["ta"].addr != m["tb"].addr
    usage = json.loads((Path(compiled.output_dir) / "report" / "memory_usage.json").read_text())["k"]["Vec"]
    assert usage["peak"] == 2 * 65536 and usage["naive"] == 3 * 65536
    a, b, c = torch.randn(128, 128), torch.randn(128, 128), torch.zeros(128, 128)
    compiled(a, b, c, config=RunConfig(platform="a2a3sim", sanitize=True))
    torch.testing.assert_close(c, a + b)


def test_an_operand_read_after_the_op_is_not_overwritten(tmp_path):
    compiled = ir.compile(OperandReadAfter, output_dir=tmp_path / "b")
    m = _tiles(compiled)
    assert m["tc"].addr != m["ta"].addr
    a, b, c = torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)
    compiled(a, b, c, config=RunConfig(platform="a2a3sim", sanitize=True))
    torch.testing.assert_close(c, (a + b) * a)
