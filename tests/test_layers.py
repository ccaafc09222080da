"""The package graph of `src/pypto` has no circles: each package imports only lower floors
(docs/architecture.md "Layers"; issue 14 item 7). Every import counts, including those inside
functions, except the three documented facades."""

from __future__ import annotations

import ast
from pathlib import Path

import pypto

ROOT = Path(pypto.__file__).parent
FLOOR = {"core": 0, "backend": 1, "ir": 2, "ops": 2, "language": 3, "passes": 4, "codegen": 5,
         "runtime": 6, "debug": 7, "tools": 8, "compiler": 9, "include": 0}
# (importing module, imported package): upward on purpose, lazily at call time
FACADES = {("pypto.language.jit", "compiler"), ("pypto.language.jit", "runtime"),
           ("pypto.runtime.compiled", "debug")}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the pypto modules `path` imports anywhere (TYPE_CHECKING blocks aside)."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pypto"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("pypto"):
                found.add(name)
    return found


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_import_goes_to_the_same_or_a_lower_floor():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        mod = _module(path)
        src = _package(mod)
        if src is None or src not in FLOOR:
            continue
        for target in _imports(path):
            dst = _package(target)
            if dst is None or dst == src or dst not in FLOOR:
                continue
            if FLOOR[dst] > FLOOR[src] and (mod, dst) not in FACADES:
                bad.append(f"{mod} (floor {FLOOR[src]}) imports {target} (floor {FLOOR[dst]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_every_package_has_a_floor():
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("__")}
    packages |= {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    assert packages <= set(FLOOR), f"packages without a floor: {sorted(packages - set(FLOOR))}"


def test_the_scan_sees_imports_inside_functions():
    """`compiler.compile` imports `runtime.compiled` inside a function body: the scan finds it."""
    assert "pypto.runtime.compiled" in _imports(ROOT / "compiler.py")
