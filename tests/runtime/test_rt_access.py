"""Dependencies from the boxes a kernel loads and stores (runtime/sim/access.py).

Besides the boxes themselves: every way a too-narrow box could drop a real dependency — a tensor
reaching an access through a loop-carried value, an `if` result, a store result or a non-SSA
reassignment; offsets that wrap around their dtype; scalars that are not ints; loops with negative,
zero or task-dependent steps, while loops, break — must leave the whole argument (or a box that
still holds every access), and out-of-bounds accesses must still fail as usual. Where a hole
would give wrong numbers, the test runs a program whose producer is delayed (`delay`), so a
consumer that lost its dependency would run first and read stale data.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rt_ir import (
    FP32,
    INDEX,
    In,
    InOut,
    Out,
    Vec,
    assign,
    call,
    function,
    kernel_call,
    load,
    program,
    ret,
    store,
    tensor_t,
    tile,
    tup,
)

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import RuntimeSimError
from pypto.ir import BinaryExpr, ConstInt, ForStmt, MakeTuple, ScalarType, SeqStmts, TupleType, Var
from pypto.runtime import CompiledProgram, RunConfig
from pypto.runtime.sim.access import AccessSummary


def _run(program, *args):
    compiled = ir.compile(program, dump_passes=False, skip_ptoas=True)
    compiled(*args)
    return compiled.last_run.tasks


@pl.program
class ParallelAt:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[256, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 64, 0], [64, 64])
                u = pl.exp(t)
                y = pl.store(u, [i * 64, 0], y)
        return y


def test_pl_at_inside_parallel_runs_its_tasks_in_parallel() -> None:
    """Each task gets the whole tensors and the loop index, but stores only its own 64 rows: no
    write-after-write chain, the four tasks overlap in simulated time."""
    x, y = torch.randn(256, 64), torch.zeros(256, 64)
    tasks = _run(ParallelAt, x, y)
    torch.testing.assert_close(y, torch.exp(x))
    assert [t.deps for t in tasks] == [{}, {}, {}, {}]
    assert len({t.core for t in tasks}) == 4
    assert max(t.start_cycle for t in tasks) < min(t.end_cycle for t in tasks)


@pl.program
class Rows:
    @pl.function(type=pl.FunctionType.InCore)
    def put(self, x: pl.Tensor[[64, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
            y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for k in pl.range(2):
            t = pl.load(x, [k * 32, 0], [32, 64])
            y = pl.store(t, [r + k * 32, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def get(self, y: pl.Tensor[[256, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
            z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(y, [r, 0], [64, 64])
        z = pl.store(pl.mul(t, 2.0), [0, 0], z)
        return z

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        y = self.put(x, 0, y)
        y = self.put(x, 64, y)
        y = self.put(x, 128, y)
        z = self.get(y, 32, z)
        return z


def test_boxes_from_scalar_arguments_and_loop_variables() -> None:
    """`put(r)` stores rows [r, r + 64) (two 32-row stores in a loop); `get(32)` reads rows
    [32, 96): it waits for the first two puts only, and the puts do not wait for each other."""
    x, y, z = torch.randn(64, 64), torch.zeros(256, 64), torch.zeros(64, 64)
    tasks = _run(Rows, x, y, z)
    assert [t.deps for t in tasks] == [{}, {}, {}, {0: "RAW", 1: "RAW"}]
    torch.testing.assert_close(z, 2 * torch.cat([x[32:], x[:32]]))
    torch.testing.assert_close(y[:192], torch.cat([x, x, x]))


def _summary(program, name):
    return AccessSummary(program.get_function(name))


def test_region_arg_is_the_bounding_box_of_the_accesses() -> None:
    put = _summary(Rows, "put")
    x, y = torch.zeros(64, 64), torch.zeros(256, 64)
    assert put.narrowed == frozenset({2})        # x is always loaded whole (rows 0:32 and 32:64)
    view = put.region_arg(2, (x, 96, y))
    assert view.shape == (64, 64) and view.storage_offset() == 96 * 64
    assert put.region_arg(0, (x, 96, y)) is x          # all of x is loaded: the argument itself
    assert put.region_arg(2, (x, 250, y)).shape == (6, 64)   # clipped to the tensor


@pl.program
class CarriedOffset:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i, (r,) in pl.range(2, init_values=(0,)):
            t = pl.load(x, [0, 0], [64, 64])
            y = pl.store(t, [r, 0], y)
            r2 = pl.yield_(r + 64)
        return y


def test_untraceable_offsets_count_the_whole_argument() -> None:
    """An offset carried by the loop is not evaluated: the store counts as touching all of `y`."""
    s = _summary(CarriedOffset, "k")
    assert s.narrowed == frozenset()
    y = torch.zeros(256, 64)
    assert s.region_arg(1, (torch.zeros(64, 64), y)) is y



def _lowered(program, name):
    """The kernel `name` of `program` as the simulator runs it (after the whole pipeline)."""
    return ir.compile(program, dump_passes=False, skip_ptoas=True).program.get_function(name)


def _rows(view: torch.Tensor, base: torch.Tensor) -> tuple[int, int]:
    """The rows of `base` that `view` (a box of whole rows) covers."""
    start = (view.storage_offset() - base.storage_offset()) // base.stride(0)
    return start, start + view.shape[0]


# ---- scheduling: disjoint tasks overlap, conflicting ones wait -----------------------------------

@pl.program
class Stages:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 16, 0], [16, 32])
                y = pl.store(pl.exp(t), [i * 16, 0], y)
        for i in pl.parallel(4):   # reads the rows the next task of the first loop wrote
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(y, [(i + 1) % 4 * 16, 0], [16, 32])
                z = pl.store(pl.mul(t, 2.0), [i * 16, 0], z)
        for i in pl.parallel(4):   # overwrites rows the second loop read
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 16, 0], [16, 32])
                y = pl.store(t, [i * 16, 0], y)
        return z


def test_disjoint_tasks_overlap_and_conflicting_ones_wait_for_exactly_their_producer() -> None:
    x, y, z = torch.randn(64, 32), torch.zeros(64, 32), torch.zeros(64, 32)
    t = _run(Stages, x, y, z)
    assert [t[i].deps for i in range(4)] == [{}] * 4
    assert [t[4 + i].deps for i in range(4)] == [{(i + 1) % 4: "RAW"} for i in range(4)]
    assert [t[8 + i].deps for i in range(4)] == [{i: "WAW", 4 + (i + 3) % 4: "WAR"} for i in range(4)]
    assert max(u.start_cycle for u in t[:4]) < min(u.end_cycle for u in t[:4])   # all four at once
    for u in t[4:]:
        assert u.start_cycle >= max(t[d].end_cycle for d in u.deps)
    torch.testing.assert_close(z, 2 * torch.exp(x).roll(-16, 0))
    torch.testing.assert_close(y, x)


@pl.program
class MixedRows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[64, 16], pl.FP32]],
             d: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
        for i in pl.parallel(4):   # cube + vector: a Group call per iteration
            with pl.at(level=pl.Level.CORE_GROUP):
                a1 = pl.load(a, [i * 16, 0], [16, 16], target_memory=pl.Mem.Mat)
                w1 = pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
                p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(w1, target_memory=pl.Mem.Right))
                c = pl.store(pl.relu(p), [i * 16, 0], c)
        for i in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(c, [(i + 1) % 4 * 16, 0], [16, 16])
                d = pl.store(pl.add(t, 1.0), [i * 16, 0], d)
        return d


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_group_calls_of_mixed_kernels_are_narrowed_too(platform: str) -> None:
    """`SimDevice._queue_group` narrows each kernel of a Group call: the four groups run on four
    clusters at once, and a reader of one group's rows waits for that group's vector task only."""
    a, w = torch.randn(64, 16).half(), torch.randn(16, 16).half()
    c, d = torch.zeros(64, 16), torch.zeros(64, 16)
    compiled = ir.compile(MixedRows, dump_passes=False, skip_ptoas=True, platform=platform,
                          backend_type=BackendType.Ascend910B if platform == "a2a3sim" else BackendType.Ascend950)
    compiled(a, w, c, d)
    t = compiled.last_run.tasks
    assert [u.group for u in t[:8]] == [0, 0, 2, 2, 4, 4, 6, 6] and all(not u.deps for u in t[:8])
    assert len({u.core for u in t[:8]}) == 8
    assert max(u.start_cycle for u in t[:8]) < min(u.end_cycle for u in t[:8])
    assert [t[8 + i].deps for i in range(4)] == [{2 * ((i + 1) % 4) + 1: "RAW"} for i in range(4)]
    ref = torch.relu(a.float() @ w.float())
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d, ref.roll(-16, 0) + 1, rtol=1e-3, atol=1e-3)


# ---- tensors reaching an access through another variable ----------------------------------------

@pl.function(type=pl.FunctionType.InCore)
def delay(x: pl.Tensor[[64, 32], pl.FP32], s: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
    """s = x + 32, slowly (32 dependent adds): tasks reading `s` start late."""
    t = pl.load(x, [0, 0], [64, 32])
    for j in pl.range(32):
        t = pl.add(t, 1.0)
    s = pl.store(t, [0, 0], s)
    return s


@pl.program
class Switch:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, s: pl.Tensor[[64, 32], pl.FP32], b: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        t = pl.load(s, [8, 0], [8, 32])
        b = pl.store(t, [8, 0], b)
        return b

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 32], pl.FP32], b: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        cur = a
        for k in pl.range(2):   # iteration 0 reads a[0:8]; iteration 1 reads b[8:16] through `cur`
            t = pl.load(cur, [k * 8, 0], [8, 32])
            cur = pl.store(t, [32 + k * 8, 0], b)
        return cur

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], a: pl.Tensor[[64, 32], pl.FP32],
             b: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        s = pl.create_tensor([64, 32], dtype=pl.FP32)
        s = delay(x, s)
        b = self.fill(s, b)   # waits for delay; writes b[8:16]
        b = self.k(a, b)      # reads b[8:16]: must wait for fill
        return b


def test_a_carried_tensor_that_changes_parameter_is_touched_whole() -> None:
    """`cur` starts as `a` and continues as `b`: its accesses cannot be charged to one parameter,
    so `k` keeps whole regions and waits for `fill` (with b's box taken from the stores alone,
    k ran before fill and copied stale rows)."""
    assert AccessSummary(_lowered(Switch, "k")).narrowed == frozenset()
    x, a, b = torch.randn(64, 32), torch.randn(64, 32), torch.zeros(64, 32)
    t = _run(Switch, x, a, b)
    assert t[2].deps == {1: "RAW"}
    torch.testing.assert_close(b[40:48], x[8:16] + 32)
    torch.testing.assert_close(b[32:40], a[0:8])


@pl.program
class Branches:
    @pl.function(type=pl.FunctionType.InCore)
    def either(self, x: pl.Tensor[[64, 32], pl.FP32], r: pl.Scalar[pl.INDEX], p: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
               q: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> tuple[pl.Tensor[[64, 32], pl.FP32],
                                                                   pl.Tensor[[64, 32], pl.FP32]]:
        t = pl.load(x, [r, 0], [8, 32])
        if r > 4:
            o = pl.store(t, [r, 0], p)
        else:
            o = pl.store(t, [r, 0], q)
        u = pl.load(o, [48, 0], [8, 32])   # p or q, depending on r
        p = pl.store(u, [r + 8, 0], p)
        return p, q

    @pl.function(type=pl.FunctionType.InCore)
    def same(self, x: pl.Tensor[[64, 32], pl.FP32], r: pl.Scalar[pl.INDEX],
             p: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        t = pl.load(x, [r, 0], [8, 32])
        if r > 4:
            p = pl.store(t, [r, 0], p)
        else:
            p = pl.store(pl.neg(t), [r + 16, 0], p)
        p2 = pl.store(t, [r + 8, 0], p)          # through the if's result
        u = pl.load(p2, [r + 24, 0], [8, 32])   # and through a store's result
        p = pl.store(u, [r + 32, 0], p2)
        return p

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], p: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             q: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        p, q = self.either(x, 2, p, q)
        p = self.same(x, 2, p)
        return p


def test_if_results_and_store_results_alias_their_parameter() -> None:
    """An `if` yielding stores into different parameters makes its result untraceable (both count
    whole); yields from one parameter, and a store's result, keep aliasing it: its box covers the
    accesses made through them."""
    assert AccessSummary(_lowered(Branches, "either")).narrowed == frozenset()
    same = AccessSummary(_lowered(Branches, "same"))
    assert same.narrowed == frozenset({0, 2})
    x, p = torch.zeros(64, 32), torch.zeros(64, 32)
    assert _rows(same.region_arg(2, (x, 2, p)), p) == (2, 42)   # stores at 2, 18, 10, 34; load at 26
    x, p, q = torch.randn(64, 32), torch.randn(64, 32), torch.randn(64, 32)
    p0, q0 = p.clone(), q.clone()
    _run(Branches, x, p, q)
    torch.testing.assert_close(q[2:10], x[2:10])       # either(r=2) stored into q, copied q[48:56]
    torch.testing.assert_close(p[18:26], -x[2:10])     # same(r=2): the else branch,
    torch.testing.assert_close(p[10:18], x[2:10])      # the store through the if's result,
    torch.testing.assert_close(p[34:42], p0[26:34])    # the copy through the store's result
    torch.testing.assert_close(p[:10], p0[:10])
    torch.testing.assert_close(q[48:], q0[48:])


@pl.program
class Wrap:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[512, 16], pl.FP32], r: pl.Scalar[pl.UINT8],
          y: pl.Out[pl.Tensor[[512, 16], pl.FP32]]) -> pl.Tensor[[512, 16], pl.FP32]:
        t = pl.load(x, [r - 1, 0], [8, 16])   # a UINT8 expression: r = 0 gives row 255
        y = pl.store(t, [r - 1, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[512, 16], pl.FP32], r: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[512, 16], pl.FP32]]) -> pl.Tensor[[512, 16], pl.FP32]:
        y = self.k(x, r, y)
        return y


def test_offsets_that_wrap_around_their_dtype_count_whole() -> None:
    """The simulator wraps integer results into their dtype like the hardware; an interval that
    leaves the dtype's range is not what the kernel computes, so the argument counts whole."""
    s = AccessSummary(_lowered(Wrap, "k"))
    x, y = torch.zeros(512, 16), torch.zeros(512, 16)
    assert s.region_arg(0, (x, 0, y)) is x and s.region_arg(2, (x, 0, y)) is y
    assert _rows(s.region_arg(2, (x, 5, y)), y) == (4, 12)
    x, y = torch.randn(512, 16), torch.zeros(512, 16)
    _run(Wrap, x, 0, y)
    torch.testing.assert_close(y[255:263], x[255:263])


def _non_ssa_kernel():
    """k(x, y: Out): j = 0; for _ in range(4): y[j:j+8] = x[j:j+8]; j = j + 8 — `j` is assigned
    twice (IR that was never put in SSA form, which the simulator runs as written)."""
    x, y, y1 = Var("x", tensor_t((64, 16))), Var("y", tensor_t((64, 16))), Var("y1", tensor_t((64, 16)))
    j, it = Var("j", ScalarType(INDEX)), Var("it", ScalarType(INDEX))
    t = tile("t", (8, 16), FP32, Vec, 0)
    body = SeqStmts((load(t, x, (j, 0)), store(y1, t, (j, 0), y),
                     assign(j, BinaryExpr("add", j, ConstInt(8, INDEX), INDEX))))
    loop = ForStmt(it, ConstInt(0, INDEX), ConstInt(4, INDEX), ConstInt(1, INDEX), (), body, ())
    return function("k", [(x, In), (y, Out)], [assign(j, ConstInt(0, INDEX)), loop, ret(y)])


def test_variables_assigned_more_than_once_are_not_traced() -> None:
    k = _non_ssa_kernel()
    assert AccessSummary(k).narrowed == frozenset()
    x, y = torch.randn(64, 16), torch.zeros(64, 16)
    CompiledProgram(program(k), "out", None)(x, y)
    torch.testing.assert_close(y[:32], x[:32])

    # a tensor variable re-pointed from one parameter to another
    p, q, o = (Var(n, tensor_t((64, 16))) for n in ("p", "q", "o"))
    o1, t, u = Var("o1", tensor_t((64, 16))), tile("t", (8, 16), FP32, Vec, 0), tile("u", (8, 16), FP32, Vec, 512)
    k2 = function("k2", [(x, In), (p, InOut), (q, InOut)], [
        assign(o, p), load(t, x, (0, 0)), store(o1, t, (8, 0), o), assign(o, q), load(u, o, (16, 0)), ret(p)])
    assert AccessSummary(k2).narrowed == frozenset()


def _two_boxes(extra):
    """k(x, r, y: Out): y[r:r+8] = x[r:r+8] plus the statements `extra(x, y)` returns."""
    x, y, y1 = Var("x", tensor_t((64, 16))), Var("y", tensor_t((64, 16))), Var("y1", tensor_t((64, 16)))
    r, t = Var("r", ScalarType(INDEX)), tile("t", (8, 16), FP32, Vec, 0)
    return function("k", [(x, In), (r, In), (y, Out)],
                    [load(t, x, (r, 0)), *extra(x, y), store(y1, t, (r, 0), y), ret(y1)])


def test_a_tensor_used_without_a_declared_box_counts_whole() -> None:
    v, n = Var("v", ScalarType(FP32)), Var("n", ScalarType(INDEX))
    assert AccessSummary(_two_boxes(lambda x, y: [])).narrowed == frozenset({0, 2})
    read = _two_boxes(lambda x, y: [assign(v, call("tensor.read", [x, tup(0, 0)], ScalarType(FP32)))])
    assert AccessSummary(read).narrowed == frozenset({2})             # an op reading x elsewhere
    helper = _two_boxes(lambda x, y: [assign(n, kernel_call("helper", [y], ScalarType(INDEX)))])
    assert AccessSummary(helper).narrowed == frozenset({0})           # a function call gets y
    pair = Var("pair", TupleType((tensor_t((64, 16)), tensor_t((64, 16)))))
    tupled = _two_boxes(lambda x, y: [assign(pair, MakeTuple((x, y)))])
    assert AccessSummary(tupled).narrowed == frozenset()              # both escape in a tuple
    dim = _two_boxes(lambda x, y: [assign(n, call("tensor.dim", [x], ScalarType(INDEX), axis=0))])
    assert AccessSummary(dim).narrowed == frozenset({0, 2})           # a shape query touches no data


def test_scalar_arguments_that_are_not_ints_give_the_whole_argument() -> None:
    put = _summary(Rows, "put")
    x, y = torch.zeros(64, 64), torch.zeros(256, 64)
    for r in (96.0, True, torch.tensor(96), np.int64(96), None):
        assert put.region_arg(2, (x, r, y)) is y
    assert put.region_arg(2, (x, 96, y, 0)) is y    # a call with the wrong arity fails when it runs


@pl.program
class Bounds:
    @pl.function(type=pl.FunctionType.InCore)
    def get(self, y: pl.Tensor[[256, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
            z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(y, [r, 0], [64, 64])
        z = pl.store(t, [0, 0], z)
        return z

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, y: pl.Tensor[[256, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
             z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        z = self.get(y, r, z)
        return z


@pytest.mark.parametrize("r", [-8, -100, 250, 1000])
def test_out_of_bounds_accesses_still_fail_as_usual(r: int) -> None:
    """The box is clipped to the tensor (the whole argument when nothing is left of it); the task
    still runs and fails with the load's out-of-bounds error."""
    s = AccessSummary(_lowered(Bounds, "get"))
    y, z = torch.zeros(256, 64), torch.zeros(64, 64)
    view = s.region_arg(0, (y, r, z))
    assert view is y if r in (-100, 1000) else _rows(view, y) == (max(r, 0), min(r + 64, 256))
    with pytest.raises(RuntimeSimError, match=r"out of bounds of the tensor of shape \[256, 64\]"):
        _run(Bounds, y, r, z)


@pl.program
class Steps:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], lo: pl.Scalar[pl.INDEX], hi: pl.Scalar[pl.INDEX],
          st: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for k in pl.range(lo, hi, st):
            t = pl.load(x, [k, 0], [8, 32])
            y = pl.store(t, [k, 0], y)
        for k in pl.range(3, -1, -1):
            t = pl.load(x, [k * 8 + 16, 0], [8, 32])
            y = pl.store(pl.neg(t), [k * 8 + 16, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], lo: pl.Scalar[pl.INDEX], hi: pl.Scalar[pl.INDEX],
             st: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k(x, lo, hi, st, y)
        return y


def test_loop_variables_with_negative_zero_and_task_dependent_steps() -> None:
    """A loop variable ranges from start to stop whatever the sign of its step (a constant, or a
    scalar whose value the task knows); a zero step keeps the whole argument (the loop fails)."""
    s = AccessSummary(_lowered(Steps, "k"))
    x, y = torch.zeros(64, 32), torch.zeros(64, 32)
    assert _rows(s.region_arg(4, (x, 0, 8, 8, y)), y) == (0, 48)       # k = 0; then 16..40
    assert _rows(s.region_arg(4, (x, 40, 38, -1, y)), y) == (16, 48)   # k = 40, 39
    assert _rows(s.region_arg(4, (x, 8, 0, 1, y)), y) == (16, 48)      # an empty loop: no box
    assert s.region_arg(4, (x, 0, 8, 0, y)) is y
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    with pytest.raises(RuntimeSimError, match="step is zero"):
        _run(Steps, x, 0, 8, 0, y)
    with pytest.raises(RuntimeSimError, match="out of bounds"):
        _run(Steps, x, 6, -3, -4, y)    # k = 6, 2, -2: the last load is out of bounds
    _run(Steps, x, 56, 40, -8, y)       # k = 56, 48
    torch.testing.assert_close(y[48:], x[48:])
    torch.testing.assert_close(y[16:48], -x[16:48])


@pl.program
class RowBlocks:
    """The trial's `rowop.py` in small: each task loops over 8-row blocks of its own 32 rows at
    `r0 + i`, `i` in range(0, 32, 8) (last value 24, not 31); a second kernel steps by 8 up to a
    stop that is not a multiple of the step."""

    @pl.function(type=pl.FunctionType.InCore)
    def kern(self, x: pl.Tensor[[128, 32], pl.FP32], r0: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        for i, (yy,) in pl.range(0, 32, 8, init_values=(y,)):
            t = pl.load(x, [r0 + i, 0], [8, 32])
            ny = pl.store(pl.exp(t), [r0 + i, 0], yy)
            out = pl.yield_(ny)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def odd(self, x: pl.Tensor[[128, 32], pl.FP32], r0: pl.Scalar[pl.INDEX],
            y: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        for i in pl.range(30, 0, -8):     # i = 30, 22, 14, 6
            t = pl.load(x, [r0 + i, 0], [2, 32])
            y = pl.store(t, [r0 + i, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        for k in pl.parallel(0, 4):
            y = self.kern(x, k * 32, y)
        return y


def test_a_loop_variable_ends_at_its_last_step_not_at_stop_minus_one() -> None:
    """Row-block loops of tasks at offsets 0, 32, 64, 96 touch disjoint boxes: the four tasks have
    no dependencies and overlap in simulated time (they were chained by write-after-write on 7
    phantom rows past each task's box when the loop variable was taken to reach stop - 1)."""
    s = AccessSummary(_lowered(RowBlocks, "kern"))
    x, y = torch.zeros(128, 32), torch.zeros(128, 32)
    assert _rows(s.region_arg(2, (x, 32, y)), y) == (32, 64)
    odd = AccessSummary(_lowered(RowBlocks, "odd"))
    assert _rows(odd.region_arg(2, (x, 10, y)), y) == (16, 42)   # rows 10 + 6 .. 10 + 30 + 2
    x = torch.randn(128, 32)
    tasks = _run(RowBlocks, x, y)
    torch.testing.assert_close(y, torch.exp(x))
    assert [t.deps for t in tasks] == [{}] * 4
    assert max(t.start_cycle for t in tasks) < min(t.end_cycle for t in tasks)


@pl.jit
def _mm_split(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    for i in pl.parallel(8):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            y[i * 32:(i + 1) * 32, :] = pl.relu(pl.matmul(a[i * 32:(i + 1) * 32, :], b))
    return y


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_split_vector_halves_are_bounded_by_the_subblock_index(platform):
    """Under pl.split each vector core stores at an offset computed from get_subblock_idx()
    (OpSpec.scalar_range (0, 1)): the groups of different blocks do not depend on each other, and
    nothing is left unordered when only the regions order tasks."""
    from pypto.runtime import RunConfig

    a, b, y = torch.randn(256, 64).half(), torch.randn(64, 64).half(), torch.zeros(256, 64)
    cfg = RunConfig(platform=platform)
    cp = _mm_split.compile(a, b, y, config=cfg)
    cp(a, b, y, config=cfg)
    torch.testing.assert_close(y, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    tasks = cp.last_run.tasks
    assert len(tasks) == 8 * 3 and all(t.deps == {} for t in tasks)
    groups = {t.group for t in tasks}
    assert len(groups) == 8
    spans = sorted((min(t.start_cycle for t in tasks if t.group == g), max(t.end_cycle for t in tasks if t.group == g))
                   for g in groups)
    assert all(nxt[0] < cur[1] for cur, nxt in zip(spans, spans[1:]))   # each starts before the last ends
    cp(a, b, torch.zeros(256, 64), config=RunConfig(platform=platform, sanitize=True, auto_deps=False))


SPMD_SHARE = """
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class SpmdShare:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, a: pl.Tensor[[M, 64], pl.FP32], o: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        m = pl.tensor.dim(a, 0)
        per = (m + pl.get_block_num() - 1) // pl.get_block_num()
        start = pl.get_block_idx() * per
        for r in LOOP:
            t = pl.load(a, [start + r, 0], [8, 64])
            o = pl.store(pl.muls(t, 2.0), [start + r, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 64], pl.FP32], o: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        with pl.spmd(core_num=3):
            o = self.rows(a, o)
        return o
"""


@pytest.mark.parametrize("pipelined", [False, True])
def test_offsets_divided_by_the_block_count_are_traced(pipelined: bool) -> None:
    """Each of 3 SPMD blocks scales its share of the rows in 8-row steps, the usual
    `(m + n - 1) // n` with n = pl.get_block_num() (a divisor known per
    task, not a constant): each block's box is its own rows, so the sanitizer (which checks SPMD
    blocks for unordered conflicts) finds nothing and the blocks wait for nobody. Pipelined, the
    loop becomes a main loop of two-step trips and a remainder loop, which runs no iteration here
    (16 rows per block): its boxes are not counted."""
    a, o = torch.randn(48, 64), torch.zeros(48, 64)
    loop = "pl.pipeline(0, per, 8, stage=2)" if pipelined else "pl.range(0, per, 8)"
    compiled = ir.compile(pl.parse(SPMD_SHARE.replace("LOOP", loop)), dump_passes=False, skip_ptoas=True)
    compiled(a, o, config=RunConfig(sanitize=True))
    torch.testing.assert_close(o, 2 * a)
    summary = _summary(compiled.program, "rows")
    assert summary.narrowed == frozenset({0, 1})
    assert [t.deps for t in compiled.last_run.tasks] == [{}, {}, {}]


@pl.program
class ScalarDivisor:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], r: pl.Scalar[pl.INDEX], d: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        t = pl.load(x, [r // d, 0], [8, 32])
        y = pl.store(t, [r % d + 40, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], r: pl.Scalar[pl.INDEX], d: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k(x, r, d, y)
        return y


def test_division_by_a_scalar_argument_is_traced_only_when_positive() -> None:
    """`//` and `%` by a scalar the task knows: exact for a positive divisor (Python's floor
    semantics, so a negative dividend rounds down); a zero or negative divisor keeps the whole
    argument."""
    s = AccessSummary(_lowered(ScalarDivisor, "k"))
    x, y = torch.zeros(64, 32), torch.zeros(64, 32)
    assert _rows(s.region_arg(0, (x, 37, 4, y)), x) == (9, 17)        # 37 // 4
    assert _rows(s.region_arg(3, (x, 37, 4, y)), y) == (41, 49)       # 37 % 4 + 40
    assert _rows(s.region_arg(0, (x, 37, 16, y)), x) == (2, 10)
    for d in (0, -4):
        assert s.region_arg(0, (x, 37, d, y)) is x and s.region_arg(3, (x, 37, d, y)) is y
    x = torch.randn(64, 32)
    _run(ScalarDivisor, x, 37, 4, y)
    torch.testing.assert_close(y[41:49], x[9:17])
