"""Allreduce on the multi-rank simulator next to `torch.distributed` (gloo, loopback) doing the
same allreduce in the same run (issue 10 item 9; target: our wall time within 3x of gloo).

    python benchmarks/collectives.py [--ranks 2 4 8] [--mib 4] [--iters 3]

For each world size P and algorithm (mesh, ring): a host-level `pld.allreduce` (Sum) of a
`--mib` MiB FP32 window, compiled once and run through a prepared worker
(`compiled.prepare(persistent=True)`: rank processes started and the window allocated once, so the
timed calls measure the collective, not process start-up). Printed per row:

- `ours ms`: mean wall time of one host call (`rt(...)`) after a warm-up call;
- `gloo ms`: `torch.distributed.all_reduce` of the same number of FP32 elements over P gloo
  processes on loopback (benchmarks/_gloo.py), mean after a warm-up;
- `ours/gloo` against the target (<= 3x);
- `rank cpu ms`: CPU time the P rank processes spent per call, summed (`DispatchRecord.cpu_seconds`):
  the simulation's cost, which the machine's load does not inflate as it does the wall time;
- the simulated time of the collective (`DistributedWorker.last_cycles`, in AI-core cycles and µs)
  and the bus bandwidth it implies, 2(P-1)/P x bytes / simulated time (the NCCL convention).

Before timing, each (P, mode) is checked once against torch: a second host program loads random
data into the window, allreduces it and reads it back on every rank.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gloo import gloo_allreduce_seconds  # noqa: E402

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.config import DistributedConfig  # noqa: E402
from pypto.runtime.sim.cost_model import cycles_to_us  # noqa: E402

TARGET = 3.0
COLS = 1024
NR = pl.dynamic("NR")


@pl.jit
def load(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        data[:] = pl.add(inp, 0.0)
    return data


@pl.jit
def save(data: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(data, 0.0)
    return out


def programs(rows: int, mode: str):
    """(timed, checked) host programs for a [rows, COLS] FP32 window and one allreduce mode."""

    @pl.jit.host
    def timed(xs: pl.Tensor[[NR, 1, COLS], pl.FP32]):
        data = pld.window(pld.alloc_window_buffer([rows, COLS], dtype=pl.FP32), [rows, COLS], dtype=pl.FP32)
        pld.allreduce(data, mode=mode)
        return xs

    @pl.jit.host
    def checked(xs: pl.Tensor[[NR, rows, COLS], pl.FP32], ys: pl.Out[pl.Tensor[[NR, rows, COLS], pl.FP32]]):
        data = pld.window(pld.alloc_window_buffer([rows, COLS], dtype=pl.FP32), [rows, COLS], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            load(xs[r], data, device=r)
        pld.allreduce(data, mode=mode)
        for r in pl.range(pld.world_size()):
            save(data, ys[r], device=r)
        return ys

    return timed, checked


def measure(p: int, rows: int, mode: str, iters: int) -> tuple[float, float, int]:
    """(mean wall seconds of one allreduce host call, mean CPU seconds of its rank processes, its
    simulated cycles) on P ranks.

    Raises:
        RuntimeError: the checked run's result differs from torch.
    """
    timed, checked = programs(rows, mode)
    cfg = RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p))))
    xs, ys = torch.randn(p, rows, COLS), torch.zeros(p, rows, COLS)
    checked(xs, ys, config=cfg)
    if not torch.allclose(ys, xs.sum(0).expand_as(ys), rtol=1e-5, atol=1e-4):
        raise RuntimeError(f"allreduce {mode} at P={p} differs from torch")
    small = torch.zeros(p, 1, COLS).share_memory_()
    with timed.compile().prepare(config=cfg, persistent=True) as rt:
        rt(small)                                        # warm-up: windows mapped, programs loaded
        start, cpu = time.perf_counter(), 0.0
        for _ in range(iters):
            rt(small)
            cpu += sum(r.cpu_seconds for r in rt.last_records)
        seconds = (time.perf_counter() - start) / iters
        return seconds, cpu / iters, rt.last_cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--mib", type=float, default=4.0)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=["mesh", "ring"])
    a = ap.parse_args()
    rows = max(1, int(a.mib * 2 ** 20) // (4 * COLS))
    nbytes = rows * COLS * 4
    print(f"allreduce (Sum) of {nbytes / 2 ** 20:g} MiB FP32 ([{rows}, {COLS}]), mean of {a.iters} calls; "
          f"target ours/gloo <= {TARGET:g}x")
    print(f"{'P':>3} {'mode':5} {'ours ms':>9} {'gloo ms':>8} {'ours/gloo':>10} {'rank cpu ms':>12} {'sim cycles':>11} "
          f"{'sim us':>8} {'bus GB/s':>9}")
    for p in a.ranks:
        gloo = gloo_allreduce_seconds(p, rows * COLS, iters=max(a.iters, 5))
        for mode in a.modes:
            ours, cpu, cycles = measure(p, rows, mode, a.iters)
            us = cycles_to_us(cycles)
            bus = 2 * (p - 1) / p * nbytes / (us * 1e-6) / 1e9 if us else float("nan")
            verdict = "ok" if ours <= TARGET * gloo else "MISS"
            print(f"{p:>3} {mode:5} {ours * 1e3:>9.1f} {gloo * 1e3:>8.2f} {ours / gloo:>9.1f}x {cpu * 1e3:>12.1f} {cycles:>11} "
                  f"{us:>8.1f} {bus:>9.1f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
