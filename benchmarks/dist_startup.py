"""Start-up and per-call overhead of the multi-rank runtime (`pypto.runtime.dist`), fork vs spawn.

    python benchmarks/dist_startup.py [--ranks 2 4] [--calls 20]

For each start method and world size: the wall time to start the rank processes and finish a first
trivial call (every rank notifies its neighbour and waits: one round through the Comm), then the
mean wall time of further such calls on the running world, and the time to close it. Figures are
this machine's wall time; the ratio spawn / fork is the useful number (spawn re-imports torch and
PyPTO in every rank).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pypto.runtime.config import DistributedConfig  # noqa: E402
from pypto.runtime.dist.rank import WindowArg  # noqa: E402
from pypto.runtime.dist.world import World, call_on_ranks  # noqa: E402


def neighbour_round(comm, sig):
    """Notify the next rank, wait for the previous one, then clear the cell (self-clearing)."""
    comm.notify(sig[0], (comm.rank + 1) % comm.nranks, 1, "add")
    comm.wait(sig[0], 1, "ge")
    comm.notify(sig[0], comm.rank, -1, "add")


def measure(method: str, p: int, calls: int) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    w = World({}, None, DistributedConfig(device_ids=list(range(p)), start_method=method))
    try:
        spec = w.alloc_window(8)
        args = [[WindowArg(spec.wid, 0, (2,), torch.int32)]] * p
        call_on_ranks(w, neighbour_round, args)
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
        for _ in range(calls):
            call_on_ranks(w, neighbour_round, args)
        per_call = (time.perf_counter() - t1) / calls
    finally:
        t2 = time.perf_counter()
        w.close()
        close = time.perf_counter() - t2
    return first, per_call, close


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    print(f"{'method':8} {'P':>3} {'start+first call s':>19} {'per call ms':>12} {'close s':>8}")
    base: dict[int, float] = {}
    for method in ("fork", "spawn"):
        for p in a.ranks:
            first, per_call, close = measure(method, p, a.calls)
            ratio = f"  ({first / base[p]:.1f}x fork)" if method != "fork" and p in base else ""
            base.setdefault(p, first)
            print(f"{method:8} {p:>3} {first:>19.3f} {per_call * 1e3:>12.2f} {close:>8.3f}{ratio}")


if __name__ == "__main__":
    main()
