"""Chip-wide system ops of SPEC §13 (`pypto.ops.chip`): syncall, cacheinvalid, fence, sync_set and
the chip's core counts, on the simulator of both chips and in the PTO text."""

import pathlib

import pytest
import torch
from op_harness import kernel_program

import pypto.language as pl
from pypto import ir
from pypto.backend.soc import BackendType
from pypto.core.errors import PyPTOError
from pypto.ops.chip import chip_context, current_chip

BODY = """
pl.system.cacheinvalid(a)
pl.system.fence()
pl.system.sync_set(set_pipe="MTE3", event_id=5)
pl.system.syncall()
c = pl.system.available_cluster_count()
v = pl.system.available_aiv_count()
y1_t = pl.load(a, [c, 0], [16, 32])
y2_t = pl.load(a, [v, 0], [16, 32])
"""
OUTS = [("y1", "FP32", (16, 32)), ("y2", "FP32", (16, 32))]


@pytest.mark.parametrize("platform,clusters,aivs", [("a2a3sim", 24, 48), ("a5sim", 36, 72)])
def test_core_counts_are_the_running_chips_and_barriers_change_no_data(tmp_path, platform, clusters, aivs):
    backend = BackendType.Ascend910B if platform == "a2a3sim" else BackendType.Ascend950
    prog = kernel_program(BODY, [("a", "FP32", (96, 32))], OUTS)
    a = torch.randn(96, 32)
    a_before = a.clone()
    y1, y2 = torch.zeros(16, 32), torch.zeros(16, 32)
    cp = ir.compile(prog, dump_passes=False, skip_ptoas=True, platform=platform, backend_type=backend,
                    output_dir=str(tmp_path))
    cp(a, y1, y2)
    assert torch.equal(y1, a[clusters:clusters + 16]) and torch.equal(y2, a[aivs:aivs + 16])
    assert torch.equal(a, a_before)   # cacheinvalid only reads
    pto = "".join(p.read_text() for p in pathlib.Path(cp.output_dir).glob("kernels/**/*.pto"))
    for inst in ("pto.dcci", "pto.fence", "pto.sync_set", "pto.sync_all", "pto.available_cluster_count",
                 "pto.available_aiv_count"):
        assert inst in pto, inst


def test_outside_a_run_the_counts_are_ascend910b_and_the_context_nests():
    assert (current_chip().aiv_count, current_chip().cluster_count) == (48, 24)
    with chip_context(72, 36):
        assert current_chip().cluster_count == 36
    assert current_chip().cluster_count == 24
    with pytest.raises(ValueError, match="a chip needs cores"):
        with chip_context(0, 1):
            pass


def test_system_ops_print_and_reparse():
    prog = kernel_program(BODY, [("a", "FP32", (96, 32))], OUTS)
    text = prog.as_python()
    assert 'pl.system.sync_set(set_pipe="MTE3", event_id=5)' in text or \
        "pl.system.sync_set(set_pipe='MTE3', event_id=5)" in text
    assert "pl.system.cacheinvalid(a)" in text and "pl.system.syncall()" in text
    ir.assert_structural_equal(pl.parse(text), prog)


@pytest.mark.parametrize("call,msg", [
    ("pl.system.sync_set(set_pipe=\"V\", event_id=16)", "event_id"),
    ("pl.system.sync_set(set_pipe=\"X\", event_id=1)", "set_pipe"),
    ("pl.system.cacheinvalid(pl.load(a, [0, 0], [16, 32]))", "must be a Tensor"),
])
def test_bad_arguments_are_located_errors(call, msg):
    with pytest.raises(PyPTOError, match=msg) as e:
        kernel_program(f"{call}\ny1_t = pl.load(a, [0, 0], [16, 32])\ny2_t = y1_t",
                       [("a", "FP32", (96, 32))], OUTS)
    assert e.value.span is not None
