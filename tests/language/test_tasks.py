"""Located errors for misuse of scopes and tasks (SPEC §13): a TaskId used as data, deps of a
wrong type, pl.submit of something that is not a kernel, bad scope arguments."""

import pytest

import pypto.language as pl
from pypto.core.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError

HEAD = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def helper(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = self.k(a, o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o, t = pl.submit(self.k, a, o)
        {line}
        return o
'''


@pytest.mark.parametrize("line, cls, message", [
    ("n = t + 1", ParserTypeError, "'t' is a pl.TaskId, which only orders tasks (deps=[t]); it cannot be used "
                                   "as an operand of 'add'"),
    ("o = self.k(t, o)", ParserTypeError, "it cannot be used as an argument of 'k'"),
    ("o = self.k(a, o, deps=[1.5])", ParserTypeError, "not a tensor or a pl.TaskId"),
    ("o, t2 = pl.submit(self.helper, a, o)", ParserTypeError,
     "pl.submit submits a kernel (an InCore / AIC / AIV / Group / Spmd function); 'self.helper' is an Orchestration "
     "function: call it directly"),
    ("o, t2 = pl.submit(pl.add, a, o)", ParserTypeError, "'pl.add' is not one"),
    ("o, t2 = pl.submit(self.k, a, o, colour=1)", ParserTypeError, "got 'colour='"),
    ("o, t2 = pl.spmd_submit(self.k, a, o)", ParserTypeError, "pl.spmd_submit needs core_num=N"),
    ("with pl.scope(mode=1):\n            pass", ParserTypeError, "pl.scope(mode=...) must be a pl.ScopeMode"),
    ("with pl.scope(pl.ScopeMode.MANUAL, mode=pl.ScopeMode.AUTO):\n            pass", ParserTypeError,
     "pl.scope() takes only mode=pl.ScopeMode.AUTO | MANUAL"),
    ("with pl.manual_scope() as s:\n            pass", ParserSyntaxError, "only 'with pl.at(...) as tid' binds"),
    ("with pl.spmd(core_num=0):\n            pass", ParserTypeError, "core_num must be a positive int"),
    ("with pl.spmd(4, 2):\n            pass", ParserTypeError, "pl.spmd takes one positional argument"),
    ("with pl.at(level=pl.Level.CORE_GROUP, name_hint=3):\n            o[:] = pl.add(a, 1.0)", ParserTypeError,
     "name_hint must be a non-empty string"),
])
def test_misuse_is_a_located_error(line, cls, message):
    text = HEAD.format(line=line)
    with pytest.raises(cls) as ei:
        pl.parse(text)
    assert message in ei.value.message
    first = line.splitlines()[0].strip()
    want = next(i for i, s in enumerate(text.splitlines(), 1) if s.strip() == first)
    assert ei.value.span.begin_line == want


def test_scope_mode_may_be_given_positionally():
    """pl.scope(pl.ScopeMode.MANUAL) is pl.scope(mode=pl.ScopeMode.MANUAL), as Python binds it (it was
    refused as 'pl.scope() takes only mode=...')."""
    from pypto import ir

    positional = pl.parse(HEAD.format(line="with pl.scope(pl.ScopeMode.MANUAL):\n            o = self.k(a, o)"))
    keyword = pl.parse(HEAD.format(line="with pl.scope(mode=pl.ScopeMode.MANUAL):\n            o = self.k(a, o)"))
    ir.assert_structural_equal(positional, keyword)
    assert "with pl.manual_scope():" in positional.as_python()


def test_submit_inside_a_kernel_is_rejected():
    text = HEAD.format(line="pass").replace(
        "        o = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)\n        return o\n",
        "        o = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)\n        with pl.manual_scope():\n"
        "            pass\n        return o\n", 1)
    with pytest.raises(InvalidOperationError) as ei:
        pl.parse(text)
    assert "pl.manual_scope() is not allowed inside an InCore function" in ei.value.message


def test_split_aiv_is_the_explicit_vector_split():
    assert pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT) == pl.split(pl.SplitMode.LEFT_RIGHT)
    with pytest.raises(ValueError, match="2 vector cores"):
        pl.split_aiv(4)


def test_block_index_used_by_orchestration_code_is_located():
    text = HEAD.format(line="for blk in pl.spmd(4):\n            o = self.k(a, o)\n"
                            "            n = blk * 16")
    with pytest.raises(ParserTypeError) as ei:
        pl.parse(text)
    assert "the block index 'blk' of pl.spmd is known only on the cores" in ei.value.message
    assert ei.value.span.begin_line == next(i for i, s in enumerate(text.splitlines(), 1) if "n = blk" in s)


def test_task_options_on_a_higher_level_region_are_rejected():
    text = HEAD.format(line="with pl.at(level=pl.Level.CHIP, name_hint=\"x\"):\n            o = self.k(a, o)")
    with pytest.raises(ParserTypeError, match="options of one task"):
        pl.parse(text)
