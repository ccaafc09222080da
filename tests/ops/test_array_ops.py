"""`pl.Array[extent, dtype]` and `pl.array.*` (SPEC §13 "Directives and helpers";
`pypto.ops.array`): a kernel fills an array in a loop and uses its elements as offsets, against
torch; the printed IR round-trips; misuse is a located error."""

import pathlib

import pytest
import torch
from op_harness import kernel_program, run

import pypto.language as pl
from pypto import ir
from pypto.debug import torch_codegen
from pypto.language.parser.diagnostics import ParserTypeError

ROWS = 8
BODY = """
offs = pl.array.create(4, pl.INT32)
for i, (acc,) in pl.range(4, init_values=(offs,)):
    row = (3 - i) * 8 + 1
    acc2 = pl.array.update_element(acc, i, row)
    filled = pl.yield_(acc2)
o0 = pl.array.get_element(filled, 0)
o3 = pl.array.get_element(filled, 3)
y1_t = pl.load(a, [o0, 0], [8, 32])
y2_t = pl.load(a, [o3, 0], [8, 32])
"""
INS = [("a", "FP32", (40, 32))]
OUTS = [("y1", "FP32", (8, 32)), ("y2", "FP32", (8, 32))]


def test_array_filled_in_a_loop_gives_the_offsets_of_loads_against_torch(tmp_path):
    prog = kernel_program(BODY, INS, OUTS)
    a = torch.randn(40, 32)
    want = torch.zeros(4, dtype=torch.int32)
    for i in range(4):
        want[i] = (3 - i) * 8 + 1
    y1, y2 = run(prog, a, outs=OUTS)
    assert torch.equal(y1, a[int(want[0]):int(want[0]) + 8]) and torch.equal(y2, a[int(want[3]):int(want[3]) + 8])
    ns: dict = {}
    exec(torch_codegen(prog), ns)  # the torch reference script agrees
    z1, z2 = torch.zeros(8, 32), torch.zeros(8, 32)
    ns["run"](a, z1, z2)
    assert torch.equal(z1, y1) and torch.equal(z2, y2)


def test_array_type_prints_parses_and_serializes():
    prog = kernel_program(BODY, INS, OUTS)
    text = prog.as_python()
    assert "offs: pl.Array[4, pl.INT32] = pl.array.create(extent=4, dtype=pl.INT32)" in text
    assert "o0: pl.Scalar[pl.INT32] = pl.array.get_element(filled, 0)" in text
    again = pl.parse(text)
    ir.assert_structural_equal(again, prog)
    ir.assert_structural_equal(ir.deserialize(ir.serialize(prog)), prog)
    other = pl.parse(text.replace("pl.array.create(extent=4, dtype=pl.INT32)", "pl.array.create(extent=4, dtype=pl.INT64)")
                     .replace("pl.Array[4, pl.INT32]", "pl.Array[4, pl.INT64]").replace("pl.Scalar[pl.INT32]", "pl.Scalar[pl.INT64]"))
    assert not ir.structural_equal(other, prog)


def test_array_ops_in_the_pto(tmp_path):
    cp = ir.compile(kernel_program(BODY, INS, OUTS), output_dir=str(tmp_path / "b"), dump_passes=False,
                    skip_ptoas=True)
    pto = "".join(p.read_text() for p in pathlib.Path(cp.output_dir).glob("kernels/**/*.pto"))
    assert "pto.array_create {extent = 4} -> !pto.array<4xi32>" in pto
    assert "iter_args(" in pto and "-> (!pto.array<4xi32>)" in pto
    assert "pto.array_get_element ins(" in pto and "pto.array_update_element ins(" in pto


def test_out_of_range_index_at_run_time_is_reported_at_its_line():
    body = BODY.replace("o3 = pl.array.get_element(filled, 3)", "o3 = pl.array.get_element(filled, o0)")
    with pytest.raises(Exception, match="array index 25 is out of range for an array of 4 elements") as e:
        run(kernel_program(body, INS, OUTS), torch.randn(40, 32), outs=OUTS)
    assert ":14:" in str(e.value)


@pytest.mark.parametrize("line,msg", [
    ("x = pl.array.create(0, pl.INT32)", "extent must be an int in 1..256, got 0"),
    ("x = pl.array.create(4, pl.FP32)", "an array holds integers"),
    ("x = pl.array.get_element(pl.array.create(4, pl.INT32), 4)", "index 4 is out of range for an array of 4"),
    ("x = pl.array.get_element(a, 0)", "argument 'array' must be a pl.Array, got Tensor"),
    ("x = pl.array.update_element(pl.array.create(4, pl.INT32), 0, 1.5)", "argument 'value' must be an integer scalar, got Scalar\\[FP32\\]"),
    ("x: pl.Array[4, pl.FP16] = pl.array.create(4, pl.INT32)", "an array holds integers"),
])
def test_misuse_is_a_located_type_error(line, msg):
    with pytest.raises(ParserTypeError, match=msg) as e:
        kernel_program(line + "\ny1_t = pl.load(a, [0, 0], [8, 32])\ny2_t = y1_t", INS, OUTS)
    assert e.value.span.begin_line == 8
