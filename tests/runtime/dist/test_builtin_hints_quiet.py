"""The builtin chip programs of host-level collectives (`pypto.runtime.dist.builtin`) are the
library's code: their compile-time performance hints go to their own `report/perf_hints.log` but
print no console line, while the user's chip programs still get theirs (SPEC §12). A fresh-user
trial found every host allreduce build printing "N performance hint(s) for program
'pld_allreduce_sum_mesh_1_<hash>'" with hints at `<unknown>` that the user cannot act on."""

from __future__ import annotations

import logging

import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig

R, C = 16, 64   # 64 FP32 = 256 B rows: below the 512 B DDR granule, so PH001 fires in every program
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


@pl.jit.host
def ar_sum(xs: pl.Tensor[[NR, R, C], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, C], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, C], dtype=pl.FP32), [R, C], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        load(xs[r], data, device=r)
    pld.allreduce(data)
    for r in pl.range(pld.world_size()):
        save(data, ys[r], device=r)
    return ys


def _hint_lines(caplog, capsys) -> list[str]:
    err = capsys.readouterr().err.splitlines()
    logged = [r.getMessage() for r in caplog.records]
    return [ln for ln in [*err, *logged] if "performance hint" in ln]


def test_builtin_collective_hints_are_logged_but_not_printed(tmp_path, caplog, capsys):
    caplog.set_level(logging.WARNING)
    build = ir.compile(ar_sum.specialize(), tmp_path / "b")
    lines = _hint_lines(caplog, capsys)
    assert not [ln for ln in lines if "pld_allreduce" in ln], lines
    # the user's own chip programs still print their summary line
    assert any("for program 'load'" in ln for ln in lines), lines
    assert any("for program 'save'" in ln for ln in lines), lines
    # the builtin's hints are still in its report folder
    logs = list((tmp_path / "b" / "next_levels").glob("pld_allreduce_*/report/perf_hints.log"))
    assert len(logs) == 1 and "PH001" in logs[0].read_text(encoding="utf-8")
    assert str(build) == str(tmp_path / "b")


def test_running_a_host_allreduce_prints_no_builtin_hint(caplog, capsys):
    caplog.set_level(logging.WARNING)
    xs, ys = torch.randn(2, R, C), torch.zeros(2, R, C)
    ar_sum(xs, ys, config=RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1])))
    for r in range(2):
        torch.testing.assert_close(ys[r], xs.sum(0), rtol=1e-5, atol=1e-5)
    lines = _hint_lines(caplog, capsys)
    assert not [ln for ln in lines if "pld_allreduce" in ln or "<unknown>" in ln], lines
