"""Mixed cube/vector kernels on the simulator: a Group call runs its AIC and AIV kernels as one unit on
one cluster, interleaved on a pipe of its own, with the ring depth of SPEC §6 (issue: mixed kernels
end to end). Numbers are checked against torch on both simulators."""

from __future__ import annotations

import pytest
import torch
from shared_programs import GROUPED_SRC

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import RuntimeSimError
from pypto.runtime import RunConfig

M = K = N = 32
NB = 8
PLATFORMS = [(BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")]
SPLITS = ["NONE", "UP_DOWN", "LEFT_RIGHT"]

_HEAD = """
import pypto.language as pl

@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.InCore, optimizations=[{opts}])
    def k(self, a: pl.Tensor[[{R}, {K}], pl.FP16], b: pl.Tensor[[{K}, {N}], pl.FP16], bias: pl.Tensor[[1, {N}], pl.FP32],
          c: pl.Out[pl.Tensor[[{R}, {N}], pl.FP32]]) -> pl.Tensor[[{R}, {N}], pl.FP32]:
        b1 = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        bt = pl.load(bias, [0, 0], [1, {N}])
        for i in pl.range({nb}):
{body}
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{R}, {K}], pl.FP16], b: pl.Tensor[[{K}, {N}], pl.FP16], bias: pl.Tensor[[1, {N}], pl.FP32],
             c: pl.Out[pl.Tensor[[{R}, {N}], pl.FP32]]) -> pl.Tensor[[{R}, {N}], pl.FP32]:
        c = self.k(a, b, bias, c)
        return c
"""

# per row block i: what the kernel computes, and its torch reference (a, b, bias -> c)
KINDS = {
    # cube then vector: matmul on the cube core, ReLU plus a bias row on the vector cores
    "C2V": ("""            a1 = pl.load(a, [i * {M}, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), b0)
            r = pl.col_expand_add(pl.relu(p), bt)
            c = pl.store(r, [i * {M}, 0], c)""",
            lambda a, b, bias: torch.relu(a.float() @ b.float()) + bias),
    # vector then cube: the vector cores scale the rows, the cube core multiplies and stores
    "V2C": ("""            av = pl.load(a, [i * {M}, 0], [{M}, {K}])
            a1 = pl.move(pl.mul(av, 2.0), target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), b0)
            c = pl.store(p, [i * {M}, 0], c)""",
            lambda a, b, bias: (a * 2).float() @ b.float()),
    # both directions: scale on the vector cores, matmul on the cube core, ReLU + bias back on the vector cores
    "BOTH": ("""            av = pl.load(a, [i * {M}, 0], [{M}, {K}])
            a1 = pl.move(pl.mul(av, 2.0), target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), b0)
            r = pl.col_expand_add(pl.relu(p), bt)
            c = pl.store(r, [i * {M}, 0], c)""",
             lambda a, b, bias: torch.relu((a * 2).float() @ b.float()) + bias),
}


def source(kind: str, split: str = "NONE", slot: int | None = None, nb: int = NB, name: str = "Mixed") -> str:
    opts = [f"pl.split(pl.SplitMode.{split})"] + ([f"pl.cross_core_slot(slot_num={slot})"] if slot else [])
    body = KINDS[kind][0].format(M=M, K=K)
    return _HEAD.format(name=name, opts=", ".join(opts), R=nb * M, K=K, N=N, nb=nb, body=body)


def build(tmp_path, kind: str, backend: BackendType, platform: str, **kw):
    prog = pl.parse(source(kind, **kw))
    return ir.compile(prog, output_dir=tmp_path / f"{kind}_{backend.name}", backend_type=backend,
                      platform=platform, dump_passes=False)


def inputs(nb: int = NB, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(nb * M, K, generator=g) * 0.5).half()
    b = (torch.randn(K, N, generator=g) * 0.5).half()
    bias = torch.randn(1, N, generator=g)
    return a, b, bias, torch.zeros(nb * M, N)


@pytest.mark.parametrize("backend,platform", PLATFORMS)
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mixed_kernels_match_torch(tmp_path, kind, split, backend, platform):
    cp = build(tmp_path, kind, backend, platform, split=split)
    a, b, bias, c = inputs()
    cp(a, b, bias, c, config=RunConfig(platform=platform, sanitize=True))   # raises on any finding
    torch.testing.assert_close(c, KINDS[kind][1](a, b, bias), rtol=1e-3, atol=1e-3)
    tasks = cp.last_run.tasks
    aiv = [t for t in tasks if t.core_type == "AIV"]
    assert len(aiv) == (1 if split == "NONE" else 2) and [t.subblock for t in aiv] == list(range(len(aiv)))
    aic = next(t for t in tasks if t.core_type == "AIC")
    # one cluster: cube core c and its vector cores 2c, 2c+1, all started together
    assert {t.core_index for t in aiv} <= {2 * aic.core_index, 2 * aic.core_index + 1}
    assert {t.start_cycle - t.offset_cycles for t in tasks} == {aic.start_cycle}
    assert {t.group for t in tasks} == {0} and all(not t.deps for t in tasks)
    stats = aic.pipes
    assert stats.split.name == split and sum(stats.transfers.values()) == NB * len(stats.depth) * len(aiv)


def test_a_receiver_waits_for_its_sender_in_simulated_time(tmp_path):
    cp = build(tmp_path, "C2V", BackendType.Ascend950, "a5sim", split="UP_DOWN")
    cp(*inputs())
    aic, v0, v1 = cp.last_run.tasks
    assert aic.stall_cycles == 0 and v0.stall_cycles > 0 and v1.stall_cycles == v0.stall_cycles
    # the vector kernel cannot end before the last tile it receives was sent
    assert v0.end_cycle > aic.start_cycle + aic.cost.cycles - 1
    assert v0.cycles == v0.cost.cycles + v0.stall_cycles == v0.end_cycle - v0.start_cycle
    assert cp.last_run.makespan_cycles == max(t.end_cycle for t in cp.last_run.tasks)


@pytest.mark.parametrize("slot,depth", [(None, 8), (2, 2), (1, 1)])
def test_ring_depth_holds_the_sender_back(tmp_path, slot, depth):
    cp = build(tmp_path, "C2V", BackendType.Ascend950, "a5sim", split="UP_DOWN", slot=slot, nb=12)
    a, b, bias, c = inputs(12)
    cp(a, b, bias, c)
    torch.testing.assert_close(c, KINDS["C2V"][1](a, b, bias), rtol=1e-3, atol=1e-3)
    stats = cp.last_run.tasks[0].pipes
    assert stats.depth == {"AIC->AIV": depth}
    # the cube core runs ahead until the ring of each vector core is full, never further
    assert stats.max_occupancy == {("AIC->AIV", 0): depth, ("AIC->AIV", 1): depth}
    assert stats.transfers == {("AIC->AIV", 0): 12, ("AIC->AIV", 1): 12}


def test_both_directions_share_the_ring_four_slots_each(tmp_path):
    cp = build(tmp_path, "BOTH", BackendType.Ascend950, "a5sim")
    cp(*inputs())
    assert cp.last_run.tasks[0].pipes.depth == {"AIC->AIV": 4, "AIV->AIC": 4}


_HAND = """
import pypto.language as pl

@pl.program
class Hand:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, w: pl.Tensor[[16, 16], pl.FP16]):
        w1 = pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        w0 = pl.move(w1, target_memory=pl.Mem.Right)
        for i in pl.range({n}):
            x = pl.system.tpop_from_aiv([16, 16], dtype=pl.FP16)
            acc = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), w0)
            pl.system.tfree_to_aiv(x)
            pl.system.tpush_to_aiv(acc)
        return

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[{rows}, 16], pl.FP16],
            y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        for i in pl.range({n}):
            t = pl.load(x, [i * 16, 0], [16, 16])
            pl.system.tpush_to_aic(t)
        for i in pl.range({n}):
            got = pl.system.tpop_from_aic([16, 16], dtype=pl.FP32)
            y = pl.store(got, [i * 16, 0], y)
            pl.system.tfree_to_aic(got)
        return y

    @pl.function(type=pl.FunctionType.Group{gopts})
    def both(self, w: pl.Tensor[[16, 16], pl.FP16], x: pl.Tensor[[{rows}, 16], pl.FP16],
             y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        self.cube(w)
        y = self.vec(x, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[16, 16], pl.FP16], x: pl.Tensor[[{rows}, 16], pl.FP16],
             y: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        y = self.both(w, x, y)
        return y
"""


def hand(tmp_path, n: int = 6, gopts: str = "", edits: dict[str, str] | None = None):
    text = _HAND.format(n=n, rows=16 * n, gopts=gopts)
    for old, new in (edits or {}).items():
        assert old in text
        text = text.replace(old, new)
    return ir.compile(pl.parse(text, filename="hand.py"), output_dir=tmp_path / "hand",
                      backend_type=BackendType.Ascend950, platform="a5sim", dump_passes=False)


@pytest.mark.parametrize("gopts,depth", [("", 4), (", optimizations=[pl.cross_core_slot(slot_num=8)]", 8)])
def test_pipes_in_both_directions_each_hold_at_most_their_depth(tmp_path, gopts, depth):
    cp = hand(tmp_path, gopts=gopts)
    w = torch.randn(16, 16).half()
    x, y = torch.randn(96, 16).half(), torch.zeros(96, 16)
    cp(w, x, y, config=RunConfig(platform="a5sim", sanitize=True))
    torch.testing.assert_close(y, x.float() @ w.float(), rtol=1e-3, atol=1e-3)
    stats = cp.last_run.tasks[0].pipes
    assert stats.depth == {"AIC->AIV": depth, "AIV->AIC": depth}
    # the vector core sends all six tiles before it receives any: it waits after `depth` of them
    want = min(depth, 6)
    assert stats.max_occupancy == {("AIV->AIC", 0): want, ("AIC->AIV", 0): want}


def test_a_deadlock_names_every_waiting_kernel_and_line(tmp_path):
    # the cube core waits for a tile before sending, and so does the vector core: neither can start
    cp = hand(tmp_path, n=1, edits={"            pl.system.tpush_to_aic(t)\n": ""})
    with pytest.raises(RuntimeSimError) as e:
        cp(torch.randn(16, 16).half(), torch.randn(16, 16).half(), torch.zeros(16, 16))
    msg = str(e.value)
    assert "group 'both'" in msg and "deadlock on the cross-core pipes" in msg
    assert "kernel 'cube' waits at hand.py:11:" in msg and "pipe AIV->AIC (vector core 0) is empty" in msg
    assert "kernel 'vec' (vector core 0) waits at hand.py:23:" in msg
    assert "pipe AIC->AIV (vector core 0) is empty" in msg
    assert msg.startswith("hand.py:11:")


def test_a_tile_nobody_pops_is_an_error(tmp_path):
    cp = hand(tmp_path, n=2, edits={"for i in pl.range(2):\n            got": "for i in pl.range(1):\n            got"})
    with pytest.raises(RuntimeSimError, match=r"group 'both' finished with tiles pushed but never popped: "
                                              r"1 in AIC->AIV \(vector core 0\)"):
        cp(torch.randn(16, 16).half(), torch.randn(32, 16).half(), torch.zeros(32, 16))


def test_pipe_ops_outside_a_group_have_no_pipe(tmp_path):
    text = _HAND.format(n=1, rows=16, gopts="").replace("y = self.both(w, x, y)", "y = self.vec(x, y)")
    cp = ir.compile(pl.parse(text, filename="hand.py"), output_dir=tmp_path / "h", platform="a5sim",
                    backend_type=BackendType.Ascend950, dump_passes=False)
    with pytest.raises(RuntimeSimError, match="cross-core pipe op outside a mixed-kernel group"):
        cp(torch.randn(16, 16).half(), torch.randn(16, 16).half(), torch.zeros(16, 16))


_TWO = """
import pypto.language as pl
from_mixed = 0

@pl.program
class Two:
{kernel}

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(pl.mul(t, 3.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{R}, {K}], pl.FP16], a2: pl.Tensor[[{R}, {K}], pl.FP16], b: pl.Tensor[[{K}, {N}], pl.FP16],
             bias: pl.Tensor[[1, {N}], pl.FP32], x: pl.Tensor[[1600, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[{R}, {N}], pl.FP32]], c2: pl.Out[pl.Tensor[[{R}, {N}], pl.FP32]],
             y: pl.Out[pl.Tensor[[1600, 64], pl.FP32]]) -> pl.Tensor[[{R}, {N}], pl.FP32]:
        for j in pl.range(0, 800, 16):
            y0 = self.scale(pl.slice(x, [16, 64], [j, 0]), pl.slice(y, [16, 64], [j, 0]))
        c = self.k(a, b, bias, c)
        c2 = self.k(a2, b, bias, c2)
        for j in pl.range(800, 1600, 16):
            y1 = self.scale(pl.slice(x, [16, 64], [j, 0]), pl.slice(y, [16, 64], [j, 0]))
        return c
"""


@pytest.mark.parametrize("split", ["NONE", "LEFT_RIGHT"])
def test_two_groups_in_flight_keep_their_pipes_and_clusters_apart(tmp_path, split):
    text = source("BOTH", split=split)
    kernel = text[text.index("    @pl.function(type=pl.FunctionType.InCore"):text.index("    @pl.function(type=pl.FunctionType.Orchestration")]
    prog = pl.parse(_TWO.format(kernel=kernel.rstrip(), R=NB * M, K=K, N=N))
    cp = ir.compile(prog, output_dir=tmp_path / "two", backend_type=BackendType.Ascend950, platform="a5sim",
                    dump_passes=False)
    a, b, bias, c = inputs(seed=1)
    a2, c2 = inputs(seed=2)[0], torch.zeros_like(c)
    x, y = torch.randn(1600, 64), torch.zeros(1600, 64)
    cp(a, a2, b, bias, x, c, c2, y, config=RunConfig(platform="a5sim", sanitize=True))
    ref = KINDS["BOTH"][1]
    torch.testing.assert_close(c, ref(a, b, bias), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(c2, ref(a2, b, bias), rtol=1e-3, atol=1e-3)
    assert torch.equal(y, 3 * x)
    tasks = cp.last_run.tasks
    groups: dict[int, list] = {}
    for t in tasks:
        if t.group is not None:
            groups.setdefault(t.group, []).append(t)
    assert len(groups) == 2
    g1, g2 = groups.values()
    span = {gid: (min(t.start_cycle for t in g), max(t.end_cycle for t in g)) for gid, g in groups.items()}
    (s1, e1), (s2, e2) = span.values()
    assert s2 < e1                                     # in flight at the same time ...
    assert g1[0].core_index != g2[0].core_index        # ... on two clusters ...
    assert g1[0].pipes is not g2[0].pipes              # ... each with its own pipes
    for g in (g1, g2):
        assert sum(g[0].pipes.transfers.values()) == 2 * NB * len([t for t in g if t.core_type == "AIV"])
    # the whole cluster is the group's while it runs: no other task on its three cores
    for gid, g in groups.items():
        c0 = g[0].core_index
        cluster = {("AIC", c0), ("AIV", 2 * c0), ("AIV", 2 * c0 + 1)}
        lo, hi = span[gid]
        for t in tasks:
            if t.group != gid and (t.core_type, t.core_index) in cluster:
                assert t.end_cycle <= lo or t.start_cycle >= hi, (t, span[gid])
    # single tasks around them still spread over the other cores
    assert len({t.core_index for t in tasks if t.group is None}) > 10




def test_a_group_kernel_reading_what_another_wrote_in_ddr_starts_after_it(tmp_path):
    cp = ir.compile(pl.parse(GROUPED_SRC), output_dir=tmp_path / "o", platform="a2a3sim", dump_passes=False)
    a, b, c = torch.randn(16, 16).half(), torch.randn(16, 16).half(), torch.zeros(16, 16)
    cp(a, b, c, config=RunConfig(sanitize=True))
    torch.testing.assert_close(c, torch.exp(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    mm, ex = cp.last_run.tasks
    assert mm.group == ex.group == 0 and not ex.deps
    assert ex.offset_cycles == mm.cycles and ex.start_cycle == mm.end_cycle


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_jit_matmul_relu_split_up_down(platform):
    @pl.jit
    def mm_relu(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            c[:] = pl.relu(pl.matmul(a, b))
        return c

    a, b = torch.randn(64, 32).half(), torch.randn(32, 48).half()
    c = torch.zeros(64, 48)
    mm_relu(a, b, c, config=RunConfig(platform=platform, sanitize=True))
    torch.testing.assert_close(c, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    compiled = mm_relu.compile(a, b, c, config=RunConfig(platform=platform))
    kinds = sorted(f.func_type.name for f in compiled.program.functions)
    assert kinds == ["AIC", "AIV", "Group", "Orchestration"]
    tasks = compiled.last_run.tasks
    assert [(t.core_type, t.subblock) for t in tasks] == [("AIC", None), ("AIV", 0), ("AIV", 1)]


def test_pipe_channel_slots_are_given_back_by_free_not_by_pop():
    from pypto.ops.system import PipeChannel

    ch = PipeChannel(depth=2)   # no runner: a wait that cannot be met at once fails
    t = torch.ones(2, 2)
    ch.push("AIC->AIV", (0,), [t])
    ch.push("AIC->AIV", (0,), [2 * t])
    with pytest.raises(RuntimeError, match=r"pipe AIC->AIV \(vector core 0\) is full: all 2 slots"):
        ch.push("AIC->AIV", (0,), [3 * t])
    assert torch.equal(ch.pop("AIC->AIV", (0,), 0)[0], t)
    with pytest.raises(RuntimeError, match="is full"):   # popped, but its slot is not free yet
        ch.push("AIC->AIV", (0,), [3 * t])
    ch.free("AIC->AIV", 0)
    ch.push("AIC->AIV", (0,), [3 * t])
    assert [ch.pop("AIC->AIV", (0,), 0)[0][0, 0].item() for _ in range(2)] == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="is empty: no matching tpush has run"):
        ch.pop("AIC->AIV", (0,), 0)
    assert ch.max_occupancy() == {("AIC->AIV", 0): 2} and ch.transfers() == {("AIC->AIV", 0): 3}
    assert ch.pending() == {}


@pytest.mark.parametrize("split", ["UP_DOWN", "LEFT_RIGHT"])
def test_a_loop_carried_vector_accumulator_is_split_too(tmp_path, split):
    text = f"""
import pypto.language as pl

@pl.program
class Acc:
    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(pl.SplitMode.{split})])
    def k(self, a: pl.Tensor[[128, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.tile.full([32, 32], 0.0, dtype=pl.FP32)
        for i in pl.range(4):
            a1 = pl.load(a, [i * 32, 0], [32, 32], target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), b0)
            acc = pl.add(acc, pl.exp(p))
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""
    cp = ir.compile(pl.parse(text), output_dir=tmp_path / "acc", platform="a2a3sim", dump_passes=False)
    a, b, c = (torch.randn(128, 32) * 0.1).half(), (torch.randn(32, 32) * 0.1).half(), torch.zeros(32, 32)
    cp(a, b, c, config=RunConfig(sanitize=True))
    want = sum(torch.exp(a[i * 32:(i + 1) * 32].float() @ b.float()) for i in range(4))
    torch.testing.assert_close(c, want, rtol=1e-3, atol=1e-3)
    aiv = cp.program.get_function("k_aiv").as_python()
    half = "[16, 32]" if split == "UP_DOWN" else "[32, 16]"
    assert f"pl.tile.full({half}, 0.0, dtype=pl.FP32" in aiv and aiv.count(f"pl.Tile[{half}") >= 3


def test_pipes_go_through_ddr_on_910b_and_stay_on_chip_on_950(tmp_path):
    from pypto.core.enums import MemorySpace as Mem

    tile = M * K * 2                       # one FP16 row block crosses per iteration
    paths = {}
    for backend, platform in PLATFORMS:
        cp = build(tmp_path, "V2C", backend, platform)
        cp(*inputs())
        aic, aiv = (next(t for t in cp.last_run.tasks if t.core_type == c) for c in ("AIC", "AIV"))
        paths[platform] = (aiv.cost.path_bytes, aic.cost.path_bytes)
        assert aic.pipes.route == {"AIV->AIC": "gm" if platform == "a2a3sim" else "direct"}
    sent, got = paths["a2a3sim"]
    assert sent[(Mem.Vec, Mem.DDR)] == NB * tile and got[(Mem.DDR, Mem.Mat)] >= NB * tile   # via a DDR slot buffer
    sent, got = paths["a5sim"]
    assert sent[(Mem.Vec, Mem.Mat)] == NB * tile and (Mem.Vec, Mem.DDR) not in sent         # Vec -> Mat on chip


def test_the_sanitizer_follows_each_kernel_of_a_group(tmp_path):
    from pypto.runtime.sim import SanitizerError

    junk = "            junk = pl.create_tile([16, 16], dtype=pl.FP32)\n            y = pl.store(pl.add(got, junk), [i * 16, 0], y)"
    cp = hand(tmp_path, n=3, edits={"            y = pl.store(got, [i * 16, 0], y)": junk})
    with pytest.raises(SanitizerError) as e:
        cp(torch.randn(16, 16).half(), torch.randn(48, 16).half(), torch.zeros(48, 16),
           config=RunConfig(platform="a5sim", sanitize=True))
    (f,) = e.value.findings
    assert f.kind == "uninitialized-read" and f.kernel == "vec" and f.task_id == 1 and "'junk'" in f.message
