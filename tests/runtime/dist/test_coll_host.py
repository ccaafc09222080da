"""Collectives in complete distributed programs (`@pl.jit.host`, one rank process per device): a
kernel-level allreduce in a user kernel, and host-level collectives that become builtin chip
programs (with and without a signal) — checked against torch at P = 2, 3, 4 (SPEC §8)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig

R, C = 8, 96
NR = pl.dynamic("NR")


def _cfg(p: int) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p))))


# ---- a kernel-level ring allreduce inside the user's kernel ------------------------------------
@pl.jit.incore
def scaled_sum(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
               out: pl.Out[pl.Tensor]):
    t = pl.load(inp, [0, 0], [R, C])
    data = pl.store(pl.tile.muls(t, 2.0), [0, 0], data)     # my contribution, in my window
    data = pld.allreduce(data, sig, mode="ring")
    r = pl.load(data, [0, 0], [R, C])
    out = pl.store(r, [0, 0], out)
    return data, out


@pl.jit
def ar_chip(inp: pl.Tensor, out: pl.Out[pl.Tensor], data: pl.InOut[pld.DistributedTensor],
            sig: pld.DistributedTensor):
    data, out = scaled_sum(inp, data, sig, out)
    return out


@pl.jit.host
def kernel_allreduce(xs: pl.Tensor[[NR, R, C], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, C], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, C], dtype=pl.FP32), [R, C], dtype=pl.FP32)
    nr = pld.world_size()
    sig = pld.window(pld.alloc_window_buffer(2 * (nr - 1) * nr * 4), [2 * (nr - 1), nr], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        ar_chip(xs[r], ys[r], data, sig, device=r)
    return ys


@pytest.mark.parametrize("p", [2, 3, 4])
def test_kernel_level_ring_allreduce_in_a_host_program(p):
    xs, ys = torch.randn(p, R, C), torch.zeros(p, R, C)
    assert kernel_allreduce(xs, ys, config=_cfg(p)) is ys
    for r in range(p):
        torch.testing.assert_close(ys[r], 2.0 * xs.sum(0), rtol=1e-5, atol=1e-5)


# ---- host-level collectives: builtin chip programs on every rank -------------------------------
@pl.jit.incore
def put_row(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    t = pl.load(inp, [0, 0], [R, C])
    data = pl.store(t, [0, 0], data)
    return data


@pl.jit.incore
def get_row(data: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    t = pl.load(data, [0, 0], [R, C])
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def fill(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    data = put_row(inp, data)
    return data


@pl.jit
def drain(data: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    out = get_row(data, out)
    return out


@pl.jit.host
def host_collectives(xs: pl.Tensor[[NR, R, C], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, C], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, C], dtype=pl.FP32), [R, C], dtype=pl.FP32)
    sig = pld.window(pld.alloc_window_buffer(pld.world_size() * 4), [pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        fill(xs[r], data, device=r)
    data = pld.allreduce(data, op=pld.ReduceOp.Max)        # no signal: the driver allocates one
    data = pld.allreduce(data, sig, op=pld.ReduceOp.Sum)   # every rank holds NR * max
    pld.barrier(sig)
    data = pld.broadcast(data, sig, root=1)
    for r in pl.range(pld.world_size()):
        drain(data, ys[r], device=r)
    return ys


@pytest.mark.parametrize("p", [2, 3, 4])
def test_host_level_collectives_dispatch_builtin_programs(p):
    xs, ys = torch.randn(p, R, C), torch.zeros(p, R, C)
    assert host_collectives(xs, ys, config=_cfg(p)) is ys
    want = xs.amax(0) * p
    for r in range(p):
        torch.testing.assert_close(ys[r], want, rtol=1e-5, atol=1e-5)
