"""Differential property for the boxes the simulator orders tasks by (runtime/sim/access.py).

Random programs — `pl.at` blocks inside `pl.range` / `pl.parallel` / `pl.unroll` loops (positive
and negative steps, scalar bounds) and calls of InCore kernels with scalar offset parameters —
load and store windows of shared tensors at offsets affine in the loop variables and scalars (with
products, `//`, `%`, `pl.min` / `pl.max`), with inner loops, `if` / `else` rebinding, `break`,
while loops, partial (`valid_shape`) loads, loop-dependent column offsets, InOut accumulation,
overlapping and disjoint windows, reads of rows earlier phases wrote at shifted offsets, a tensor
read and written by the same task, regions writing both tensors in either order, regions inside
`if`s, `main` returning one tensor (the other's last writes dead afterwards), tile names reused by
every region (in about half the programs), and tiles carried through loops in kernels and regions
and updated in place by an elementwise op (the carried value also read after its update in some).
Each runs on a2a3sim and a5sim and must

1. compute what the PyTorch reference of its frontend IR computes (`torch_codegen`, which runs
   the tasks one after another in program order) — the tensors start random, so a task that runs
   before its producer reads visibly stale data;
2. touch, in every load and store the kernels actually execute, only bytes inside the region its
   task declared for that argument, with the right direction — recorded by wrapping the
   `tile.load` / `tile.store` computes, so a too-narrow region fails here whatever the schedule;
3. never overlap in simulated time two tasks whose *executed* accesses conflict (one writes).

Only correctly rounded ops are used, so the comparison is exact.

Seeded and deterministic. `PYPTO_ACCESS_PROGRAMS` (default 40) sets how many programs run, in
chunks of 10 (one test each, so xdist spreads them). `check_access_program(seed, recorder)` is the
property for one program; `benchmarks/stress.py` runs it at scale.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import random
from types import SimpleNamespace

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.debug import torch_codegen
from pypto.ops import registry
from pypto.runtime.sim.device import SimDevice
from pypto.runtime.sim.regions import Region, region_of

R, C = 64, 32                       # every tensor is FP32 [R, C]
PROGRAMS = int(os.environ.get("PYPTO_ACCESS_PROGRAMS", "40"))
CHUNK = 10
PLATFORMS = ((BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim"))
_EVAL = {"pl": SimpleNamespace(min=min, max=max)}
# only correctly rounded ops: the simulator and the reference must agree bit for bit
UNARY = ["pl.add({t}, 1.0)", "pl.mul({t}, 0.5)", "pl.neg({t})", "pl.relu({t})", "pl.sub({t}, 2.0)"]
BINARY = ["pl.add({t}, {e})", "pl.sub({t}, {e})", "pl.maximum({t}, {e})", "pl.mul({t}, {e})"]

_HEAD = """import pypto.language as pl


@pl.program
class Gen:
"""
_KERNEL = """    @pl.function(type=pl.FunctionType.InCore)
    def {name}(self, s: pl.Tensor[[{R}, {C}], pl.FP32], r: pl.Scalar[pl.INDEX], c: pl.Scalar[pl.INDEX],
           d: pl.InOut[pl.Tensor[[{R}, {C}], pl.FP32]]) -> pl.Tensor[[{R}, {C}], pl.FP32]:
"""
_MAIN = """    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{R}, {C}], pl.FP32], a: pl.InOut[pl.Tensor[[{R}, {C}], pl.FP32]],
             b: pl.InOut[pl.Tensor[[{R}, {C}], pl.FP32]],
             n: pl.Scalar[pl.INDEX]) -> {ret}:
"""
_T = f"pl.Tensor[[{R}, {C}], pl.FP32]"
_RETURNS = {"a, b": f"tuple[{_T}, {_T}]", "a": _T, "b": _T}


def _values(expr: str, env: dict[str, list[int]]) -> set[int]:
    """Every value `expr` takes over all combinations of the variables' values."""
    names = [k for k in env if k in expr]
    return {eval(expr, _EVAL, dict(zip(names, combo)))  # noqa: S307 - our own generated text
            for combo in itertools.product(*(env[k] for k in names))}


class Gen:
    """DSL text of one random program (module docstring); `n` is the value of main's scalar."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = rng.randrange(6)
        self.kernels: list[str] = []
        self.body: list[str] = []
        self.rebound: set[str] = set()   # tensors of main that an earlier phase assigned
        self.reuse = rng.random() < 0.5  # every region names its tiles alike (else per region)

    # ---- expressions ---------------------------------------------------------------------------
    def offset(self, env: dict[str, list[int]], limit: int, small: bool = False) -> str:
        """A row offset over the variables of `env` whose every value lies in [0, limit]
        (clamped with pl.min / pl.max when the drawn expression would leave it)."""
        r, names = self.rng, list(env)
        v, u = r.choice(names), r.choice(names)
        s = r.choice([1, 2, 4, 8] if small else [1, 2, 4, 8, 12, 16])
        c = r.randrange(0, 8 if small else 24)
        m = r.randint(max(2, limit // 2), limit + 1)
        expr = r.choice([
            f"{v} * {s} + {c}", f"({v} + {c}) * {s}", f"{v} // {r.choice([2, 3])} * {s} + {c}",
            f"pl.min({v} * {s} + {c}, {max(0, limit - r.randrange(8))})", f"pl.max({c} - {v} * {s}, 0)",
            f"({v} * {s} + {c}) % {m}", f"{v} * {u} + {c}", f"{v} * {s} - {u}", f"{c}", f"{v}",
        ])
        vals = _values(expr, env)
        if min(vals) < 0 or max(vals) > limit:
            expr = f"pl.min(pl.max({expr}, 0), {limit})"
        return expr

    def column(self, env: dict[str, list[int]], width: int) -> str:
        if width == C:
            return "0"
        v = self.rng.choice(list(env))
        expr = self.rng.choice(["0", str(C - width), f"{v} % 2 * {width}", f"(1 - {v} % 2) * {width}",
                                f"pl.min({v}, 1) * {width}"])
        return expr if _values(expr, env) <= set(range(C - width + 1)) else "0"

    def window(self, env: dict[str, list[int]]) -> tuple[int, int, str, str]:
        h, w = self.rng.choice([8, 8, 16, 4]), self.rng.choice([16, 16, 32])
        return h, w, self.offset(env, R - h), self.column(env, w)

    def loop(self, env: dict[str, list[int]], orchestration: bool) -> tuple[str, list[int]]:
        """A loop header and the values its variable takes (kernel loops may run from `c`)."""
        r = self.rng
        k = r.randint(1, 5 if orchestration else 3)
        lo = r.randrange(3)
        forms = [(f"pl.range({k})", range(k)), (f"pl.range({lo}, {lo + 2 * k}, 2)", range(lo, lo + 2 * k, 2)),
                 (f"pl.range({k + lo - 1}, {lo - 1}, -1)", range(k + lo - 1, lo - 1, -1)),
                 (f"pl.range({2 * k}, 0, -2)", range(2 * k, 0, -2))]
        if orchestration:
            forms += [(f"pl.parallel({k})", range(k)), (f"pl.parallel({k})", range(k)),
                      (f"pl.parallel(n, n + {k})", range(self.n, self.n + k)),
                      (f"pl.unroll({min(k, 3)})", range(min(k, 3)))]
        if "c" in env:   # scalar bounds
            forms.append((f"pl.range(c, c + {k})", sorted({v for c in env["c"] for v in range(c, c + k)})))
        head, vals = r.choice(forms)
        return head, list(vals)

    def name(self, base: str) -> str:
        """A tile name: `base` itself when names are reused, else one of this block's own."""
        return base if self.reuse else f"{base}{len(self.body)}"

    # ---- phases --------------------------------------------------------------------------------
    def tensors(self) -> tuple[str, str]:
        """(source, destination): the source may be the destination or the input."""
        dst = self.rng.choice(["a", "b"])
        return self.rng.choice(["x", "a", "b", dst]), dst

    def accesses(self, ind: str, env: dict[str, list[int]], src: str, dst: str, other: str | None,
                 out: list[str]) -> None:
        """Lines loading a window of `src`, computing, and storing into `dst` (maybe accumulating
        into it), then, with `other`, storing a second window into it."""
        r = self.rng
        t, e, u = self.name("t"), self.name("e"), self.name("u")
        h, w, row, col = self.window(env)
        partial = r.random() < 0.25
        if partial:   # only the leading `v` rows move; only they have to lie inside the tensor
            v = r.randint(1, h - 1)
            row = self.offset(env, R - v)
            out.append(f"{ind}{t} = pl.load({src}, [{row}, {col}], [{h}, {w}], valid_shape=[{v}, {w}])")
            store_row = self.offset(env, R - v)
        else:
            out.append(f"{ind}{t} = pl.load({src}, [{row}, {col}], [{h}, {w}])")
            store_row = self.offset(env, R - h)
        store_col = self.column(env, w)
        if not partial and r.random() < 0.4:   # InOut accumulation into the stored window
            out.append(f"{ind}{e} = pl.load({dst}, [{store_row}, {store_col}], [{h}, {w}])")
            out.append(f"{ind}{u} = {r.choice(BINARY).format(t=t, e=e)}")
        else:
            out.append(f"{ind}{u} = {r.choice(UNARY).format(t=t)}")
        out.append(f"{ind}{dst} = pl.store({u}, [{store_row}, {store_col}], {dst})")
        if other is not None:
            lim = R - (v if partial else h)
            out.append(f"{ind}{other} = pl.store(pl.neg({u}), [{self.offset(env, lim)}, {store_col}], {other})")

    def accumulate(self, ind: str, env: dict[str, list[int]], src: str, dst: str, out: list[str]) -> None:
        """Lines carrying a tile loaded from `src` through a loop (variable `m`) that updates it in
        place by an elementwise op with a loaded tile — as a re-assigned name, or with explicit
        init_values where the body also stores the carried value after computing the next one —
        then storing it into `dst`."""
        r = self.rng
        acc, t, nxt = self.name("acc"), self.name("t"), self.name("nacc")
        h, w = r.choice([8, 16, 4]), r.choice([16, 32])
        out.append(f"{ind}{acc} = pl.load({src}, [{self.offset(env, R - h)}, {self.column(env, w)}], [{h}, {w}])")
        head, vals = self.loop(env, False)
        head = head.replace("pl.parallel", "pl.range").replace("pl.unroll", "pl.range")
        inner = dict(env, m=vals)
        load = f"pl.load({src}, [{self.offset(inner, R - h)}, {self.column(inner, w)}], [{h}, {w}])"
        ops = [f"pl.{op}({{a}}, {{b}})" for op in ("add", "sub", "maximum", "mul")] + \
              ["pl.neg(pl.add({a}, {b}))", "pl.mul({a}, 0.5)"]
        a, b = r.sample(["{acc}", t], 2)
        update = r.choice(ops).format(a=a, b=b)
        if r.random() < 0.5:
            out.append(f"{ind}for m in {head}:")
            out.append(f"{ind}    {t} = {load}")
            out.append(f"{ind}    {acc} = {update.format(acc=acc)}")
            if r.random() < 0.3:   # the new value stored inside the loop too
                out.append(f"{ind}    {dst} = pl.store({acc}, [{self.offset(inner, R - h)}, {self.column(inner, w)}], {dst})")
        else:
            it = self.name("acc_it")
            out.append(f"{ind}for m, ({it},) in {head[:-1]}, init_values=({acc},)):")
            out.append(f"{ind}    {t} = {load}")
            out.append(f"{ind}    {nxt} = {update.format(acc=it)}")
            if r.random() < 0.6:   # the carried value read after its update
                out.append(f"{ind}    {dst} = pl.store({it}, [{self.offset(inner, R - h)}, {self.column(inner, w)}], {dst})")
            out.append(f"{ind}    {acc} = pl.yield_({nxt})")
        out.append(f"{ind}{dst} = pl.store({acc}, [{self.offset(env, R - h)}, {self.column(env, w)}], {dst})")

    def at_phase(self) -> None:
        r = self.rng
        env = {"n": [self.n]}
        head, env["i"] = self.loop(env, True)
        self.body.append(f"        for i in {head}:")
        if r.random() < 0.3:   # a scalar computed by the orchestration, passed to the kernel
            j, expr = f"j{len(self.body)}", self.offset(env, 40, small=True)
            self.body.append(f"            {j} = {expr}")
            env[j] = sorted(_values(expr, env))
        ind = " " * 16
        if r.random() < 0.2:   # a region inside an if
            self.body.append(f"            if {r.choice(['i % 2 == 0', f'n > {r.randrange(6)}', 'i > 0'])}:")
            ind += "    "
        self.body.append(f"{ind[:-4]}with pl.at(level=pl.Level.CORE_GROUP):")
        if r.random() < 0.2:
            src, dst = self.tensors()
            self.accumulate(ind, env, src, dst, self.body)
            self.rebound.add(dst)
            return
        if r.random() < 0.4:
            khead, kvals = self.loop(env, True)
            khead = khead.replace("pl.parallel", "pl.range").replace("pl.unroll", "pl.range")
            self.body.append(f"{ind}for k in {khead}:")
            env["k"], ind = kvals, ind + "    "
        if r.random() < 0.25:   # two outputs, written in either order
            first, second = r.sample(["a", "b"], 2)
            self.accesses(ind, env, r.choice(["x", first, second]), first, second, self.body)
            self.rebound |= {"a", "b"}
        else:
            src, dst = self.tensors()
            self.accesses(ind, env, src, dst, None, self.body)
            self.rebound.add(dst)

    def call_phase(self) -> None:
        r = self.rng
        name = f"k{len(self.kernels)}"
        oenv = {"n": [self.n]}
        head, oenv["i"] = self.loop(oenv, True)
        rexpr = self.offset(oenv, 40, small=True)
        cexpr = r.choice(["0", "1", "i % 2", "n", "2"])
        env = {"r": sorted(_values(rexpr, oenv)), "c": sorted(_values(cexpr, oenv))}
        lines = [_KERNEL.format(name=name, R=R, C=C)]
        ind = " " * 8
        if r.random() < 0.3:
            expr = self.offset(env, 40, small=True)
            lines.append(f"{ind}q = {expr}")
            env["q"] = sorted(_values(expr, env))
        variant = r.choice(["loop", "loop", "loop", "if", "straight", "switch", "while", "acc"])
        if variant == "loop":
            khead, env["k"] = self.loop(env, False)
            lines.append(f"{ind}for k in {khead}:")
            body: list[str] = []
            self.accesses(ind + "    ", env, "s", "d", "d" if r.random() < 0.25 else None, body)
            jump = r.random()
            if jump < 0.15:     # skip the rest of one iteration
                body.insert(1, f"{ind}    if k == {r.choice(env['k'])}:\n{ind}        continue")
            elif jump < 0.3:    # leave the loop early
                body.append(f"{ind}    if k == {r.choice(env['k'])}:\n{ind}        break")
            lines += body
        elif variant == "if":
            h, w, row, col = self.window(env)
            lines.append(f"{ind}t = pl.load(s, [{row}, {col}], [{h}, {w}])")
            lines.append(f"{ind}if r > {r.choice(env['r'])}:")
            lines.append(f"{ind}    d = pl.store(pl.neg(t), [{self.offset(env, R - h)}, {self.column(env, w)}], d)")
            lines.append(f"{ind}else:")
            lines.append(f"{ind}    d = pl.store(pl.relu(t), [{self.offset(env, R - h)}, {self.column(env, w)}], d)")
        elif variant == "straight":
            h, w, row, col = self.window(env)
            lines.append(f"{ind}t = pl.load(s, [{row}, {col}], [{h}, {w}])")
            lines.append(f"{ind}e = pl.load(s, [{self.offset(env, R - h)}, {self.column(env, w)}], [{h}, {w}])")
            lines.append(f"{ind}d = pl.store({r.choice(BINARY).format(t='t', e='e')}, [{self.offset(env, R - h)}, {self.column(env, w)}], d)")
        elif variant == "acc":
            self.accumulate(ind, env, "s", "d", lines)
        elif variant == "switch":   # a carried tensor that starts as `s` and continues as `d`
            env["k"] = [0, 1]
            lines.append(f"{ind}cur = s")
            lines.append(f"{ind}for k in pl.range(2):")
            lines.append(f"{ind}    t = pl.load(cur, [{self.offset(env, R - 8)}, 0], [8, {C}])")
            lines.append(f"{ind}    cur = pl.store(pl.mul(t, 0.5), [{self.offset(env, R - 8)}, 0], d)")
            lines.append(f"{ind}d = cur")
        else:   # a while loop: its counter is carried, so its offsets are not traced
            env["j"] = [0, 1]
            lines.append(f"{ind}for (j, d2) in pl.while_(init_values=(0, d)):")
            lines.append(f"{ind}    pl.cond(j < 2)")
            lines.append(f"{ind}    t = pl.load(s, [{self.offset(env, R - 8)}, 0], [8, {C}])")
            lines.append(f"{ind}    d3 = pl.store(pl.add(t, 1.0), [{self.offset(env, R - 8)}, 0], d2)")
            lines.append(f"{ind}    j2, d4 = pl.yield_(j + 1, d3)")
            lines.append(f"{ind}d = d4")
        lines.append(f"{ind}return d")
        self.kernels.append("\n".join(lines))
        src, dst = self.tensors()
        self.body.append(f"        for i in {head}:")
        self.body.append(f"            {dst} = self.{name}({src}, {rexpr}, {cexpr}, {dst})")
        self.rebound.add(dst)

    def program(self) -> str:
        for _ in range(self.rng.randint(2, 4)):
            (self.at_phase if self.rng.random() < 0.5 else self.call_phase)()
        ret = self.rng.choice(["a, b", "a, b", "a", "b"])   # the other tensor's writes dead afterwards
        main = _MAIN.format(R=R, C=C, ret=_RETURNS[ret]) + "\n".join(self.body) + f"\n        return {ret}\n"
        return _HEAD + "\n\n".join(self.kernels + [main])


# ---- recording what the kernels really touch --------------------------------------------------

def _covers(decl: Region, act: Region) -> bool:
    if decl.key != act.key or act.lo < decl.lo or act.hi > decl.hi:
        return False
    if decl.box is None or act.box is None or decl.strides != act.strides:
        return True
    return all(a0 <= b0 and b1 <= a1 for (a0, a1), (b0, b1) in zip(decl.box, act.box))


class Recorder:
    """Checks every executed `tile.load` / `tile.store` against the declared regions of the
    running task(s) and keeps the executed regions per task id."""

    def __init__(self) -> None:
        self.current: list = []
        self.actual: dict[int, list[tuple[Region, bool]]] = {}
        self.violations: list[str] = []

    def touch(self, t: torch.Tensor, offsets: tuple, sizes: tuple, write: bool) -> None:
        if any(o < 0 or o + s > d for o, s, d in zip(offsets, sizes, t.shape)) or 0 in sizes:
            return   # out of bounds: the op raises its own error
        act = region_of(t[tuple(slice(o, o + s) for o, s in zip(offsets, sizes))])
        owners = [(task, acc) for task in self.current for acc in task.accesses if task.args[acc[0]] is t]
        for task, _ in owners:
            self.actual.setdefault(task.task_id, []).append((act, write))
        if not any(_covers(acc[1], act) and (acc[3] if write else acc[2] or acc[3]) for _, acc in owners):
            declared = [(task.task_id, acc[1], acc[2], acc[3]) for task, acc in owners]
            self.violations.append(f"{'store' if write else 'load'} {act} outside the declared {declared}")

    def wrap(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # every task's ops run when it starts, through the ops' general `compute` (no deferred,
        # batched numbers: `runtime/sim/deferred.py`), so each access is seen with its task
        monkeypatch.setenv("PYPTO_SIM_BATCH", "0")
        load, store = registry.get_op("tile.load"), registry.get_op("tile.store")

        def load_compute(*args, **kw):
            vs = args[3] if len(args) > 3 else kw.get("valid_shape")
            self.touch(args[0], tuple(args[1]), tuple(vs if vs is not None else args[2]), False)
            return load.compute(*args, **kw)

        def store_compute(*args, **kw):
            valid = kw.get("valid")
            vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(args[0].shape)
            self.touch(args[2], tuple(args[1]), vs, True)
            return store.compute(*args, **kw)

        monkeypatch.setitem(registry._REGISTRY, "tile.load", dataclasses.replace(load, compute=load_compute))
        monkeypatch.setitem(registry._REGISTRY, "tile.store", dataclasses.replace(store, compute=store_compute))
        execute, execute_group = SimDevice.execute, SimDevice.execute_group

        def one(device, task):
            self.current = [task]
            return execute(device, task)

        def group(device, tasks):
            self.current = list(tasks)
            return execute_group(device, tasks)

        monkeypatch.setattr(SimDevice, "execute", one)
        monkeypatch.setattr(SimDevice, "execute_group", group)

    def unordered(self, tasks: list) -> list[str]:
        """Pairs of tasks whose executed accesses conflict but which overlap in simulated time."""
        bad = []
        for p, q in itertools.combinations(tasks, 2):
            if p.group is not None and p.group == q.group:
                continue
            if any((wa or wb) and ra.overlaps(rb) for ra, wa in self.actual.get(p.task_id, ())
                   for rb, wb in self.actual.get(q.task_id, ())) and p.end_cycle > q.start_cycle:
                bad.append(f"tasks {p.task_id} and {q.task_id} conflict but overlap in time")
        return bad


def _narrowed(task) -> bool:
    return any(region_of(task.args[i]) != r for i, r, _, _ in task.accesses)


def _concurrent(tasks: list) -> bool:
    return any(p.start_cycle < q.end_cycle and q.start_cycle < p.end_cycle
               for p, q in itertools.combinations(tasks, 2))


def check_access_program(seed: int, rec: Recorder) -> dict[str, int]:
    """The property for the program of `seed` on both platforms (module docstring), with `rec`
    already wrapping the ops: raises AssertionError on a violation, returns counts of tasks,
    narrowed tasks and programs with concurrent tasks. `benchmarks/stress.py` runs it at scale."""
    stats = {"tasks": 0, "narrowed": 0, "concurrent": 0}
    gen = Gen(random.Random(seed))
    src = gen.program()
    prog = pl.parse(src)
    torch.manual_seed(seed)
    x, a, b = (torch.randn(R, C) for _ in range(3))
    ra, rb = a.clone(), b.clone()
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    ns["run"](x.clone(), ra, rb, gen.n)
    for backend, platform in PLATFORMS:
        compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True, backend_type=backend,
                              platform=platform)
        rec.actual, rec.violations = {}, []
        sa, sb = a.clone(), b.clone()
        compiled(x.clone(), sa, sb, gen.n)
        where = f"seed {seed} on {platform}:\n{src}"
        assert not rec.violations, f"{where}\n" + "\n".join(rec.violations)
        tasks = compiled.last_run.tasks
        assert not rec.unordered(tasks), where
        torch.testing.assert_close(sa, ra, rtol=0, atol=0, equal_nan=True, msg=lambda m, w=where: f"a: {m}\n{w}")
        torch.testing.assert_close(sb, rb, rtol=0, atol=0, equal_nan=True, msg=lambda m, w=where: f"b: {m}\n{w}")
        stats["tasks"] += len(tasks)
        stats["narrowed"] += sum(_narrowed(t) for t in tasks)
        stats["concurrent"] += _concurrent(tasks)
    return stats


@pytest.mark.parametrize("first", range(0, PROGRAMS, CHUNK))
def test_narrowed_regions_keep_every_dependency(first: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    rec.wrap(monkeypatch)
    stats = {"tasks": 0, "narrowed": 0, "concurrent": 0}
    for seed in range(first, min(first + CHUNK, PROGRAMS)):
        for k, v in check_access_program(seed, rec).items():
            stats[k] += v
    # the property is not vacuous: most tasks have a narrowed region, several programs overlap tasks
    assert stats["narrowed"] >= stats["tasks"] // 2, stats
    assert stats["concurrent"] >= 4, stats


_HEADER = """import pypto.language as pl


@pl.program
class TwoOutputs:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], a: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             b: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
"""
_SWAPPED = """        for i in pl.range(2):   # b is defined first, but a is the first parameter
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 8 + 32, 0], [8, 32])
                u = pl.add(t, 1.0)
                b = pl.store(u, [i * 8, 0], b)
                a = pl.store(pl.neg(u), [i * 8 + 16, 0], a)
        return b
"""
_DEAD = """        with pl.at(level=pl.Level.CORE_GROUP):   # a is written but not used afterwards
            t = pl.load(a, [32, 0], [8, 32])
            a = pl.store(pl.add(t, 1.0), [0, 0], a)
            b = pl.store(pl.neg(t), [16, 0], b)
        with pl.at(level=pl.Level.CORE_GROUP):
            t2 = pl.load(b, [16, 0], [8, 32])
            b = pl.store(pl.mul(t2, 2.0), [40, 0], b)
        return b
"""


@pytest.mark.parametrize("body", [_SWAPPED, _DEAD], ids=["swapped", "dead"])
def test_outlined_results_follow_the_parameter_order(body: str) -> None:
    """A region writing `a` and `b` in the other order than their parameters, or with `a` dead
    afterwards: the outlined function returns its Out/InOut tensors in parameter order (what a
    call stands for), so the loop does not carry them swapped and the next region does not get a
    tuple of both (both happened while outlining returned the used outputs in definition order)."""
    prog = pl.parse(_HEADER + body)
    x, a, b = (torch.randn(R, C) for _ in range(3))
    ra, rb = a.clone(), b.clone()
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    ns["run"](x.clone(), ra, rb)
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True)
    compiled(x.clone(), a, b)
    torch.testing.assert_close((a, b), (ra, rb), rtol=0, atol=0)


_AFTER_LOOP = """        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [8, 32])
            a = pl.store(pl.add(t, 1.0), [0, 0], a)
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 8, 0], [8, 32])
                a = pl.store(pl.neg(t), [i * 8 + 8, 0], a)
        with pl.at(level=pl.Level.CORE_GROUP):   # t named again after the loop
            t = pl.load(a, [8, 0], [8, 32])
            b = pl.store(pl.mul(t, 2.0), [0, 0], b)
        return b
"""
_OUTER_LOOP = """        for o in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [o * 8, 0], [8, 32])
                a = pl.store(pl.add(t, 1.0), [o * 8, 0], a)
            for i in pl.range(2):   # the next o assigns t before reading it
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(a, [i * 8, 0], [8, 32])
                    b = pl.store(pl.neg(t), [i * 8 + o * 16, 0], b)
        return b
"""
_IN_IF = """        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [8, 32])
            a = pl.store(pl.add(t, 1.0), [0, 0], a)
        for i in pl.range(3):
            if i > 0:   # t is not merged after the if: nothing reads it there
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(a, [i * 8 - 8, 0], [8, 32])
                    b = pl.store(pl.neg(t), [i * 8 + 8, 0], b)
        return b
"""


@pytest.mark.parametrize("body", [_AFTER_LOOP, _OUTER_LOOP, _IN_IF], ids=["after-loop", "outer-loop", "in-if"])
def test_a_tile_name_reused_by_later_regions_stays_in_its_region(body: str) -> None:
    """A tile name of a first region assigned again, before any read, by regions inside a loop
    (and after it, or around it, or inside an if in it): ConvertToSSA neither carries it around the
    loop nor merges it after the if, so it never becomes a value leaving its region (the loop
    carried it while any later statement read the name, the if merged it always, and outlining
    then rejected the program)."""
    prog = pl.parse(_HEADER + body)
    x, a, b = (torch.randn(R, C) for _ in range(3))
    ra, rb = a.clone(), b.clone()
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    ns["run"](x.clone(), ra, rb)
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True)
    compiled(x.clone(), a, b)
    torch.testing.assert_close((a, b), (ra, rb), rtol=0, atol=0)
