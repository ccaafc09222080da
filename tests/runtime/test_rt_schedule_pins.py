"""Whole-run schedules pinned (issue 14 item 5): the simulator's speed work must not move a cycle.

Each representative program below runs once; every task's record (kernel, core, submit / ready /
start / end / retire cycles, DDR waits, group offsets and pipe stalls, dependencies with their kinds,
cost), the orchestrator's stalls and waits, the scope records and the makespan are compared with
`data/schedule_pins.json`, which was written by the scheduler before it was optimised. The programs
cover: independent tiles sharing DDR bandwidth, a full task-window ring (orchestrator stalls), heap
rings with nested scopes, a dependency chain and a fan-in, a looping (dynamic-cost) cube kernel,
Group calls next to single tasks, and an SPMD gang with `sync_start`.

To re-pin after an intended change of the cost model or the scheduling policy, run this file with
`PYPTO_REPIN=1` and review the diff of the JSON file.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
import torch
from rings_programs import Chain, Gather, Many, ScopedTemps
from test_rt_cluster import _TWO, KINDS, NB, K, M, N, inputs, source

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.runtime import RunConfig

PINS = Path(__file__).parent / "data" / "schedule_pins.json"
T = 64


@pl.program
class AddTiles:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tile(self, a: pl.Tensor[[T, T], pl.FP32], b: pl.Tensor[[T, T], pl.FP32],
                 c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        c = pl.store(pl.add(pl.load(a, [0, 0], [T, T]), pl.load(b, [0, 0], [T, T])), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[512, 512], pl.FP32], b: pl.Tensor[[512, 512], pl.FP32],
             c: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
        for i in pl.range(0, 512, T):
            for j in pl.range(0, 512, T):
                sc = self.add_tile(pl.slice(a, [T, T], [i, j]), pl.slice(b, [T, T], [i, j]),
                                   pl.slice(c, [T, T], [i, j]))
        return c


@pl.program
class MatmulTiles:
    @pl.function(type=pl.FunctionType.InCore)
    def mm_tile(self, a: pl.Tensor[[T, 256], pl.FP16], b: pl.Tensor[[256, T], pl.FP16],
                c: pl.Out[pl.Tensor[[T, T], pl.FP32]]) -> pl.Tensor[[T, T], pl.FP32]:
        a0 = pl.load(a, [0, 0], [T, T], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [T, T], target_memory=pl.Mem.Mat)
        acc0 = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
        for k, (acc,) in pl.range(T, 256, T, init_values=(acc0,)):
            ak = pl.load(a, [0, k], [T, T], target_memory=pl.Mem.Mat)
            bk = pl.load(b, [k, 0], [T, T], target_memory=pl.Mem.Mat)
            nacc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                 pl.move(bk, target_memory=pl.Mem.Right))
            out = pl.yield_(nacc)
        c = pl.store(out, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 256], pl.FP16], b: pl.Tensor[[256, 256], pl.FP16],
             c: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
        for i in pl.range(0, 256, T):
            for j in pl.range(0, 256, T):
                sc = self.mm_tile(pl.slice(a, [T, 256], [i, 0]), pl.slice(b, [256, T], [0, j]),
                                  pl.slice(c, [T, T], [i, j]))
        return c


@pl.jit.incore
def add_rows(a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    r = pl.get_block_idx() * 16
    o = pl.store(pl.add(pl.load(a, [r, 0], [16, 128]), 1.0), [r, 0], o)
    return o


@pl.jit
def spmd_gang(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for i in pl.range(3):
        with pl.spmd(core_num=4, sync_start=True):
            o = add_rows(a, o)
    return o


def _task(t) -> list:
    cost = None if t.cost is None else [t.cost.cycles, sorted(t.cost.pipe_cycles.items()),
                                        sorted((f"{a.name}->{b.name}", n) for (a, b), n in t.cost.path_bytes.items()),
                                        t.cost.counts]
    return [t.task_id, t.kernel, t.core, t.submit_cycle, t.ready_cycle, t.start_cycle, t.end_cycle,
            t.retire_cycle, t.ddr_wait_cycles, t.offset_cycles, t.stall_cycles, t.group, t.subblock,
            t.block_idx, sorted(t.deps.items()), repr(cost),
            None if t.pipe_ops is None else [repr(p) for p in t.pipe_ops]]


def _record(rec) -> dict:
    return {"makespan": rec.makespan_cycles, "orchestrator": rec.orchestrator_cycles,
            "tasks": [_task(t) for t in rec.tasks],
            "orch_events": [[e.kind, e.name, e.start, e.end, repr(sorted(e.args.items()))] for e in rec.orch_events],
            "scope_events": [repr(sorted(e.items())) for e in rec.scope_events],
            "ring_peaks": {k: list(v) for k, v in sorted(rec.ring_peaks.items())}}


def _compile(prog, tmp_path, name, **kw):
    return ir.compile(prog, output_dir=tmp_path / name, dump_passes=False, **kw)


def _run_case(name: str, tmp_path) -> tuple[dict, list[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    if name in ("many_small_window", "gather", "scoped_temps", "chain"):
        prog = {"many_small_window": Many, "gather": Gather, "scoped_temps": ScopedTemps, "chain": Chain}[name]
        rows = {"many_small_window": 1024, "gather": 128, "scoped_temps": 128, "chain": 16}[name]
        x, y = torch.randn(rows, 64, generator=g), torch.zeros(rows, 64)
        cfg = RunConfig(ring_task_window=4, ring_heap=8192, enable_scope_stats=True, enable_chip_swimlane=2) \
            if name in ("many_small_window", "scoped_temps") else RunConfig(enable_chip_swimlane=2)
        cp = _compile(prog, tmp_path, name)
        cp(x, y, config=cfg)
        return _record(cp.last_run), [y]
    if name == "add_tiles":
        a, b, c = torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g), torch.zeros(512, 512)
        cp = _compile(AddTiles, tmp_path, name)
        cp(a, b, c)
        assert torch.equal(c, a + b)
        return _record(cp.last_run), [c]
    if name == "matmul_tiles":
        a, b = torch.randn(256, 256, generator=g).half(), torch.randn(256, 256, generator=g).half()
        c = torch.zeros(256, 256)
        cp = _compile(MatmulTiles, tmp_path, name)
        cp(a, b, c, config=RunConfig(enable_chip_swimlane=2))
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
        return _record(cp.last_run), [c]
    if name == "groups_and_singles":
        text = source("BOTH", split="LEFT_RIGHT")
        kernel = text[text.index("    @pl.function(type=pl.FunctionType.InCore"):
                      text.index("    @pl.function(type=pl.FunctionType.Orchestration")]
        prog = pl.parse(_TWO.format(kernel=kernel.rstrip(), R=NB * M, K=K, N=N))
        cp = _compile(prog, tmp_path, name, backend_type=BackendType.Ascend950, platform="a5sim")
        a, b, bias, c = inputs(seed=1)
        a2, c2 = inputs(seed=2)[0], torch.zeros_like(c)
        x, y = torch.randn(1600, 64, generator=g), torch.zeros(1600, 64)
        cp(a, a2, b, bias, x, c, c2, y, config=RunConfig(platform="a5sim"))
        torch.testing.assert_close(c, KINDS["BOTH"][1](a, b, bias), rtol=1e-3, atol=1e-3)
        return _record(cp.last_run), [c, c2, y]
    if name == "ddr_shared":    # 48 row blocks on 48 vector cores: more than the chip's DDR bandwidth
        spec = importlib.util.spec_from_file_location("roofline_bench", Path(__file__).parents[2] / "benchmarks"
                                                      / "roofline.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        a, b, c = torch.randn(768, 4096, generator=g), torch.randn(768, 4096, generator=g), torch.zeros(768, 4096)
        cp = _compile(mod.add_program(48, 16, 4096, 512), tmp_path, name, skip_ptoas=True)
        cp(a, b, c)
        assert torch.equal(c, a + b)
        return _record(cp.last_run), [c]
    assert name == "spmd_gang"
    a, o = torch.randn(64, 128, generator=g), torch.zeros(64, 128)
    spmd_gang(a, o)
    assert torch.equal(o, a + 1.0)
    return _record(spmd_gang.compile(a, o).last_run), [o]


CASES = ["add_tiles", "many_small_window", "gather", "scoped_temps", "chain", "matmul_tiles",
         "groups_and_singles", "spmd_gang", "ddr_shared"]


@pytest.mark.parametrize("name", CASES)
def test_whole_run_records_are_pinned(name, tmp_path) -> None:
    got = json.loads(json.dumps(_run_case(name, tmp_path)[0]))
    pins = json.loads(PINS.read_text()) if PINS.exists() else {}
    if os.environ.get("PYPTO_REPIN") == "1":
        pins[name] = got
        PINS.write_text(json.dumps(pins, indent=0, sort_keys=True) + "\n")
    assert name in pins, f"no pinned record for {name}: run with PYPTO_REPIN=1 once"
    want = pins[name]
    assert len(got["tasks"]) == len(want["tasks"])
    for g_task, w_task in zip(got["tasks"], want["tasks"]):
        assert g_task == w_task
    assert got == want
