"""Would a worker thread for tile numerics speed up the simulator? A probe (issue 14 item 5).

    python benchmarks/sim_threads_probe.py [--repeat N] [--book N]

The design evaluated: the main thread keeps scheduling (dependency tracking, rings, DDR grants,
orchestration: pure Python, holding the GIL) while the torch ops of tasks whose cost is static run
on a worker thread, in start order. Only the torch calls release the GIL, so at best they overlap
with the main thread's Python. The probe models workload (a) of `sim_throughput.py` (2048^2 FP32
add in 128 x 128 tiles, 256 tasks): per task `--book` iterations of dict / int bookkeeping on the
main thread, and the kernel's torch ops (two strided tile loads, an add, a store; one intra-op
thread). The default `--book` takes about as much CPU as the simulator's own per-task work outside
those torch ops (about twice their time).

It prints wall and process CPU time per task for: the bookkeeping alone, the torch ops alone, both
in one thread, and both with a one-worker pool (main thread + worker = the 2 cores of CI), also
with a 0.1 ms GIL switch interval (CPython's default of 5 ms lets a busy main thread keep the GIL
from a worker whose torch call has returned). Every variant is timed `--repeat` times (median),
interleaved, in the same process. See docs/performance.md, "Scheduling and threads", for results.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

N, T = 2048, 128


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per variant (median)")
    ap.add_argument("--book", type=int, default=1800, help="bookkeeping loop iterations per task")
    args = ap.parse_args()
    torch.set_num_threads(1)
    a, b, c = torch.randn(N, N), torch.randn(N, N), torch.zeros(N, N)
    bufs = [(torch.empty(T, T), torch.empty(T, T)) for _ in range(48)]   # one arena per vector core
    tiles = [(i, j) for i in range(0, N, T) for j in range(0, N, T)]

    def kernel(k: int, i: int, j: int) -> None:
        ta, tb = bufs[k % len(bufs)]
        ta.copy_(a[i:i + T, j:j + T])
        tb.copy_(b[i:i + T, j:j + T])
        torch.add(ta, tb, out=ta)
        c[i:i + T, j:j + T].copy_(ta)

    def bookkeeping() -> int:
        s, d = 0, {}
        for x in range(args.book):
            d[x & 7] = s
            s += x
        return s

    def book_only() -> None:
        for _ in tiles:
            bookkeeping()

    def kernels_only() -> None:
        for k, (i, j) in enumerate(tiles):
            kernel(k, i, j)

    def one_thread() -> None:
        for k, (i, j) in enumerate(tiles):
            bookkeeping()
            kernel(k, i, j)

    pool = ThreadPoolExecutor(1)

    def worker() -> None:
        futures = []
        for k, (i, j) in enumerate(tiles):
            bookkeeping()
            futures.append(pool.submit(kernel, k, i, j))
        for f in futures:
            f.result()
        assert torch.equal(c, a + b)

    def worker_fast_switch() -> None:
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
        try:
            worker()
        finally:
            sys.setswitchinterval(old)

    variants: list[tuple[str, Callable[[], None]]] = [
        ("bookkeeping only", book_only), ("torch ops only", kernels_only), ("one thread", one_thread),
        ("main + 1 worker", worker), ("main + 1 worker, 0.1 ms switch", worker_fast_switch)]
    walls: dict[str, list[float]] = {n: [] for n, _ in variants}
    cpus: dict[str, list[float]] = {n: [] for n, _ in variants}
    for _ in range(args.repeat):
        for name, fn in variants:
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(time.process_time() - c0)
    pool.shutdown()
    base_w, base_c = statistics.median(walls["one thread"]), statistics.median(cpus["one thread"])
    print(f"{'variant':<32} {'wall us/task':>13} {'cpu us/task':>12} {'wall vs 1 thread':>17} {'cpu vs 1 thread':>16}")
    for name, _ in variants:
        w, cp = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"{name:<32} {w / len(tiles) * 1e6:>13.1f} {cp / len(tiles) * 1e6:>12.1f} {w / base_w:>17.2f} "
              f"{cp / base_c:>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
