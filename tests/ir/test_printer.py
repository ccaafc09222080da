"""The printer emits DSL text that re-parses to a structurally equal node (SPEC §4)."""

import pypto.language as pl
from pypto import ir

SRC = '''
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class Demo:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[M, 64], pl.FP16]]) -> pl.Tensor[[M, 64], pl.FP16]:
        acc0 = pl.create_tile([16, 64], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        for i, (acc,) in pl.range(0, n, 2, init_values=(acc0,)):
            t = pl.load(x, [i * 16, 0], [16, 64])
            if i < 4:
                u = pl.add(acc, t)
                v = pl.yield_(u)
            else:
                w = pl.sub(acc, t)
                v = pl.yield_(w)
            nxt = pl.yield_(v)
        for (j,) in pl.while_(init_values=(0,)):
            pl.cond(j < 3)
            j2 = j + 1
            jo = pl.yield_(j2)
        y = pl.store(nxt, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[M, 64], pl.FP16]]) -> pl.Tensor[[M, 64], pl.FP16]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]):
            z = pl.mul(x, 0.5)
        y = self.k(z, n, y)
        return y
'''


def test_roundtrip_of_control_flow_dynamic_dims_and_scopes():
    prog = pl.parse(SRC)
    text = prog.as_python()
    assert text.startswith("# pypto.program: Demo\nimport pypto.language as pl\n")
    assert 'M = pl.dynamic("M")' in text
    assert "pl.tile.load(x, [i * 16, 0], [16, 64], target_memory=pl.Mem.Vec)" in text
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]" in text
    again = pl.parse(text)
    ir.assert_structural_equal(prog, again)
    assert ir.structural_hash(prog) == ir.structural_hash(again)
    assert again.as_python() == text


def test_concise_drops_annotations_and_still_parses():
    prog = pl.parse(SRC)
    concise = prog.as_python(concise=True)
    assert "t = pl.tile.load(" in concise and "t: pl.Tile" not in concise
    ir.assert_structural_equal(pl.parse(concise), prog)


def test_printing_is_unambiguous_for_shadowed_names():
    @pl.function
    def f(x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:
        x = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.cast(x, pl.FP16)  # a new type: a new variable with the same name
        return x

    text = f.as_python()
    assert "x_1: pl.Tensor[[8], pl.FP16] = pl.tensor.cast(x, target_type=pl.FP16, mode='round')" in text
    ir.assert_structural_equal(pl.parse(text), f)


def test_serialize_roundtrip_of_parsed_program():
    prog = pl.parse(SRC)
    ir.assert_structural_equal(ir.deserialize(ir.serialize(prog)), prog)
