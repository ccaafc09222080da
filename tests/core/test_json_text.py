"""`dumps_indented` writes exactly `json.dumps(data, indent=2)` (the build's report files keep their
text) and fails the same way."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.core.json_text import dumps_indented

_SCALARS = st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70) \
    | st.floats(allow_nan=True, allow_infinity=True) | st.text()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_same_text_as_json_dumps(data):
    assert dumps_indented(data) == json.dumps(data, indent=2)


@pytest.mark.parametrize("data", [
    {}, [], (), "", {"a": {}}, {"a": []}, [[], {}], {"é ✓\n\"": "\u2028 \x00"}, [math.nan, math.inf, -math.inf, -0.0],
    {"total_ms": 1.5, "per_pass_ms": [["ConvertToSSA", 0.25], ["Simplify", 1e-05]]},
    {1: "int key", None: "null key", 2.5: "float key", False: "bool key"},   # non-str keys: json.dumps gives the text
])
def test_edge_cases(data):
    assert dumps_indented(data) == json.dumps(data, indent=2)


def test_the_errors_of_json_dumps():
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps_indented({"a": [{1, 2}]})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_indented({"a": loop})
