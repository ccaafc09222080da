"""The free names a `@pl.jit` kernel's build depends on, for its cache key (SPEC §7, §9).

A kernel body reads module globals and closure variables (`SCALE`, `TILE`, a `@pl.jit.incore`
sub-function, an inline helper) while it is parsed: their values become part of the program. A
cached build is only right while they keep those values, so the key of a call includes
`free_values(fn)`:

- every constant-like value the source of `fn` names, directly or as an attribute of a global
  (`CFG.depth`): bool, int, float, complex, str, bytes, None, an enum member, a `DataType`, and
  tuples / lists / sets / dicts of those, by name and `repr`;
- for every `@pl.jit.*` sub-function or inline helper it names (anything with a
  `__pypto_pyfunc__`), the hash of that function's source and, recursively, its own free values.

Other values (modules, classes, plain functions, tensors) are not part of the key: the parser only
reads them through attributes or calls, and hashing them would either be meaningless or costly.
The names of a function are found once (from its source); each call only looks their values up.
"""

from __future__ import annotations

import ast
import enum
import hashlib
import inspect
import textwrap
import types
from collections.abc import Callable
from typing import Any

from ..core.dtype import DataType

__all__ = ["free_values", "source_hash"]

_NAMES: dict[Any, tuple[str, ...]] = {}
_HASHES: dict[Any, str] = {}
_ATOMS = (bool, int, float, complex, str, bytes, type(None), enum.Enum, DataType)


def source_hash(fn: Callable) -> str:
    """A short hash of the source of `fn` (its qualified name when the source is unavailable),
    cached per code object (a redefined function has a new one)."""
    key = getattr(fn, "__code__", fn)
    hit = _HASHES.get(key)
    if hit is None:
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            src = fn.__qualname__
        hit = _HASHES[key] = hashlib.sha256(src.encode()).hexdigest()[:16]
    return hit


def _dotted(node: ast.AST) -> str | None:
    """`a` or `a.b.c` for a load of a name or of an attribute chain over a name; None otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
        return None
    return ".".join([node.id, *reversed(parts)])


def _names(fn: Callable) -> tuple[str, ...]:
    """The free names `fn`'s source reads, and attribute chains over them (`CFG.depth`), in order
    of first use, cached. A name the function binds itself (a parameter, an assignment or loop
    target: Python's locals, `co_varnames`) is not free, even where a module global of that name
    exists."""
    code = getattr(fn, "__code__", None)
    key = code if code is not None else fn
    hit = _NAMES.get(key)
    if hit is not None:
        return hit
    local = set(code.co_varnames) | set(code.co_cellvars) if code is not None else set()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        names: tuple[str, ...] = ()
    else:
        seen: dict[str, None] = {}
        for node in ast.walk(tree):
            path = _dotted(node)
            if path is not None and path.split(".", 1)[0] not in local:
                seen.setdefault(path, None)
        names = tuple(seen)
    _NAMES[key] = names
    return names


def _constant(v: Any, depth: int = 0) -> bool:
    if isinstance(v, _ATOMS):
        return True
    if depth < 4 and isinstance(v, (tuple, list, set, frozenset)):
        return all(_constant(x, depth + 1) for x in v)
    if depth < 4 and isinstance(v, dict):
        return all(_constant(k, depth + 1) and _constant(x, depth + 1) for k, x in v.items())
    return False


def free_values(fn: Callable, _seen: set[int] | None = None) -> tuple:
    """The part of a JIT cache key that stands for the globals and closure variables `fn` (a
    Python function) reads (module docstring): a tuple of `(name, type, repr)` for constants and
    `(name, source hash, free values)` for sub-functions and inline helpers."""
    seen = _seen if _seen is not None else set()
    if id(fn) in seen:
        return ()
    seen.add(id(fn))
    code = getattr(fn, "__code__", None)
    closure: dict[str, Any] = {}
    if code is not None and getattr(fn, "__closure__", None):
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:   # an empty cell (assigned later)
                pass
    glb = getattr(fn, "__globals__", {})
    out: list[tuple] = []
    for name in _names(fn):
        base, *attrs = name.split(".")
        if base in closure:
            v = closure[base]
        elif base in glb:
            v = glb[base]
        else:
            continue
        if isinstance(v, types.ModuleType) and v.__name__.split(".", 1)[0] == "pypto":
            continue   # pl.*, pld.*: the library's names, not the user's configuration
        try:
            for a in attrs:
                v = getattr(v, a)
        except Exception:   # an attribute the parser would report (or a property that raises)
            continue
        sub = getattr(v, "__pypto_pyfunc__", None)
        if callable(sub):
            out.append((name, source_hash(sub), free_values(sub, seen)))
        elif _constant(v):
            out.append((name, type(v).__name__, repr(v)))
    return tuple(out)
