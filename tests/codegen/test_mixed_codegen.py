"""Code generation of split mixed kernels: the orchestration submits the AIC and AIV halves as one
cluster task with their split mode and pipe rings (`MixedConfig`), `kernel_config.py` lists the
groups, and the AIV kernel addresses its half through its subblock index (SPEC §5, §6)."""

import importlib.util
import re

import pytest
from cpp_check import compiles_as_cpp

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType

SRC = """
import pypto.language as pl

@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.InCore, optimizations=[{opts}])
    def k(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        av = pl.load(a, [0, 0], [64, 32])
        a1 = pl.move(pl.mul(av, 2.0), target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        c = pl.store(pl.relu(p), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""


def build(tmp_path, backend, opts="pl.split(pl.SplitMode.UP_DOWN)"):
    out = tmp_path / backend.name
    ir.compile(pl.parse(SRC.format(opts=opts)), output_dir=out, backend_type=backend, dump_passes=False)
    return out


@pytest.mark.parametrize("backend,gm", [(BackendType.Ascend910B, True), (BackendType.Ascend950, False)])
def test_orchestration_submits_one_cluster_task_with_split_and_rings(tmp_path, backend, gm):
    out = build(tmp_path, backend)
    text = (out / "orchestration" / "main.cpp").read_text()
    group = text.split("static Tensor k(PTO2Runtime* rt, Tensor a", 1)[1].split("\n}\n", 1)[0]
    # both directions are live: 4 slots each; one ring per vector core and direction
    c2v, v2c = 64 * 32 * 4 // 2, 64 * 32 * 2 // 2      # half an FP32 / FP16 64x32 tile per vector core
    gm_bytes = 2 * 4 * (c2v + v2c) if gm else 0
    # on chip, each consumer holds its slots: a ring per vector core in its Vec, the cube core both in Mat
    c2v_at = "in DDR" if gm else f"on chip, each vector core's Vec [0, {4 * c2v})"
    v2c_at = "in DDR" if gm else f"on chip, the cube core's Mat [0, {2 * 4 * v2c})"
    assert f"// cross-core pipes: AIC->AIV: 2 x 4 slots of {c2v} B {c2v_at}; AIV->AIC: 2 x 4 slots of {v2c} B {v2c_at}" in group
    assert (f"submit_mixed_task(rt, {{{{FUNC_K_AIC, task0}}, {{FUNC_K_AIV, task1}}}}, MixedConfig{{MixedSplit::UP_DOWN, "
            f"2, 4, {c2v}, 4, {v2c}, {gm_bytes}}});") in group
    assert "submit_aiv_task" not in group and "submit_aic_task" not in group
    compiles_as_cpp(text, tmp_path)


def test_slot_num_and_no_split_reach_the_config(tmp_path):
    out = build(tmp_path, BackendType.Ascend950, "pl.cross_core_slot(slot_num=2)")
    text = (out / "orchestration" / "main.cpp").read_text()
    assert "MixedConfig{MixedSplit::NONE, 1, 2, 8192, 2, 4096, 0}" in text


def test_kernel_config_lists_the_groups(tmp_path):
    out = build(tmp_path, BackendType.Ascend910B)
    spec = importlib.util.spec_from_file_location("kc", out / "kernel_config.py")
    kc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kc)
    assert kc.GROUPS == [{"name": "k", "kernels": ["k_aic", "k_aiv"], "split": "UP_DOWN", "vector_cores": 2,
                          "pipes": {"AIC->AIV": {"slots": 4, "slot_bytes": 4096, "route": "gm"},
                                    "AIV->AIC": {"slots": 4, "slot_bytes": 2048, "route": "gm"}}}]
    assert [k["name"] for k in kc.KERNELS] == ["k_aic", "k_aiv"]


def test_kernel_config_says_where_the_consumers_hold_on_chip_rings(tmp_path):
    out = build(tmp_path, BackendType.Ascend950)
    spec = importlib.util.spec_from_file_location("kc", out / "kernel_config.py")
    kc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kc)
    (group,) = kc.GROUPS
    assert group["pipes"] == {
        "AIC->AIV": {"slots": 4, "slot_bytes": 4096, "route": "direct",
                     "ring": {"space": "Vec", "addr": 0, "bytes": 4 * 4096, "slots": 4}},
        "AIV->AIC": {"slots": 4, "slot_bytes": 2048, "route": "direct",   # 2 rings of 4 slots in Mat
                     "ring": {"space": "Mat", "addr": 0, "bytes": 8 * 2048, "slots": 8}}}


def test_kernels_carry_the_split_and_the_subblock_offsets(tmp_path):
    out = build(tmp_path, BackendType.Ascend950)
    aiv = (out / "kernels" / "aiv" / "k_aiv.pto").read_text()
    aic = (out / "kernels" / "aic" / "k_aic.pto").read_text()
    sub = re.search(r"(%\w+) = pto.get_subblock_idx -> index", aiv).group(1)
    offs = set(re.findall(rf"(%\w+) = arith.muli {sub}, %c32 : index", aiv))
    loads = re.findall(r"pto.partition_view %a_view, offsets = \[(%\w+), %c0\], sizes = \[%c32, %c32\]", aiv)
    stores = re.findall(r"pto.partition_view %c_view, offsets = \[(%\w+), %c0\], sizes = \[%c32, %c32\]", aiv)
    assert len(loads) == len(stores) == 1 and {*loads, *stores} <= offs   # this core's 32 of the 64 rows
    assert re.search(r"pto.tpush ins\(%\w+ : !pto.tile_buf<loc=vec, dtype=f16, rows=32, cols=32.*\{split = \"UP_DOWN\"\}", aiv)
    # each consumer allocates its ring at the planned address, and its pops take slots from it
    assert re.search(r"%c2v_ring = pto.alloc_tile addr = %c0_i64 .*: !pto.tile_buf<loc=vec, dtype=ui8, rows=4, cols=4096", aiv)
    assert re.search(r"%v2c_ring = pto.alloc_tile addr = %c0_i64 .*: !pto.tile_buf<loc=mat, dtype=ui8, rows=8, cols=2048", aic)
    assert re.search(r"pto.tpop outs\(%c2v_ring, %p : !pto.tile_buf<loc=vec, dtype=ui8, rows=4, cols=4096.*, "
                     r"!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=32.*\{split = \"UP_DOWN\"\}", aiv)
    assert re.search(r"pto.tpop outs\(%v2c_ring, %a1 : !pto.tile_buf<loc=mat, dtype=ui8, rows=8, cols=2048.*, "
                     r"!pto.tile_buf<loc=mat, dtype=f16, rows=64, cols=32.*\{split = \"UP_DOWN\"\}", aic)
    assert "get_subblock_idx" not in aic
