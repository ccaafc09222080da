"""Runtime DFX parity with upstream (SPEC §12, issue 12 item 3): swimlane levels 1-4, deps.json,
scope_stats.jsonl, args_dump/ with pl.dump_tag — each parsed back and checked against the run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch
from rings_programs import ROWS, Chain, twice
from test_rt_dfx import Staged
from test_rt_explicit_deps import TwoStage

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.cost_model import cycles_to_us


def _staged_args():
    return (torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
            torch.zeros(32, 32))


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return ir.compile(Chain, output_dir=tmp_path_factory.mktemp("chain"), dump_passes=False)


def _trace(cp, level: int) -> list[dict]:
    x, y = torch.randn(ROWS, 64), torch.zeros(ROWS, 64)
    cp(x, y, config=RunConfig(enable_chip_swimlane=level))
    assert torch.equal(y, x * 2 ** 17)
    doc = json.loads((Path(cp.output_dir) / "dfx_outputs" / "swimlane.json").read_text())
    assert doc["otherData"]["level"] == level
    return doc["traceEvents"]


def _kinds(ev: list[dict]) -> Counter:
    return Counter((e["ph"], e.get("cat")) for e in ev if e["ph"] != "M")


def test_swimlane_levels_add_events_step_by_step(chain) -> None:
    n = 17
    by_level = {level: _trace(chain, level) for level in (1, 2, 3, 4)}
    rec = chain.last_run
    k1 = _kinds(by_level[1])
    assert k1 == {("X", "task"): n, ("X", "submit"): n}
    k2 = _kinds(by_level[2])
    deps = sum(len(t.deps) for t in rec.tasks)
    ops = sum(len(t.pipe_ops) for t in rec.tasks)    # level 2 also places each op on its pipe's track
    assert ops >= 3 * n
    assert k2 == {**k1, ("i", "dispatch"): n, ("i", "finish"): n, ("s", "dep"): deps, ("f", "dep"): deps,
                  ("X", "pipe"): ops}
    k3 = _kinds(by_level[3])
    assert {k: v for k, v in k3.items() if k in k2} == k2
    extra3 = {k for k in k3 if k not in k2}
    assert extra3 == {("b", "sched"), ("e", "sched"), ("C", None)}
    k4 = _kinds(by_level[4])
    assert {k for k in k4 if k not in k3} == {("X", "scope"), ("X", "wait")}
    names = {e["args"]["name"] for e in by_level[3] if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0}
    assert names == {"orchestrator", "scheduler"}
    assert "scheduler" not in {e["args"]["name"] for e in by_level[2] if e["ph"] == "M" and e["name"] == "thread_name"}


def test_dispatch_finish_and_scheduler_phases_match_the_tasks(chain) -> None:
    ev = _trace(chain, 4)
    tasks = chain.last_run.tasks
    for e in ev:
        if e["ph"] == "i":
            t = tasks[e["args"]["task_id"]]
            assert e["ts"] == pytest.approx(cycles_to_us(t.start_cycle if e["name"] == "dispatch" else t.end_cycle))
            if e["name"] == "dispatch":
                assert e["args"]["ready_cycle"] == t.ready_cycle
                assert e["args"]["queued_cycles"] == t.start_cycle - t.ready_cycle
    # every task after the first waits for its predecessor: a "resolve deps" phase from submit to ready
    phases = {(e["id"], e["ph"]): e for e in ev if e.get("cat") == "sched" and e["name"] == "resolve deps"}
    assert {i for i, _ in phases} == set(range(1, 17))
    for t in tasks[1:]:
        assert t.ready_cycle == max(tasks[d].end_cycle for d in t.deps) > t.submit_cycle
        assert phases[(t.task_id, "b")]["ts"] == pytest.approx(cycles_to_us(t.submit_cycle))
        assert phases[(t.task_id, "e")]["ts"] == pytest.approx(cycles_to_us(t.ready_cycle))
    in_flight = [e["args"]["count"] for e in ev if e["ph"] == "C" and e["name"] == "tasks in flight"]
    assert max(in_flight) == chain.last_run.ring_peaks["task_window"][0] and in_flight[-1] == 0
    scope = [e for e in ev if e.get("cat") == "scope"]
    assert [(s["name"], s["args"]["tasks"]) for s in scope] == [("scope main", 17)]
    wait = next(e for e in ev if e.get("cat") == "wait")
    assert wait["ts"] + wait["dur"] == pytest.approx(cycles_to_us(chain.last_run.makespan_cycles))


def test_deps_json_lists_tasks_tensors_and_edges_with_their_source(tmp_path) -> None:
    cp = ir.compile(TwoStage, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    cp(x, y, config=RunConfig(enable_dep_gen=True))
    doc = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    assert [t["kernel"] for t in doc["tasks"]] == ["produce", "consume"]
    tensors = {t["id"]: t for t in doc["tensors"]}
    assert sorted((t["name"], t["origin"]) for t in tensors.values())[0] == ("created@" + str(
        next(i for i, line in enumerate(Path(__file__).parent.joinpath("test_rt_explicit_deps.py").read_text()
                                        .splitlines(), 1) if "tmp = pl.create_tensor(H" in line)), "created")
    assert {(t["name"], t["origin"]) for t in tensors.values()} >= {("x", "argument"), ("y", "argument")}
    edges = {(e["src"], e["dst"], e["source"], e["kind"]) for e in doc["edges"]}
    assert edges == {(0, 1, "creator", "RAW"), (0, 1, "explicit", "explicit")}
    creator = next(e for e in doc["edges"] if e["source"] == "creator")
    assert tensors[creator["tensor"]]["origin"] == "created"
    consume = doc["tasks"][1]
    assert [(a["direction"], tensors[a["tensor"]]["name"]) for a in consume["args"]] == [
        ("In", tensors[creator["tensor"]]["name"]), ("Out", "y")]


def test_deps_json_tells_first_writes_from_rewrites(chain) -> None:
    x, y = torch.randn(ROWS, 64), torch.zeros(ROWS, 64)
    chain(x, y, config=RunConfig(enable_dep_gen=True))
    doc = json.loads((Path(chain.output_dir) / "dfx_outputs" / "deps.json").read_text())
    src = {(e["src"], e["dst"]): e["source"] for e in doc["edges"]}
    # task 1 is the first to write the temporary: its reader (task 2) depends on the creator; the
    # later rewrites of the temporary and every write of y are found by the tensor map
    assert src[(1, 2)] == "creator"
    assert src[(3, 4)] == src[(0, 1)] == src[(0, 2)] == "tensormap"
    assert {e["source"] for e in doc["edges"]} == {"creator", "tensormap"}
    assert len(doc["edges"]) == sum(len(t.deps) for t in chain.last_run.tasks)


def test_scope_stats_jsonl_has_a_record_per_scope_begin_and_end(tmp_path) -> None:
    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    cp(*_staged_args(), config=RunConfig(enable_scope_stats=True, ring_task_window=[8, 4, 4, 4]))
    lines = (tmp_path / "dfx_outputs" / "scope_stats.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    assert [(r["event"], r["scope"].split("@")[0], r["depth"], r["ring"]) for r in recs] == [
        ("begin", "main", 0, 0), ("begin", "main/scope", 1, 1), ("end", "main/scope", 1, 1), ("end", "main", 0, 0)]
    inner_end = recs[2]
    assert inner_end["tasks_submitted"] == 4 and inner_end["task_window"] == {"used": 4, "capacity": 4, "peak": 4}
    top_end = recs[3]
    assert top_end["tasks_submitted"] == 9 and top_end["task_window"]["capacity"] == 8
    assert top_end["heap"]["peak"] == 64 * 64 * 4 and top_end["heap"]["capacity"] == 256 << 20
    assert [r["cycle"] for r in recs] == sorted(r["cycle"] for r in recs)
    summary = {r["scope"]: r for r in json.loads((tmp_path / "dfx_outputs" / "scope_stats.json").read_text())}
    assert summary["main"]["peak_heap"] == 64 * 64 * 4 and summary["main"]["ring"] == 0


@pl.program
class Tagged:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
        for i in pl.range(0, 64, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ts = pl.slice(tmp, [ROWS, 64], [i, 0])
            ts = twice(xs, ts)
        pl.dump_tag(y)
        for i in pl.range(0, 64, ROWS):
            ts2 = pl.slice(tmp, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = twice(ts2, ys)
        return y


def _read(folder: Path, entry: dict, when: str) -> torch.Tensor:
    data = bytearray((folder / entry[when]).read_bytes())
    return torch.frombuffer(data, dtype=getattr(torch, entry["torch_dtype"])).reshape(entry["shape"])


def test_dump_tag_prints_parses_and_does_not_change_numbers(tmp_path) -> None:
    text = Tagged.as_python()
    assert "        pl.tensor.dump_tag(y)\n" in text
    ir.assert_structural_equal(pl.parse(text), Tagged)
    cp = ir.compile(Tagged, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    cp(x, y)
    assert torch.equal(y, 4 * x)
    assert "tensor_dump_tag(y);" in (tmp_path / "orchestration" / "main.cpp").read_text()


def test_args_dump_level_1_holds_only_tasks_touching_tagged_tensors(tmp_path) -> None:
    cp = ir.compile(Tagged, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    cp(x, y, config=RunConfig(enable_dump_args=1))
    assert torch.equal(y, 4 * x)
    d = tmp_path / "dfx_outputs" / "args_dump"
    index = json.loads((d / "args_dump.json").read_text())
    assert index["level"] == 1 and index["byte_order"] == "little"
    # the tag comes after the first loop: only the second loop's tasks (which write y) are dumped,
    # and of each only the argument that touches y
    assert [t["task_id"] for t in index["tasks"]] == [4, 5, 6, 7]
    for k, t in enumerate(index["tasks"]):
        (a,) = t["args"]
        assert (a["name"], a["direction"], a["dtype"], a["shape"], a["before"]) == ("y", "Out", "FP32", [ROWS, 64], None)
        assert torch.equal(_read(d, a, "after"), 4 * x[k * ROWS:(k + 1) * ROWS])
    assert sorted(p.name for p in d.iterdir()) == sorted(["args_dump.json"] + [f"t{i}_y_after.bin" for i in range(4, 8)])


def test_args_dump_level_2_holds_every_tensor_before_and_after(tmp_path) -> None:
    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    args = _staged_args()
    cp(*args, config=RunConfig(enable_dump_args=2))
    d = tmp_path / "dfx_outputs" / "args_dump"
    index = json.loads((d / "args_dump.json").read_text())
    assert [t["task_id"] for t in index["tasks"]] == list(range(9))
    x, a, b = args[0], args[1], args[2]
    first = index["tasks"][0]
    assert [(e["name"], e["direction"], e["before"] is not None, e["after"] is not None) for e in first["args"]] == [
        ("x", "In", True, False), ("y", "Out", False, True)]
    assert torch.equal(_read(d, first["args"][0], "before"), x[:ROWS])
    assert torch.equal(_read(d, first["args"][1], "after"), 2 * x[:ROWS])
    mm = index["tasks"][8]
    assert mm["kernel"] == "mm" and [e["dtype"] for e in mm["args"]] == ["FP16", "FP16", "FP32"]
    assert torch.equal(_read(d, mm["args"][0], "before"), a) and torch.equal(_read(d, mm["args"][1], "before"), b)
    torch.testing.assert_close(_read(d, mm["args"][2], "after"), args[4])
    cp(*_staged_args(), config=RunConfig())       # a run without the switch removes the dump
    assert not (tmp_path / "dfx_outputs").exists()


def test_dump_tag_inside_a_kernel_is_rejected_at_the_users_line() -> None:
    """pl.dump_tag (and pl.tensor.write) have no kernel form: refused where they are written, in an
    InCore function or a pl.at region, also on a region's intermediate (it stopped ConvertTensorToTileOps
    with an unlocated OpTypeError 'argument 'tensor' must be a Tensor, got Tile')."""
    from pypto.core.errors import InvalidOperationError

    lines = Path(__file__).read_text().splitlines()
    message = ("'pl.tensor.dump_tag' runs only in orchestration functions (host code), not inside a kernel (a pl.at "
               "region or an InCore function); call it where the tensor is passed to the kernel")
    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class InKernel:
            @pl.function(type=pl.FunctionType.InCore)
            def copy(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
                     y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
                pl.dump_tag(x)  # MARK-tag-incore
                y = pl.store(pl.load(x, [0, 0], [ROWS, 64]), [0, 0], y)
                return y
    assert e.value.message == message
    assert "MARK-tag-incore" in lines[e.value.span.begin_line - 1]

    @pl.jit
    def tags_an_intermediate(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.add(x, 1.0)
            pl.dump_tag(t)  # MARK-tag-region
            out[:] = pl.mul(t, 2.0)
        return out

    with pytest.raises(InvalidOperationError) as e:
        tags_an_intermediate(torch.randn(ROWS, 64), torch.zeros(ROWS, 64), config=RunConfig(enable_dump_args=1))
    assert e.value.message == message
    assert "MARK-tag-region" in lines[e.value.span.begin_line - 1]
