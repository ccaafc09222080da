"""What full simulations keep from one run to the next (`runtime/sim/run_memo.py`, issue 14 item 5):
the orchestrator's views of the same tensors, their regions, and the lane runs of batches. Checked:
the memo's two generations, the same view objects in a second run, new views for a new tensor or
one whose layout changed in place, right numbers after the data changed, and no tensor kept alive
by the memos."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime.sim import SimDevice
from pypto.runtime.sim.run_memo import RunMemo

N, T = 256, 64


@pl.program
class Tiles:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tile(self, a: pl.Tensor[[T, T], pl.FP32], b: pl.Tensor[[T, T], pl.FP32],
                 c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        ta = pl.load(a, [0, 0], [T, T])
        tb = pl.load(b, [0, 0], [T, T])
        tc = pl.add(ta, tb)
        c = pl.store(tc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
             c: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
        for i in pl.range(0, N, T):
            for j in pl.range(0, N, T):
                sa = pl.slice(a, [T, T], [i, j])
                sb = pl.slice(b, [T, T], [i, j])
                sc = pl.slice(c, [T, T], [i, j])
                sc = self.add_tile(sa, sb, sc)
        return c


def _full(tmp_path):
    cp = ir.compile(Tiles, output_dir=tmp_path / "tiles", dump_passes=False)
    dev = SimDevice(cp.backend_type)

    def run(a, b, c):
        dev.run(cp.program, cp.entry_function, [a, b, c], replay=False)
        return [t.args for t in dev.tasks]
    return dev, run


def _inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, N, generator=g), torch.randn(N, N, generator=g), torch.zeros(N, N)


def test_a_memo_drops_what_the_last_run_did_not_use_once_it_has_grown() -> None:
    from pypto.runtime.sim import run_memo
    m = RunMemo()
    assert m.get("x", 1) is None
    m.put("x", 1)
    for k in range(run_memo._SLACK + 10):
        m.put(("y", k), k)
    assert m.get("x", 1) == 1 and m.get(("y", 3), 1) == 3
    assert m.get("x", 2) == 1            # run 2 uses only "x"
    assert m.get(("y", 3), 3) is None    # run 3: more than twice what run 2 used, so run 1's went
    assert m.get("x", 3) == 1 and len(m) == 1


def test_a_second_full_run_reuses_the_views_and_its_numbers_follow_the_data(tmp_path) -> None:
    dev, run = _full(tmp_path)
    a, b, c = _inputs(0)
    first = run(a, b, c)
    accesses = [t.accesses for t in dev.tasks]
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    a.mul_(3)                      # new data, same tensors: the same views, the new sums
    c.zero_()
    second = run(a, b, c)
    assert len(first) == len(second) == (N // T) ** 2
    assert all(x is y for f, s in zip(first, second) for x, y in zip(f, s))
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    assert [t.accesses for t in dev.tasks] == accesses


def test_a_new_tensor_or_one_whose_layout_changed_in_place_gets_new_views(tmp_path) -> None:
    dev, run = _full(tmp_path)
    a, b, c = _inputs(1)
    first = run(a, b, c)
    regions = [[r for _, r, _, _ in t.accesses] for t in dev.tasks]
    a2 = a.clone()
    second = run(a2, b, c)
    assert all(f[0] is not s[0] and f[1] is s[1] for f, s in zip(first, second))
    torch.testing.assert_close(c, a2 + b, rtol=0, atol=0)
    assert [[r for _, r, _, _ in t.accesses][1:] for t in dev.tasks] == [r[1:] for r in regions]
    a2.t_()                        # the same tensor object and data pointer, other strides
    c.zero_()
    third = run(a2, b, c)
    assert all(s[0] is not t[0] for s, t in zip(second, third))
    torch.testing.assert_close(c, a2 + b, rtol=0, atol=0)   # the transposed operand's tiles


def test_the_memos_keep_no_tensor_alive(tmp_path) -> None:
    dev, run = _full(tmp_path)
    refs = []
    for s in range(3):
        args = run(*_inputs(s))
        refs += [weakref.ref(x) for t in args for x in t]
        del args
    dev.tasks, dev.last_run = [], None
    gc.collect()
    assert refs and all(r() is None for r in refs)


@pl.program
class Shared:
    """Every task reads the whole of `a` (the same tensor in every lane of a batch) and a row
    block of `b`."""

    @pl.function(type=pl.FunctionType.InCore)
    def add_tile(self, a: pl.Tensor[[T, T], pl.FP32], b: pl.Tensor[[T, T], pl.FP32],
                 c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        ta = pl.load(a, [0, 0], [T, T])
        tb = pl.load(b, [0, 0], [T, T])
        c = pl.store(pl.add(ta, tb), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[T, T], pl.FP32], b: pl.Tensor[[N, T], pl.FP32],
             c: pl.Out[pl.Tensor[[N, T], pl.FP32]]) -> pl.Tensor[[N, T], pl.FP32]:
        for i in pl.range(0, N, T):
            sb = pl.slice(b, [T, T], [i, 0])
            sc = pl.slice(c, [T, T], [i, 0])
            sc = self.add_tile(a, sb, sc)
        return c


def test_lanes_of_a_tensor_whose_layout_changed_in_place_are_stacked_anew(tmp_path, monkeypatch) -> None:
    """The lane runs of a batch are found again only for lanes of the same layout: a batch of
    tasks that all read the caller's `a` reads it transposed in place (`t_()`), or moved to other
    storage at another offset (`set_()`), in the next run."""
    from pypto.runtime.sim import batch
    monkeypatch.delenv(batch.ENV_VAR, raising=False)
    cp = ir.compile(Shared, output_dir=tmp_path / "shared", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    g = torch.Generator().manual_seed(5)
    a, b, c = torch.randn(T, T, generator=g), torch.randn(N, T, generator=g), torch.zeros(N, T)
    for change in (None, lambda: a.t_(),
                   lambda: a.set_(torch.randn(T * T + 7, generator=g).untyped_storage(), 7, (T, T), (T, 1))):
        if change is not None:
            change()
        c.zero_()
        dev.run(cp.program, cp.entry_function, [a, b, c], replay=False)
        torch.testing.assert_close(c, a.repeat(N // T, 1) + b, rtol=0, atol=0)


@pl.program
class Returned:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: pl.Tensor[[T, T], pl.FP32], c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        ta = pl.load(a, [0, 0], [T, T])
        c = pl.store(pl.add(ta, ta), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[2 * T, T], pl.FP32],
             c: pl.Out[pl.Tensor[[2 * T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        sa = pl.slice(a, [T, T], [T, 0])
        sc = pl.slice(c, [T, T], [T, 0])
        sc = self.double(sa, sc)
        return sc


def test_a_returned_view_changed_in_place_by_the_caller_changes_no_later_run(tmp_path) -> None:
    """A run returns a view of its own (not the one the orchestrator keeps for the next run): the
    caller may transpose it in place, and the next run still writes the rows it should."""
    cp = ir.compile(Returned, output_dir=tmp_path / "ret", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    a, c = torch.randn(2 * T, T), torch.zeros(2 * T, T)
    (r,) = dev.run(cp.program, cp.entry_function, [a, c], replay=False)
    torch.testing.assert_close(r, 2 * a[T:], rtol=0, atol=0)
    r.t_()
    c.zero_()
    (r2,) = dev.run(cp.program, cp.entry_function, [a, c], replay=False)
    assert r2 is not r and r2.data_ptr() == c[T:].data_ptr()
    torch.testing.assert_close(c[T:], 2 * a[T:], rtol=0, atol=0)
    torch.testing.assert_close(r2, 2 * a[T:], rtol=0, atol=0)
    assert r.shape == (T, T) and r.stride() == (1, T)   # the caller's view, as the caller left it


def test_the_memos_stay_bounded_and_keep_nothing_alive_over_runs_that_fail(tmp_path, monkeypatch) -> None:
    """New tensors every run, some runs failing half-way (an operand of the wrong shape), some
    replayed: the memos stay about the size of one run's use, and once the records are dropped no
    tensor of any run is alive."""
    from pypto.core.errors import RuntimeSimError
    from pypto.runtime.sim import batch
    monkeypatch.delenv(batch.ENV_VAR, raising=False)
    cp = ir.compile(Tiles, output_dir=tmp_path / "tiles", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    refs, sizes = [], []
    for s in range(24):
        args = list(_inputs(s))
        if s % 5 == 3:
            args[1] = torch.zeros(N, N // 2)     # fails when the first task reads it
        refs += [weakref.ref(x) for x in args]
        try:
            dev.run(cp.program, cp.entry_function, args, replay=s % 4 == 1)
        except RuntimeSimError:
            pass
        del args
        stacks = [len(bk._stacks) for ex in dev._kernels.values()
                  for bk in ex.__dict__.get("_batch", {}).values() if bk]
        sizes.append((len(dev.view_memo.views), len(dev.view_memo._sources), max(stacks, default=0)))
    per_run = (N // T) ** 2
    # a memo drops what the last run did not use once it holds more than twice that plus _SLACK;
    # then a run adds at most what it uses: per task 3 views (an entry for the view and one for its
    # region), 3 source tokens (besides the 3 arguments), a lane-run entry per tensor argument
    from pypto.runtime.sim.run_memo import _SLACK
    maxima = [max(column) for column in zip(*sizes)]
    bounds = [3 * used + _SLACK for used in (6 * per_run, 3 * per_run + 3, 3 * per_run)]
    assert all(m <= b for m, b in zip(maxima, bounds)), (maxima, bounds)
    dev.tasks, dev.last_run = [], None
    gc.collect()
    assert refs and all(r() is None for r in refs)


_VALID = """
import pypto.language as pl

@pl.program
class Valid:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(pl.adds(t, 1.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
{body}
        return y
"""


def test_an_op_returning_the_callers_own_view_keeps_no_region_of_it(tmp_path) -> None:
    """`set_validshape` returns its source: given the caller's own view, the memo keeps nothing of
    it, so when the caller moves that view in place and passes it to a kernel (another program
    on the same device) the task's region is the view's new one."""
    from pypto.runtime.sim.regions import region_of
    dev = None
    progs = []
    for name, body in (("valid", "        v = pl.tensor.set_validshape(x, [16, 64])\n        y = self.inc(v, y)"),
                       ("plain", "        y = self.inc(x, y)")):
        cp = ir.compile(pl.parse(_VALID.format(body=body)), output_dir=tmp_path / name, dump_passes=False)
        progs.append(cp)
        dev = dev or SimDevice(cp.backend_type)
    base, y = torch.randn(32, 64), torch.zeros(16, 64)
    x = base[16:]
    dev.run(progs[0].program, progs[0].entry_function, [x, y], replay=False)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
    x.set_(base.untyped_storage(), 0, (16, 64), (64, 1))     # the caller's view, now the top half
    dev.run(progs[1].program, progs[1].entry_function, [x, y], replay=False)
    torch.testing.assert_close(y, base[:16] + 1, rtol=0, atol=0)
    assert dev.tasks[0].accesses[0][1] == region_of(x)


_HALFWAY = """
import pypto.language as pl

@pl.program
class Halfway:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
          o: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [r, 0], [16, 64])
        o = pl.store(t, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32],
             o: pl.InOut[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(8):
            s = pl.slice(o, [16, 64], [i * 16, 0])
            s = self.k(a, i * 16, s)
        return o
"""


def test_a_run_failing_half_way_keeps_no_tensor_alive_and_its_times_readable(tmp_path) -> None:
    """Task 4 loads rows 64:80 of a 64-row tensor: the run fails after tasks 0-3 ran. Its queues
    no longer hold the caller's tensors once the record is dropped, and the cycles it reached stay
    readable (a distributed rank's clock advances by them)."""
    from pypto.core.errors import RuntimeSimError
    cp = ir.compile(pl.parse(_HALFWAY), output_dir=tmp_path / "halfway", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    a, o = torch.randn(64, 64), torch.zeros(128, 64)
    refs = [weakref.ref(a), weakref.ref(o)]
    with pytest.raises(RuntimeSimError, match=r"task 4 .*out of bounds"):
        dev.run(cp.program, cp.entry_function, [a, o], replay=False)
    torch.testing.assert_close(o[:64], a, rtol=0, atol=0)
    assert dev.scheduler.makespan > 0
    del a, o
    dev.tasks, dev.last_run = [], None
    gc.collect()
    assert [r() for r in refs] == [None, None]
