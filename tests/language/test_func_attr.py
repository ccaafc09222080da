"""`pl.func_attr({...})` as a function's first statement, and `@pl.function(attrs={...})` (SPEC §13
"Directives and helpers"; `pypto.language.parser.func_attr`)."""

import json
import runpy
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.language.parser.diagnostics import ParserSyntaxError, ParserTypeError

SIG = "self, a: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]"


def program_text(first: str = "", main_dec: str = "") -> str:
    return f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k({SIG}):
        """Copy a."""
        {first}
        t = pl.load(a, [0, 0], [16, 32])
        y = pl.store(t, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration{main_dec})
    def main({SIG}):
        self.k(a, y)
'''


FIRST = 'pl.func_attr({"tag": "fast", "unroll": 4, "ids": [1, 2], "ratio": 0.5, "on": True, "none": None})'


def test_func_attr_is_metadata_that_prints_parses_serializes_and_compares():
    prog = pl.parse(program_text(FIRST))
    k = prog.get_function("k")
    assert k.attrs == (("ids", (1, 2)), ("none", None), ("on", True), ("ratio", 0.5), ("tag", "fast"),
                       ("unroll", 4))
    text = prog.as_python()
    assert "        pl.func_attr({'ids': [1, 2], 'none': None, 'on': True, 'ratio': 0.5, 'tag': 'fast', " \
           "'unroll': 4})\n" in text
    again = pl.parse(text)
    ir.assert_structural_equal(again, prog)
    assert again.as_python() == text
    ir.assert_structural_equal(ir.deserialize(ir.serialize(prog)), prog)
    assert ir.deserialize(ir.serialize(prog)).get_function("k").attrs == k.attrs
    assert not ir.structural_equal(prog, pl.parse(program_text(FIRST.replace('"unroll": 4', '"unroll": 5'))))
    assert not ir.structural_equal(prog, pl.parse(program_text()))


def test_decorator_attrs_is_the_older_spelling():
    old = pl.parse(program_text(main_dec=', attrs={"owner": "me"}'))
    new = pl.parse(program_text().replace("        self.k(a, y)", '        pl.func_attr({"owner": "me"})\n'
                                                              "        self.k(a, y)"))
    assert old.get_function("main").attrs == (("owner", "me"),)
    ir.assert_structural_equal(old, new)


def test_keys_with_a_meaning_become_decorator_options():
    prog = pl.parse(program_text('pl.func_attr({"level": pl.Level.CORE_GROUP, "role": "SubWorker", "x": 1})'))
    k = prog.get_function("k")
    assert (k.level, k.role, k.attrs) == (pl.Level.CORE_GROUP, pl.Role.SubWorker, (("x", 1),))
    assert "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)" \
        in prog.as_python()
    split = pl.parse(program_text('pl.func_attr({"optimizations": [pl.split(pl.SplitMode.UP_DOWN)]})'))
    assert split.get_function("k").optimizations == (("split", (("mode", pl.SplitMode.UP_DOWN),)),)


@pytest.mark.parametrize("first,main_dec,err,msg,line", [
    ("t0 = pl.load(a, [0, 0], [16, 32])\n        pl.func_attr({'x': 1})", "", ParserSyntaxError,
     "must be the first statement of a function body", 10),
    ("pl.func_attr(x=1)", "", ParserSyntaxError, "takes one dict literal", 9),
    ("pl.func_attr(dict(x=1))", "", ParserSyntaxError, "takes one dict literal", 9),
    ("pl.func_attr({'x': a})", "", ParserTypeError, "the value of 'x' must be a bool, int, float, str, None", 9),
    ("pl.func_attr({'x': [1, a]})", "", ParserTypeError, "or a list of those, got Var", 9),
    ("pl.func_attr({1: 2})", "", ParserTypeError, "keys must be strings", 9),
    ("pl.func_attr({'x': 1, 'x': 2})", "", ParserTypeError, "key 'x' given twice", 9),
    ("pl.func_attr({'level': 'NOPE'})", "", ParserTypeError, "'level' must be a pl.Level", 9),
    ("pl.func_attr({'x': 1.0e999})", "", ParserTypeError, "must be a finite number", 9),
    ("pl.func_attr({'level': pl.Level.HOST})", ", level=pl.Level.CORE_GROUP", None, "", 0),
])
def test_misuse_is_a_located_error(first, main_dec, err, msg, line):
    if err is None:  # conflicting level: the decorator of k says CORE_GROUP
        text = program_text(first).replace("type=pl.FunctionType.InCore", "type=pl.FunctionType.InCore" + main_dec)
        with pytest.raises(ParserTypeError, match="'level' is .*HOST.* here but .*CORE_GROUP.* in the decorator"):
            pl.parse(text)
        return
    with pytest.raises(err, match=msg) as e:
        pl.parse(program_text(first))
    assert e.value.span.begin_line == line


def test_bad_decorator_attrs_is_a_type_error():
    with pytest.raises(ParserTypeError, match=r"@pl.function\(attrs=...\): the value of 'x' must be"):
        pl.parse(program_text(main_dec=', attrs={"x": {"nested": 1}}'))


def test_attrs_reach_kernel_config_and_compiled_meta(tmp_path):
    prog = pl.parse(program_text(FIRST))
    cp = ir.compile(prog, output_dir=str(tmp_path / "b"), dump_passes=False, skip_ptoas=True)
    a, y = torch.randn(16, 32), torch.zeros(16, 32)
    cp(a, y)
    assert torch.equal(y, a)
    want = {"ids": [1, 2], "none": None, "on": True, "ratio": 0.5, "tag": "fast", "unroll": 4}
    kernels = runpy.run_path(str(Path(cp.output_dir) / "kernel_config.py"))["KERNELS"]
    assert [k.get("attrs") for k in kernels] == [want]
    meta = json.loads((Path(cp.output_dir) / "compiled_meta.json").read_text())
    assert {f["name"]: f.get("attrs") for f in meta["functions"]} == {"k": want, "main": None}
    assert [k.get("attrs") for k in meta["kernels"]] == [want]


def test_the_kernels_expand_mixed_kernel_derives_keep_the_attrs():
    from pypto.passes.base import PassContext
    from pypto.passes.expand_mixed_kernel import ExpandMixedKernel

    @pl.program
    class Mixed:
        @pl.function(type=pl.FunctionType.InCore)
        def mm_exp(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                   c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            pl.func_attr({"tag": "mixed"})
            a1 = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
            b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
            p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
            e = pl.exp(p)
            c1 = pl.store(e, [0, 0], c)
            return c1

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                 c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            c = self.mm_exp(a, b, c)
            return c

    out = ExpandMixedKernel().run(Mixed, PassContext())
    attrs = {f.name: f.attrs for f in out.functions}
    assert attrs == {"main": (), "mm_exp": (("tag", "mixed"),), "mm_exp_aic": (("tag", "mixed"),),
                     "mm_exp_aiv": (("tag", "mixed"),)}
