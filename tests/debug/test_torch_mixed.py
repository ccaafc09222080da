"""Mixed cube/vector kernels in `torch_codegen` scripts and `validate_ir`: Group calls run their AIC
and AIV kernels (the AIV kernel as vector subblocks 0 and 1 under `pl.split`) interleaved on FIFO
pipe rings of the group's depth, with the simulator's deadlock and leftover-tile errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from shared_programs import GROUPED_SRC

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import RuntimeSimError
from pypto.debug import torch_codegen

BACKENDS = [(BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")]

# vector cores scale row blocks of `a`, the cube core multiplies them by `b`, the vector cores add
# ReLU and a bias row: pipes both ways, the vector work split by `pl.split`
MIXED = """
import pypto.language as pl

@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(pl.SplitMode.{split})])
    def k(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16], bias: pl.Tensor[[1, 32], pl.FP32],
          c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        bt = pl.load(bias, [0, 0], [1, 32])
        for i in pl.range(2):
            av = pl.load(a, [i * 32, 0], [32, 32])
            a1 = pl.move(pl.mul(av, 2.0), target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), b0)
            r = pl.col_expand_add(pl.relu(p), bt)
            c = pl.store(r, [i * 32, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16], bias: pl.Tensor[[1, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        c = self.k(a, b, bias, c)
        return c
"""

# hand-partitioned kernels: each side sends all n tiles before it receives any, so the rings must
# hold n tiles (the default depth, 4 per direction, deadlocks at n = 6; pl.cross_core_slot(8) does not)
BURST = """
import pypto.language as pl

@pl.program
class Burst:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, x: pl.Tensor[[{rows}, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
             z: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        w0 = pl.move(pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        for i in pl.range({n}):
            xi = pl.load(x, [i * 16, 0], [16, 16], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(xi, target_memory=pl.Mem.Left), w0)
            pl.system.tpush_to_aiv(acc)
        for i in pl.range({n}):
            t = pl.system.tpop_from_aiv([16, 16], dtype=pl.FP16)
            acc2 = pl.matmul(pl.move(t, target_memory=pl.Mem.Left), w0)
            pl.system.tfree_to_aiv(t)
            z = pl.store(acc2, [i * 16, 0], z)
        return z

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[{rows}, 16], pl.FP16],
            y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        for i in pl.range({n}):
            t = pl.load(x, [i * 16, 0], [16, 16])
            pl.system.tpush_to_aic(pl.mul(t, 2.0))
        for i in pl.range({n}):
            got = pl.system.tpop_from_aic([16, 16], dtype=pl.FP32)
            y = pl.store(got, [i * 16, 0], y)
            pl.system.tfree_to_aic(got)
        return y

    @pl.function(type=pl.FunctionType.Group{gopts})
    def both(self, x: pl.Tensor[[{rows}, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
             y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]], z: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        z = self.cube(x, w, z)
        y = self.vec(x, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{rows}, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
             y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]], z: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        y = self.both(x, w, y, z)
        return y
"""

SLOT8 = ", optimizations=[pl.cross_core_slot(slot_num=8)]"


def burst_text(n: int = 6, gopts: str = SLOT8, edits: dict[str, str] | None = None) -> str:
    text = BURST.format(n=n, rows=16 * n, gopts=gopts)
    for old, new in (edits or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


def burst_inputs(n: int = 6):
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(16 * n, 16, generator=g).half(), (torch.randn(16, 16, generator=g) * 0.3).half()
    return x, w, torch.zeros(16 * n, 16), torch.zeros(16 * n, 16)


def burst_expected(x, w):
    return x.float() @ w.float(), (x * 2).float() @ w.float()


def mixed_inputs():
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(64, 32, generator=g) * 0.5).half()
    b = (torch.randn(32, 32, generator=g) * 0.5).half()
    return a, b, torch.randn(1, 32, generator=g), torch.zeros(64, 32)


def mixed_expected(a, b, bias):
    return torch.relu((a * 2).float() @ b.float()) + bias


def run_script(program, *args):
    ns: dict = {}
    exec(torch_codegen(program), ns)   # noqa: S102
    return ns["run"](*args)


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("backend,platform", BACKENDS)
def test_group_fixture_validates_at_every_stage(tmp_path, backend, platform):
    cp = ir.compile(pl.parse(GROUPED_SRC), output_dir=tmp_path / "g", backend_type=backend, platform=platform,
                    dump_passes=True)
    a, b = torch.randn(16, 16).half(), torch.randn(16, 16).half()
    rep = cp.validate_ir([a, b, torch.zeros(16, 16)], torch.exp(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    assert {s.status for s in rep.stages} == {"ok"}, str(rep)
    assert len(rep.stages) == len(list((tmp_path / "g" / "passes_dump").glob("*.py"))) + 1


@pytest.mark.parametrize("backend,platform", BACKENDS)
@pytest.mark.parametrize("split", ["NONE", "UP_DOWN", "LEFT_RIGHT"])
def test_expanded_mixed_kernel_validates_at_every_stage(tmp_path, split, backend, platform):
    cp = ir.compile(pl.parse(MIXED.format(split=split)), output_dir=tmp_path / "m", backend_type=backend,
                    platform=platform, dump_passes=True)
    a, b, bias, c = mixed_inputs()
    rep = cp.validate_ir([a, b, bias, c], mixed_expected(a, b, bias))
    assert {s.status for s in rep.stages} == {"ok"}, str(rep)
    assert rep.ok and torch.equal(c, torch.zeros(64, 32))
    # the stages after ExpandMixedKernel really are AIC + AIV kernels joined by pipes
    expanded = next((tmp_path / "m" / "passes_dump").glob("*_after_ExpandMixedKernel.py")).read_text()
    for op in ("tpush_to_aic", "tpop_from_aiv", "tpush_to_aiv", "tpop_from_aic", "tfree_to_aic", "tfree_to_aiv"):
        assert f"pl.system.{op}(" in expanded
    assert ("get_subblock_idx" in expanded) == (split != "NONE")
    assert [s.stage for s in rep.stages].index(next(s.stage for s in rep.stages if "Expand" in s.stage)) > 10


def _broken(tmp_path, old: str, new: str):
    cp = ir.compile(pl.parse(MIXED.format(split="UP_DOWN")), output_dir=tmp_path / "m",
                    backend_type=BackendType.Ascend950, platform="a5sim", dump_passes=True)
    dumps = sorted((tmp_path / "m" / "passes_dump").glob("*.py"))
    broken = next(i for i, f in enumerate(dumps) if f.name.endswith("_after_ExpandMixedKernel.py"))
    for f in dumps[broken:]:   # as if ExpandMixedKernel had made this mistake
        text = f.read_text()
        assert old in text
        f.write_text(text.replace(old, new))
    a, b, bias, c = mixed_inputs()
    return cp.validate_ir([a, b, bias, c], mixed_expected(a, b, bias)), broken


def test_a_subblock_offset_bug_is_named(tmp_path):
    # both vector cores would work on the upper half: the lower half of every block stays unwritten
    rep, broken = _broken(tmp_path, "(subblock * 16)", "(subblock * 0)")
    assert rep.first_divergent == "ExpandMixedKernel"
    assert [s.status for s in rep.stages][:broken] == ["ok"] * broken
    assert rep.stages[broken].status == "mismatch" and rep.stages[-1].status == "ok"
    assert "first divergent pass: ExpandMixedKernel" in str(rep)


def test_a_pipe_split_bug_is_named(tmp_path):
    # the cube core sends whole tiles where each vector core expects its half
    rep, broken = _broken(tmp_path, "pl.system.tpush_to_aiv(p, split=pl.SplitMode.UP_DOWN)",
                          "pl.system.tpush_to_aiv(p, split=pl.SplitMode.NONE)")
    assert rep.first_divergent == "ExpandMixedKernel" and rep.stages[broken].status == "error"
    assert "expected a tile of shape [16, 32], the pipe delivered [32, 32]" in rep.stages[broken].message
    assert rep.stages[-1].status == "ok"


def test_burst_program_matches_torch_and_the_simulator_on_every_stage(tmp_path):
    cp = ir.compile(pl.parse(burst_text()), output_dir=tmp_path / "b", backend_type=BackendType.Ascend950,
                    platform="a5sim", dump_passes=True)
    x, w, y, z = burst_inputs()
    rep = cp.validate_ir([x, w, y, z], burst_expected(x, w), rtol=1e-3, atol=1e-3)
    assert {s.status for s in rep.stages} == {"ok"}, str(rep)


def test_ring_depth_deadlock_is_reported_like_the_simulator(tmp_path):
    text = burst_text(gopts="")                    # both directions live: 4 slots each, 6 tiles sent
    prog = pl.parse(text, filename="burst.py")
    with pytest.raises(RuntimeError) as e:
        run_script(prog, *burst_inputs())
    msg = str(e.value)
    push_aiv = line_of(text, "pl.system.tpush_to_aiv(acc)")
    push_aic = line_of(text, "pl.system.tpush_to_aic(")
    assert msg.startswith("group 'both': deadlock on the cross-core pipes: ")
    assert f"kernel 'cube' waits at burst.py:{push_aiv}:" in msg
    assert "pipe AIC->AIV (vector core 0) is full: all 4 slots hold tiles the consumer has not freed" in msg
    assert f"kernel 'vec' (vector core 0) waits at burst.py:{push_aic}:" in msg
    assert "pipe AIV->AIC (vector core 0) is full" in msg
    cp = ir.compile(prog, output_dir=tmp_path / "b", backend_type=BackendType.Ascend950, platform="a5sim",
                    dump_passes=False)
    with pytest.raises(RuntimeSimError) as sim:     # the simulator stops at the same two pushes
        cp(*burst_inputs())
    assert f"burst.py:{push_aiv}:" in str(sim.value) and f"burst.py:{push_aic}:" in str(sim.value)
    # one more slot than tiles per ring: no deadlock
    x, w, y, z = burst_inputs()
    run_script(pl.parse(burst_text(gopts=", optimizations=[pl.cross_core_slot(slot_num=6)]")), x, w, y, z)
    want_y, want_z = burst_expected(x, w)
    torch.testing.assert_close(y, want_y, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(z, want_z, rtol=1e-3, atol=1e-3)


def test_validate_ir_reports_a_deadlock_at_every_stage(tmp_path):
    cp = ir.compile(pl.parse(burst_text(gopts="")), output_dir=tmp_path / "b", backend_type=BackendType.Ascend910B,
                    platform="a2a3sim", dump_passes=True)
    x, w, y, z = burst_inputs()
    rep = cp.validate_ir([x, w, y, z], burst_expected(x, w))
    assert rep.first_divergent == "frontend" and {s.status for s in rep.stages} == {"error"}
    assert all("deadlock on the cross-core pipes" in s.message for s in rep.stages)


def test_an_empty_pipe_deadlock_names_the_waiting_kernel():
    # the vector core receives but never sends: the cube core waits on an empty ring after its pushes
    text = burst_text(n=2, edits={"            pl.system.tpush_to_aic(pl.mul(t, 2.0))\n": ""})
    with pytest.raises(RuntimeError, match=r"group 'both': deadlock on the cross-core pipes: kernel 'cube' waits "
                                           r"at burst.py:\d+:\d+: pipe AIV->AIC \(vector core 0\) is empty: "
                                           r"no matching tpush has run$"):
        run_script(pl.parse(text, filename="burst.py"), *burst_inputs(2))


def test_a_tile_nobody_pops_is_an_error():
    text = burst_text(n=2, edits={"for i in pl.range(2):\n            got": "for i in pl.range(1):\n            got"})
    with pytest.raises(RuntimeError, match=r"group 'both' finished with tiles pushed but never popped: "
                                           r"1 in AIC->AIV \(vector core 0\)"):
        run_script(pl.parse(text), *burst_inputs(2))


def test_pipe_ops_outside_a_group_raise():
    text = burst_text(n=1).replace("y = self.both(x, w, y, z)", "y = self.vec(x, y)")
    with pytest.raises(RuntimeError, match=r"cross-core pipe op at hand.py:\d+:\d+ outside a mixed-kernel group"):
        run_script(pl.parse(text, filename="hand.py"), *burst_inputs(1))


ORDERED = """
import pypto.language as pl

@pl.program
class Ordered:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[16, 16], pl.FP16], p: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a1 = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(a1, target_memory=pl.Mem.Right))
        p = pl.store(acc, [0, 0], p)
        t = pl.system.tpop_from_aiv([16, 16], dtype=pl.FP16)
        pl.system.tfree_to_aiv(t)
        return p

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, p: pl.Tensor[[16, 16], pl.FP32], x: pl.Tensor[[16, 16], pl.FP16],
            y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        pl.system.tpush_to_aic(pl.load(x, [0, 0], [16, 16]))
        y = pl.store(pl.exp(pl.load(p, [0, 0], [16, 16])), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Group)
    def g(self, a: pl.Tensor[[16, 16], pl.FP16], x: pl.Tensor[[16, 16], pl.FP16], p: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
          y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        p = self.cube(a, p)
        y = self.vec(p, x, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP16], x: pl.Tensor[[16, 16], pl.FP16],
             y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        p = pl.create_tensor([16, 16], dtype=pl.FP32)
        y = self.g(a, x, p, y)
        return y
"""


def test_a_kernel_reading_what_another_writes_starts_after_it(tmp_path):
    # vec reads p, which cube writes: vec starts after cube ends — but cube waits for vec's tile
    prog = pl.parse(ORDERED, filename="ordered.py")
    args = [torch.randn(16, 16).half(), torch.randn(16, 16).half(), torch.zeros(16, 16)]
    with pytest.raises(RuntimeError, match=r"kernel 'cube' waits at ordered.py:\d+:\d+: pipe AIV->AIC \(vector "
                                           r"core 0\) is empty.*; not started \(waiting for other kernels to "
                                           r"finish\): 'vec' \(vector core 0\)$"):
        run_script(prog, *args)
    cp = ir.compile(prog, output_dir=tmp_path / "o", backend_type=BackendType.Ascend910B, platform="a2a3sim",
                    dump_passes=False)
    with pytest.raises(RuntimeSimError, match=r"not started \(waiting for other kernels to finish\): 'vec'"):
        cp(*args)


def test_ddr_overlap_is_exact_for_views():
    from pypto.debug.torch_cluster import _overlap

    c = torch.zeros(8, 8)
    assert _overlap(c[:4], c[2:6]) and not _overlap(c[:4], c[4:])
    assert not _overlap(c[:, :4], c[:, 4:]) and _overlap(c[:, :5], c[:, 4:])   # interleaved byte ranges
    assert not _overlap(c, torch.zeros(8, 8)) and _overlap(c.T[1], c[:, 1])
    assert not _overlap(c[0:0], c)


def test_mixed_script_runs_without_pypto(tmp_path):
    cp = ir.compile(pl.parse(MIXED.format(split="LEFT_RIGHT")), output_dir=tmp_path / "m", dump_passes=False)
    path = tmp_path / "mixed_ref.py"
    path.write_text(torch_codegen(cp.program))
    driver = ("import sys, runpy, torch; sys.modules['pypto'] = None\n"
              "ns = runpy.run_path(sys.argv[1])\n"
              "torch.manual_seed(1); a, b, bias = torch.randn(64, 32).half(), torch.randn(32, 32).half(), torch.randn(1, 32)\n"
              "c = torch.zeros(64, 32); ns['run'](a, b, bias, c)\n"
              "print((c - (torch.relu((a * 2).float() @ b.float()) + bias)).abs().max().item())\n")
    r = subprocess.run([sys.executable, "-c", driver, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) < 1e-3
    main = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert main.returncode == 0 and main.stdout.startswith("output 3: shape (64, 32) dtype torch.float32 sum ")
