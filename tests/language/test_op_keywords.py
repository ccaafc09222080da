"""Op calls in a kernel body bind their arguments from the op's OpSpec (params, then attrs): an
unknown keyword is reported by name with the op's accepted keywords, even when the call also has
too many positional arguments (new-user trial: `pl.exp(a, a, mode=3)` reported only the count)."""

import pytest

import pypto.language as pl
from pypto.core.errors import ParserTypeError

SRC = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.load(a, [0, 0], [64, 128])
        u = {CALL}
        out = pl.store(u, [0, 0], out)
        return out
'''


def error_of(call: str) -> ParserTypeError:
    with pytest.raises(ParserTypeError) as info:
        pl.parse(SRC.replace("{CALL}", call))
    assert info.value.span is not None and info.value.span.begin_line == 10   # the line of the call
    return info.value


@pytest.mark.parametrize("call", ["pl.exp(t, mode=3)", "pl.exp(t, t, mode=3)", "pl.tile.exp(t, t, mode=3)"])
def test_an_unknown_keyword_is_named_with_the_accepted_ones(call):
    assert error_of(call).message == "tile.exp: unexpected keyword argument 'mode'; accepted keywords: x"


def test_the_accepted_keywords_list_operands_then_attributes():
    assert error_of("pl.cast(t, pl.FP16, rounding=1)").message == (
        "tile.cast: unexpected keyword argument 'rounding'; accepted keywords: x, target_type, mode")


def test_too_many_positionals_without_a_bad_keyword_still_counts_them():
    assert error_of("pl.exp(t, t)").message == "tile.exp: takes at most 1 positional argument, got 2"


@pytest.mark.parametrize(("call", "op", "name"), [("pl.exp(t, x=t)", "tile.exp", "x"),
                                              ("pl.cast(t, pl.FP16, target_type=pl.FP32)", "tile.cast", "target_type")])
def test_an_argument_given_by_position_and_keyword_is_reported(call, op, name):
    assert error_of(call).message == f"{op}: got multiple values for argument '{name}'"
