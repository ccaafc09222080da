"""The yardstick of benchmarks/collectives.py: `torch.distributed` (gloo backend, loopback) doing the
same allreduce, one process per rank, in the same run. Not a benchmark by itself."""

from __future__ import annotations

import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

__all__ = ["gloo_allreduce_seconds"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, numel: int, iters: int, q: mp.Queue) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    x = torch.empty(numel)
    x.fill_(rank + 1.0)
    dist.all_reduce(x)                      # warm-up: connections, buffers
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        x.fill_(rank + 1.0)
        dist.all_reduce(x)
    dist.barrier()
    seconds = (time.perf_counter() - start) / iters
    ok = bool(torch.all(x == world * (world + 1) / 2))
    if rank == 0:
        q.put((seconds, ok))
    dist.destroy_process_group()


def gloo_allreduce_seconds(world: int, numel: int, iters: int = 5) -> float:
    """Wall seconds of one FP32 SUM allreduce of `numel` elements over `world` gloo ranks (mean of
    `iters` calls after a warm-up; process start and connection set-up excluded).

    Raises:
        RuntimeError: gloo gave a wrong sum.
    """
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, world, port, numel, iters, q)) for r in range(world)]
    for p in procs:
        p.start()
    seconds, ok = q.get()
    for p in procs:
        p.join()
    if not ok:
        raise RuntimeError("gloo allreduce gave a wrong sum")
    return seconds
