"""`*args` / `**kwargs` in a call inside a PyPTO function are a located ParserSyntaxError (the
trial's `pl.pipeline(0, n, R, init_values=(y,), **stage_kw)` silently dropped the dict: the
parser reads each call's arguments as written)."""

import pytest

import pypto.language as pl
from pypto.core.errors import ParserSyntaxError

SRC = '''
import pypto.language as pl

stage_kw = {"stage": 2}
offs = (0, 0)
kw = {"target_memory": pl.Mem.Vec}

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i, (yy,) in pl.pipeline(0, 64, 8, init_values=(y,){LOOP}):
            t = pl.load(x, [i, 0], [8, 32]{LOAD})
            ny = pl.store(t, [i, 0], yy)
            out = pl.yield_(ny)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k({CALL})
        return y
'''


def program(loop="", load="", call="x, y"):
    return SRC.replace("{LOOP}", loop).replace("{LOAD}", load).replace("{CALL}", call)


@pytest.mark.parametrize(("where", "text", "line", "shown", "callee"), [
    ("loop", ", **stage_kw", 12, "**stage_kw", "pl.pipeline"),
    ("load", ", **kw", 13, "**kw", "pl.load"),
    ("call", "*(x, y)", 20, "*(x, y)", "self.k"),
])
def test_unpacking_in_a_call_is_a_located_error(where, text, line, shown, callee):
    with pytest.raises(ParserSyntaxError) as info:
        pl.parse(program(**{where: text}))
    e = info.value
    assert e.span is not None and e.span.begin_line == line
    assert f"argument unpacking '{shown}' is not supported" in e.message
    assert f"'{callee}(...)'" in e.message and "write each one out" in e.message


def test_unpacking_in_a_nested_expression_is_found_too():
    with pytest.raises(ParserSyntaxError, match=r"argument unpacking '\*offs'") as info:
        pl.parse(program(load=") if True else pl.load(x, *offs"))
    assert info.value.span.begin_line == 13


def test_the_same_program_written_out_parses():
    prog = pl.parse(program(loop=", stage=2"))
    assert "stage=2" in prog.as_python()
