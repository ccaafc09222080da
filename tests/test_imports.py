"""Importing pypto stays cheap and complete (issue 14 item 6; docs/performance.md "Import time").

Every public name of every package still resolves although some load lazily (PEP 562 module
`__getattr__`), and the common entry points do not import what only some programs need. No
timings here: `benchmarks/import_time.py` measures them.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pypto

ROOT = Path(pypto.__file__).parent
PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.py")
) + ["pypto.compiler"]


def test_the_package_walk_finds_the_public_packages():
    for name in ("pypto", "pypto.language", "pypto.language.distributed", "pypto.ir", "pypto.ops",
                 "pypto.runtime", "pypto.runtime.dfx", "pypto.runtime.dist", "pypto.debug"):
        assert name in PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_resolves(package):
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", None)
    assert names is not None, f"{package} declares no __all__"
    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(mod, n)]
    assert missing == [], f"{package}.__all__ names that do not resolve: {missing}"
    # `from package import *` resolves the same names through the module's __getattr__
    ns: dict[str, object] = {}
    exec(f"from {package} import *", ns)  # noqa: S102
    assert set(names) <= set(ns)


def test_lazy_dfx_names_are_the_functions_of_their_modules():
    from pypto.runtime import dfx
    from pypto.runtime.dfx import argdump, pmu, swimlane

    assert dfx.swimlane_events is swimlane.swimlane_events
    assert dfx.pmu_csv is pmu.pmu_csv
    assert dfx.write_args_dump is argdump.write_args_dump
    assert argdump.ARGS_DUMP_DIR == dfx.ARGS_DUMP_DIR == "args_dump"
    with pytest.raises(AttributeError, match="module 'pypto.runtime.dfx' has no attribute 'swimlane_json'"):
        _ = dfx.swimlane_json


def _loaded_after(code: str) -> set[str]:
    """Names in sys.modules after running `code` in a fresh interpreter (torch imported first)."""
    probe = f"import sys, json, torch\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


# loaded only by the programs that need them (docs/performance.md "Import time")
ONLY_SOME = ("msgpack", "pypto.runtime.dist", "pypto.runtime.extern", "pypto.debug", "pypto.tools",
             "pypto.runtime.dfx.swimlane", "pypto.runtime.dfx.depgraph", "pypto.runtime.dfx.deps",
             "pypto.runtime.dfx.pmu", "pypto.runtime.dfx.scope_stats", "pypto.runtime.dfx.argdump")


def _offending(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_import_pypto_loads_neither_torch_nor_the_language():
    probe = "import sys, pypto; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pypto')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)  # noqa: S307  (a printed list of str)
    assert "torch" not in loaded
    assert _offending(set(loaded), ("pypto.language", "pypto.ir", "pypto.ops")) == []


def test_import_language_loads_no_compiler_runtime_or_tools():
    loaded = _loaded_after("import pypto.language as pl")
    assert "pypto.language" in loaded and "pypto.ops" in loaded  # the probe ran
    heavy = ("pypto.compiler", "pypto.passes", "pypto.codegen", "pypto.runtime", *ONLY_SOME)
    assert _offending(loaded, heavy) == []


def test_import_runtime_and_compile_load_no_optional_parts():
    loaded = _loaded_after("import pypto.language as pl\nimport pypto.runtime\nfrom pypto import ir\nir.compile")
    assert "pypto.compiler" in loaded and "pypto.runtime.dfx" in loaded  # the probe ran
    assert _offending(loaded, ONLY_SOME) == []
