"""Registry-wide checks: every registered op is complete and consistent, prints and re-parses, and
the generated reference page is up to date."""

import keyword

import pytest
from op_cases import CASES, function_text

import pypto.language as pl
from pypto import ir, ops
from pypto.ir.expr import Call
from pypto.ops.cost import MEASURES, PIPES, UNITS, Cost, work_of
from pypto.ops.reference import DEFAULT_PATH, FAMILIES, render

ALL = sorted(ops.all_ops(), key=lambda s: s.name)


def test_every_registered_op_has_an_example_case():
    assert set(CASES) == {s.name for s in ALL}


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_op_is_complete(spec):
    assert spec.namespace in ("tensor", "tile", "system", "array", "pld")
    assert spec.doc and spec.doc.endswith(".")
    assert isinstance(spec.cost, Cost) and spec.cost.unit in UNITS and spec.cost.pipe in PIPES
    assert spec.cost.measure in MEASURES
    assert spec.family in FAMILIES
    # semantics: every op computes, except tile.create (a buffer whose contents are undefined)
    # (and the host-level ops, which run in the host driver: their `host` field is their Python form)
    assert spec.compute is not None or (spec.has_trait("creation") and spec.namespace == "tile") or \
        (spec.has_trait("host_only") and spec.host and spec.pto is None)
    if spec.namespace == "tensor":
        assert spec.pto is None
        assert spec.tile_op is not None or spec.has_trait("orchestration")
        if spec.tile_op is not None:
            assert ops.get_op(spec.tile_op).namespace == "tile"
    elif spec.namespace != "pld":
        assert spec.pto is not None or spec.compute is None
        assert spec.pto is None or spec.pto.startswith("pto.")
    for i in spec.scratch:
        assert i in spec.writes
    assert all(p.isidentifier() and not keyword.iskeyword(p) for p in spec.params)
    if spec.namespace == "pld" and spec.has_trait("collective"):   # lowered to primitives (LowerCollectives)
        assert spec.pto is None and spec.compute is not None and spec.has_trait("distributed")
    elif spec.name.startswith("pld.") and spec.has_trait("distributed") and not spec.has_trait("host_only"):
        # kernel-level distributed ops (SPEC §8): they run as they are, with PTO text
        assert spec.pto is not None and spec.pto.startswith("pto.") and spec.compute is not None
    elif spec.namespace == "pld":
        assert spec.pto is None or spec.pto.startswith("pto.")
    leaf = spec.python_name.rsplit(".", 1)[1]
    assert leaf.isidentifier() and not keyword.iskeyword(leaf)


def test_unified_names_resolve_to_registered_ops():
    for name, table in ops.UNIFIED.items():
        assert hasattr(pl, name), name
        for (ns, _scalar), op in table.items():
            assert ops.has_op(op), (name, op)


def test_keyword_ops_are_spelt_with_an_underscore():
    for name in ("and", "or", "not"):
        for ns in ("tensor", "tile"):
            assert ops.get_op(f"{ns}.{name}").python_name == f"{ns}.{name}_"
            assert getattr(getattr(pl, ns), f"{name}_").name == f"{ns}.{name}"
        assert hasattr(pl, f"{name}_")


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_op_prints_and_reparses(name):
    fn = pl.parse(function_text(CASES[name]))
    text = fn.as_python()
    assert f"{ops.get_op(name).dsl_name}(" in text
    again = pl.parse(text)
    ir.assert_structural_equal(fn, again)
    assert again.as_python() == text
    ir.assert_structural_equal(ir.deserialize(ir.serialize(fn)), fn)


def _last_call(fn) -> Call:
    last = fn.body.stmts[-1]
    return last.value if hasattr(last, "value") else last.expr


@pytest.mark.parametrize("name,measure,amount", [
    ("tile.add", "out_elems", 16 * 32), ("tile.exp", "out_elems", 2 * 16 * 32),
    ("tile.row_sum", "in_elems", 16 * 32), ("tile.load", "out_bytes", 16 * 16 * 4),
    ("tile.store", "in_bytes", 16 * 32 * 4), ("tile.matmul", "mac", 32 * 32 * 32),
    ("system.bar_all", "one", 1), ("tile.set_validshape", "zero", 0),
])
def test_cost_entries_measure_the_call(name, measure, amount):
    work = work_of(_last_call(pl.parse(function_text(CASES[name]))))
    assert (work.measure, work.amount) == (measure, amount)


def test_reference_page_is_up_to_date():
    assert DEFAULT_PATH.read_text(encoding="utf-8") == render(), \
        "docs/operators.md is stale: run python -m pypto.ops.reference"


def test_reference_page_lists_every_op_with_its_lowering():
    text = render()
    for spec in ALL:
        assert f"`{spec.signature}`" in text
        if spec.pto:
            assert spec.pto in text


def test_tests_cited_by_the_docs_exist():
    """Every `tests/....py` (optionally `::test_name`) that the docs, the README or a docstring cite
    as a guard exists (a user trial found docs/operators.md citing a test file that did not)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [*root.joinpath("docs").glob("*.md"), root / "README.md", *root.joinpath("src").rglob("*.py")]
    cited = {m for f in sources
             for m in re.findall(r"tests/[\w/]+\.py(?:::\w+)?", f.read_text(encoding="utf-8"))}
    assert "tests/ops/test_op_registry.py::test_reference_page_is_up_to_date" in cited
    for c in sorted(cited):
        path, _, name = c.partition("::")
        assert (root / path).is_file(), c
        if name:
            assert re.search(rf"^def {name}\(", (root / path).read_text(encoding="utf-8"), re.M), c
