"""Simulator throughput: tasks/s, tile-ops/s and wall time relative to torch eager.

    python benchmarks/sim_throughput.py [--repeat N] [--profile]

Workloads, each checked against torch before it is timed:

(a) a 2048 x 2048 FP32 add in 128 x 128 tiles, one task per tile (256 tasks, 4 tile ops each).
    Three 64 KiB tiles would not fit the 184 KiB Vec of Ascend910B; MemoryReuse computes the sum in
    place over an operand the add reads for the last time.
(b) a 1024^3 FP16 matmul in 128-tiles with FP32 accumulation: one task per 128 x 128 output tile
    (64 tasks), each looping over K in 128-steps (Mat -> Left/Right -> Acc; 41 tile ops per task).
(c) the SwiGLU FFN of `examples/models/ffn.py` (y = (SiLU(x W1) * (x W3)) W2, FP16 weights) for
    256 tokens, 512 -> 1024 -> 512: cube tasks for the three projections, vector tasks for SiLU * U.

For (a) and (b) the benchmark also times a *tile-level floor*: the torch operations the tiles need
and nothing else, in a plain Python loop on one intra-op thread, like the simulator. For (a) each
128 x 128 tile of a and b is copied into a preallocated Vec buffer, added in place and copied back;
for (b) each operand tile is copied from DDR into a preallocated Mat buffer, then into Left/Right,
converted to FP32, multiplied and accumulated, the result copied back. "x floor" is the simulator's own overhead
(orchestration, dependencies, scheduling, interpretation); "floor x eager" is what working in
128-tiles costs on this CPU before any simulation.

Tensors are resident DeviceTensors of a `ChipWorker`, so the timings are the simulator's own work
(orchestration, dependency tracking, scheduling, kernel interpretation), not host copies. Torch
eager does the same math in one call each: `a + b`, and `a.float() @ b.float()`. Times are the
median of `--repeat` runs, measured in the same process, a replayed, a full and an eager call in
turn (so none of them runs with the CPU caches the others left warm); wall time decides the
targets (see the end of this text), and the process CPU time is printed too. The simulator runs single tile ops on one intra-op thread (see `SimDevice`) and the
large batched ops of a replayed run on the caller's threads (`ops/threads.py`); torch eager uses its
default (all cores).

Three kinds of simulator run are timed separately, since they differ by several times:
- "cold": the first call of the handle after `register` — a full simulation that also prepares
  every kernel and orchestration (one sample);
- "full": later calls with replay off (`RunConfig(sim_replay=False)`, on a second worker): a full
  simulation of prepared kernels — orchestration, dependencies, scheduling and kernels (the tile
  ops of tasks whose cost is known without them deferred and batched: `runtime/sim/deferred.py`);
  these calls alternate with the replayed ones, so both see the same load;
- "replay": later calls with replay on (the default): the schedule recorded by the first call is
  replayed and only the kernels' numbers are computed again (`runtime/sim/replay.py`). The
  benchmark checks that these calls were replays.
"x eager", "tasks/s" and "tile-ops/s" are for replayed runs; "us/task" is given for both. The
host threads the simulator's large batched ops could use at each replayed call (the idle cores,
`runtime/sim/host_cores.py`) are printed per workload: one on a busy machine, or just after heavy
work, whatever torch's own intra-op count.

The programs are built into a temporary folder, removed at the end (their compile-time performance
hints stay there, not on stderr). Tile-ops/s is printed for (a) and (b), whose tasks all run one kernel with a known op count, and
"-" for (c), whose tasks run three different kernels. On a machine shared with other jobs the
two-threaded figures (eager, and the simulator's batched ops) suffer more than one-threaded work,
so the "x eager" ratios swing (the FFN can even come out below 1x); compare runs on an idle machine.

Targets on the 2-core CI machines (issue 14 item 5): (a) at most 75 us per task; (b) within 3x of
torch eager; each is printed for replayed runs and for full simulations, in wall time, the measure
the issue took its figures in, on an idle machine (the run prints the 1-minute load average: on a
busy machine the simulator's batched ops get one host thread and the figures do not decide). The
process CPU time is printed as well, to compare runs on a machine shared with other jobs; it is not
held against the targets: it adds up both cores whenever the simulator uses them (as the issue
asks) and counts torch's OpenMP threads waiting actively after each op, so it sits above wall time
for the simulator and for torch eager alike. Torch eager runs the whole product as one
two-threaded GEMM, while the simulator works in 128-tiles; the tile-level floor each run prints (on
one thread) shows what working in tiles costs by itself, and a replayed run can go below it by
running a batch's GEMMs and copies on both cores.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT / "src"))
sys.path.insert(0, str(_ROOT / "examples" / "models"))

from _tiled_matmul import tiled_matmul  # noqa: E402  (benchmarks/, the script's folder)
from ffn import ffn_function, torch_ffn  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.runtime import ChipWorker, RunConfig  # noqa: E402
from pypto.runtime.sim.cost_model import cycles_to_us  # noqa: E402
from pypto.runtime.sim.host_cores import available_threads  # noqa: E402

N_ADD, N_MM, T = 2048, 1024, 128
FFN_M, FFN_D, FFN_F = 256, 512, 1024


@pl.program
class AddTiles:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tile(self, a: pl.Tensor[[T, T], pl.FP32], b: pl.Tensor[[T, T], pl.FP32],
                 c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        ta = pl.load(a, [0, 0], [T, T])
        tb = pl.load(b, [0, 0], [T, T])
        tc = pl.add(ta, tb)
        c = pl.store(tc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[N_ADD, N_ADD], pl.FP32], b: pl.Tensor[[N_ADD, N_ADD], pl.FP32],
             c: pl.Out[pl.Tensor[[N_ADD, N_ADD], pl.FP32]]) -> pl.Tensor[[N_ADD, N_ADD], pl.FP32]:
        for i in pl.range(0, N_ADD, T):
            for j in pl.range(0, N_ADD, T):
                sa = pl.slice(a, [T, T], [i, j])
                sb = pl.slice(b, [T, T], [i, j])
                sc = pl.slice(c, [T, T], [i, j])
                sc = self.add_tile(sa, sb, sc)
        return c


MatmulTiles = tiled_matmul(N_MM, T)


def ffn_program() -> object:
    """The FFN of examples/models/ffn.py as a program: y = ffn(x, w1, w3, w2)."""
    ffn = ffn_function(FFN_M, FFN_D, FFN_F)

    @pl.program
    class FFN:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[FFN_M, FFN_D], pl.FP16], w1: pl.Tensor[[FFN_D, FFN_F], pl.FP16],
                 w3: pl.Tensor[[FFN_D, FFN_F], pl.FP16], w2: pl.Tensor[[FFN_F, FFN_D], pl.FP16],
                 y: pl.Out[pl.Tensor[[FFN_M, FFN_D], pl.FP32]]):
            y = ffn(x, w1, w3, w2, y)
    return FFN


def matmul_floor(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """The tile-level floor of (b): c = a @ b through the same per-tile copies and GEMMs the kernel
    performs, into preallocated buffers, without any simulator (module docstring)."""
    mat = torch.empty(2, T, T, dtype=a.dtype)
    left, right = torch.empty(T, T, dtype=a.dtype), torch.empty(T, T, dtype=b.dtype)
    acc = torch.empty(T, T)
    for i in range(0, N_MM, T):
        for j in range(0, N_MM, T):
            for k in range(0, N_MM, T):
                mat[0].copy_(a[i:i + T, k:k + T])
                mat[1].copy_(b[k:k + T, j:j + T])
                left.copy_(mat[0])
                right.copy_(mat[1])
                if k == 0:
                    torch.mm(left.float(), right.float(), out=acc)
                else:
                    acc.addmm_(left.float(), right.float())
            c[i:i + T, j:j + T].copy_(acc)


def add_floor(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """The tile-level floor of (a): c = a + b through the kernel's per-tile copies into and out of
    two preallocated Vec tiles (the sum in place over the first, as MemoryReuse plans it)."""
    va, vb = torch.empty(T, T), torch.empty(T, T)
    for i in range(0, N_ADD, T):
        for j in range(0, N_ADD, T):
            va.copy_(a[i:i + T, j:j + T])
            vb.copy_(b[i:i + T, j:j + T])
            torch.add(va, vb, out=va)
            c[i:i + T, j:j + T].copy_(va)


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process, all threads) over `repeat` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def profile(fn: Callable[[], object], top: int = 15) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def run_case(name: str, program: object, host: list[torch.Tensor], expected: Callable[[], torch.Tensor],
             ops_per_task: int, repeat: int, do_profile: bool, tol: float,
             build_dir: str | None = None) -> dict[str, float]:
    """Time the three kinds of run (module docstring) and torch eager. The replayed, full and eager
    calls take turns (the simulator's on two workers, replay on / off), so all three see the same
    load and the same state of the CPU caches; each worker's first call is its cold run. Checks the
    results, and that the replayed calls were replays. The build goes to `build_dir`/`name` (the
    default folder when None); its performance hints stay in its report, not on stderr."""
    compiled = ir.compile(program, dump_passes=False, quiet_hints=True,
                          output_dir=None if build_dir is None else os.path.join(build_dir, name))
    want = expected()
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as wr, \
            ChipWorker(config=RunConfig(platform="a2a3sim", sim_replay=False)) as wf:
        runs = []
        for w in (wr, wf):
            dev = [w.alloc_tensor(t.shape, t.dtype, init=t) for t in host]
            handle = w.register(compiled)
            runs.append((lambda h=handle, d=dev: h(*d), dev))
        cold, cold_cpu = median_time(runs[0][0], 1)   # full simulation + preparing kernels and arenas
        runs[1][0]()
        expected()
        times: list[list[tuple[float, float]]] = [[], [], []]
        used: list[int] = []    # the host threads each replayed call's batched ops could use
        for _ in range(repeat):     # replayed, full and eager calls in turn: all see the same machine
            used.append(available_threads(torch.get_num_threads()))
            for k, call in enumerate((runs[0][0], runs[1][0], expected)):
                times[k].append(median_time(call, 1))
        for _, dev in runs:
            torch.testing.assert_close(dev[-1].to_host(), want, rtol=tol, atol=tol)
        if wr.device.run_plans.replays != repeat or len(wf.device.run_plans):
            raise AssertionError(f"{wr.device.run_plans.replays} of {repeat} calls were replayed")
        rec, rec_full = wr.device.last_run, wf.device.last_run
        if rec.makespan_cycles != rec_full.makespan_cycles:
            raise AssertionError("a replayed run's schedule differs from the full simulation's")
        if do_profile:
            for (call, _), kind in zip(runs, ("replayed", "fully simulated")):
                print(f"--- profile of one {kind} run of ({name}) ---")
                print(profile(call))
    sim, sim_cpu = (statistics.median(t[i] for t in times[0]) for i in (0, 1))
    full, full_cpu = (statistics.median(t[i] for t in times[1]) for i in (0, 1))
    eager, eager_cpu = (statistics.median(t[i] for t in times[2]) for i in (0, 1))
    tasks = len(rec.tasks)
    return {"tasks": tasks, "sim_s": sim, "eager_s": eager, "tasks_per_s": tasks / sim,
            "tile_ops_per_s": tasks * ops_per_task / sim if ops_per_task else None, "us_per_task": sim / tasks * 1e6,
            "ratio": sim / eager, "simulated_us": cycles_to_us(rec.makespan_cycles),
            "sim_cpu_s": sim_cpu, "eager_cpu_s": eager_cpu, "cold_s": cold, "cold_cpu_s": cold_cpu,
            "full_s": full, "full_cpu_s": full_cpu, "full_us_per_task": full / tasks * 1e6,
            "host_threads": (min(used), max(used))}


def _than_full(full: float, replay: float) -> str:
    """How a replayed run compares with a full simulation, as "1.25x faster than full" or, when
    the replay took longer (a loaded machine), "1.18x slower than full"."""
    if replay <= full:
        return f"{full / replay:5.2f}x faster than full"
    return f"{replay / full:5.2f}x slower than full"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per workload (median)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one run of each")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    load = os.getloadavg()[0]   # before this run's own work raises it
    builds = tempfile.TemporaryDirectory(prefix="sim_throughput_")   # the programs' builds, removed at the end
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads")

    a, b = torch.randn(N_ADD, N_ADD), torch.randn(N_ADD, N_ADD)
    add = run_case("a", AddTiles, [a, b, torch.zeros(N_ADD, N_ADD)], lambda: a + b, 4, args.repeat,
                   args.profile, 0.0, builds.name)
    am, bm = torch.randn(N_MM, N_MM).half(), torch.randn(N_MM, N_MM).half()
    mm = run_case("b", MatmulTiles, [am, bm, torch.zeros(N_MM, N_MM)], lambda: am.float() @ bm.float(),
                  1 + 5 * (N_MM // T), args.repeat, args.profile, 1e-2, builds.name)
    floor_out, add_out = torch.zeros(N_MM, N_MM), torch.zeros(N_ADD, N_ADD)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        matmul_floor(am, bm, floor_out)
        torch.testing.assert_close(floor_out, am.float() @ bm.float(), rtol=1e-2, atol=1e-2)
        floor, _ = median_time(lambda: matmul_floor(am, bm, floor_out), args.repeat)
        add_floor(a, b, add_out)
        torch.testing.assert_close(add_out, a + b, rtol=0, atol=0)
        a_floor, a_floor_cpu = median_time(lambda: add_floor(a, b, add_out), args.repeat)
    finally:
        torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(FFN_M, FFN_D, generator=g).half()
    w1, w3 = ((torch.randn(FFN_D, FFN_F, generator=g) / FFN_D ** 0.5).half() for _ in range(2))
    w2 = (torch.randn(FFN_F, FFN_D, generator=g) / FFN_F ** 0.5).half()
    ffn = run_case("c", ffn_program(), [x, w1, w3, w2, torch.zeros(FFN_M, FFN_D)],
                   lambda: torch_ffn(x, w1, w3, w2), 0, args.repeat, args.profile, 1e-2, builds.name)

    rows = [("(a) 2048^2 FP32 add, 128x128 tiles", add), ("(b) 1024^3 FP16 matmul, FP32 acc", mm),
            (f"(c) FFN {FFN_M}x{FFN_D}->{FFN_F}->{FFN_D}", ffn)]
    builds.cleanup()
    print("Wall time, medians. cold = first call after register (full simulation + preparing kernels); full = "
          "later calls, replay off;\nreplay = later calls replaying the first call's schedule (the default). "
          "eager = torch doing the same math in one call.\nx eager = replay ms / eager ms; tasks/s and "
          "tile-ops/s: replayed runs (tile-ops/s '-' for (c): its tasks run three kernels of different "
          "op counts).")
    print(f"{'workload':<36} {'tasks':>6} {'cold ms':>9} {'full ms':>9} {'replay ms':>10} {'eager ms':>9} "
          f"{'x eager':>8} {'tasks/s':>9} {'tile-ops/s':>11} {'us/task full':>13} {'us/task replay':>15} "
          f"{'simulated us':>13}")
    for label, r in rows:
        print(f"{label:<36} {r['tasks']:>6} {r['cold_s'] * 1e3:>9.2f} {r['full_s'] * 1e3:>9.2f} "
              f"{r['sim_s'] * 1e3:>10.2f} {r['eager_s'] * 1e3:>9.2f} {r['ratio']:>8.2f} {r['tasks_per_s']:>9.0f} "
              f"{'-' if r['tile_ops_per_s'] is None else format(r['tile_ops_per_s'], '.0f'):>11} "
              f"{r['full_us_per_task']:>13.1f} {r['us_per_task']:>15.1f} {r['simulated_us']:>13.1f}")
    print(f"(a) tile-level floor (one thread) {a_floor * 1e3:.2f} ms ({a_floor / add['tasks'] * 1e6:.1f} us/task wall, "
          f"{a_floor_cpu / add['tasks'] * 1e6:.1f} CPU): replayed simulator {add['sim_s'] / a_floor:.2f}x floor "
          f"(full simulation {add['full_s'] / a_floor:.2f}x), floor {a_floor / add['eager_s']:.2f}x torch eager")
    print(f"(b) tile-level floor (one thread) {floor * 1e3:.2f} ms: replayed simulator {mm['sim_s'] / floor:.2f}x floor "
          f"(full simulation {mm['full_s'] / floor:.2f}x), floor {floor / mm['eager_s']:.2f}x torch eager")
    print("host threads the simulator's large batched ops could use (idle cores, runtime/sim/host_cores.py; "
          "PYPTO_SIM_THREADS fixes it): " + ", ".join(
              f"{label[:3]} {lo}" + (f"-{hi}" if hi != lo else "") for label, r in rows
              for lo, hi in [r["host_threads"]]))
    print("CPU time, for comparing runs on a shared machine (all threads of this process, so above wall time "
          "whenever both cores work,\nand torch's OpenMP threads wait actively after each op; not the targets' measure):")
    for label, r in rows:
        n = r["tasks"]
        print(f"  {label:<34} cold {r['cold_cpu_s'] * 1e3:8.2f} ms  full {r['full_cpu_s'] * 1e3:8.2f} ms "
              f"({r['full_cpu_s'] / n * 1e6:7.1f} us/task)  replay {r['sim_cpu_s'] * 1e3:8.2f} ms "
              f"({r['sim_cpu_s'] / n * 1e6:7.1f} us/task)  eager {r['eager_cpu_s'] * 1e3:8.2f} ms  "
              f"replay {r['sim_cpu_s'] / r['eager_cpu_s']:5.2f}x eager, {_than_full(r['full_cpu_s'], r['sim_cpu_s'])}")
    print(f"Targets, wall time on an idle 2-core machine (1-minute load average at the start: {load:.2f}"
          + (")" if load < 0.5 else "; the machine was busy, so the simulator's batched ops may have had one "
             "host thread: rerun when it is idle to judge the targets)") + ":")
    for kind, replay in (("replayed runs", True), ("full simulations", False)):
        a_us = (add["sim_s"] if replay else add["full_s"]) / add["tasks"] * 1e6
        b_x = (mm["sim_s"] if replay else mm["full_s"]) / mm["eager_s"]
        what = f"{kind}:"
        print(f"target (a) <= 75 us per task, {what:<18} {'met' if a_us <= 75.0 else 'MISSED'} ({a_us:.1f} us)")
        print(f"target (b) <= 3x torch eager, {what:<18} {'met' if b_x <= 3.0 else 'MISSED'} ({b_x:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
