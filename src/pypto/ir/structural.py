"""Structural equality and hashing of IR nodes (SPEC §4).

Two nodes are structurally equal when they have the same classes and equal fields, recursively,
with these exceptions:

- spans (fields declared `compare=False`), Var name hints and Program names are ignored;
- function names are ignored too (SPEC §13, upstream's convention): two Programs pair their
  functions by name when both have the same set of names, else by position (programs keep their
  functions sorted by name); a call's callee (`GlobalVar`) must then name the paired function, and
  two Functions compared on their own map callee names on first sight, like free Vars;
- a binding site (AssignStmt.var, For loop_var/iter_args/return_vars, While iter_args/return_vars,
  If return_vars, Function params) maps a Var of `a` to a Var of `b`; the mapping is a bijection and
  every later use must agree with it. In non-SSA IR a Var may be bound again: it must then be bound
  to the same partner;
- a free Var (used before any binding) matches only itself, unless `map_free_vars=True` (then it is
  mapped on first sight) or it occurs inside a type (a `pl.dynamic` dimension) and both Vars have
  the same name and type: a reparse creates fresh dynamic-dimension Vars.

Traversal is generic over `dataclasses.fields`, so new node kinds need no code here unless they
introduce binding sites (`_BINDING`) or need a different visiting order (`_ORDER`).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import math
from typing import Any

from ..core.dtype import DataType
from .expr import GlobalVar, Var
from .function import Function, Program
from .stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, WhileStmt
from .types import Type

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]

# Fields whose Vars are bound (not used) by the node.
_BINDING: dict[type, frozenset[str]] = {
    AssignStmt: frozenset({"var"}),
    ForStmt: frozenset({"loop_var", "iter_args", "return_vars"}),
    WhileStmt: frozenset({"iter_args", "return_vars"}),
    IfStmt: frozenset({"return_vars"}),
    ScopeStmt: frozenset({"task_id", "block_var"}),
    Function: frozenset({"params"}),
}
# Visiting order where the declared field order would see a use before its binding.
_ORDER: dict[type, tuple[str, ...]] = {
    AssignStmt: ("value", "var"),
    ForStmt: ("start", "stop", "step", "iter_args", "loop_var", "body", "return_vars", "kind"),
    WhileStmt: ("iter_args", "cond", "body", "return_vars"),
    # deps are evaluated before the region runs; its TaskId is bound once it is submitted
    ScopeStmt: ("kind", "mode", "deps", "no_dep_args", "block_var", "body", "task_id"),
}
_IGNORED: dict[type, frozenset[str]] = {Program: frozenset({"name", "functions"}),
                                        Function: frozenset({"name"}), GlobalVar: frozenset({"name"})}
_VAR_SKIP = frozenset({"name", "var_type"})  # Var fields handled by hand (others, e.g. init, are uses)
_FIELDS_CACHE: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field name, is binding site) in visiting order; spans and ignored fields left out."""
    got = _FIELDS_CACHE.get(cls)
    if got is None:
        ignored = _IGNORED.get(cls, frozenset())
        names = [f.name for f in dataclasses.fields(cls) if f.compare and f.name not in ignored]
        order = _ORDER.get(cls)
        if order is not None:
            names = [n for n in order if n in names] + [n for n in names if n not in order]
        binding = _BINDING.get(cls, frozenset())
        got = _FIELDS_CACHE[cls] = tuple((n, n in binding) for n in names)
    return got


def _is_node(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _leaf_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
    return (type(a) is type(b) or numbers) and a == b


class _Mismatch(Exception):
    def __init__(self, path: str, a: Any, b: Any, why: str = "") -> None:
        super().__init__(f"{path}: {_short(a)} vs {_short(b)}" + (f" ({why})" if why else ""))


def _short(x: Any) -> str:
    if isinstance(x, Var):
        return repr(x)
    if _is_node(x):
        v = getattr(x, "value", None) if type(x).__name__.startswith("Const") else None
        return f"{type(x).__name__}({v!r})" if v is not None else type(x).__name__
    if isinstance(x, tuple):
        return f"tuple of {len(x)}"
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


class _Equal:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.a2b: dict[Var, Var] = {}
        self.b2a: dict[Var, Var] = {}
        self.path: list[str] = []
        self.in_type = 0
        self.fa2b: dict[str, str] = {}  # function (callee) names of a -> b
        self.fb2a: dict[str, str] = {}

    def fail(self, a: Any, b: Any, why: str = "") -> None:
        raise _Mismatch("".join(self.path), a, b, why)

    def at(self, step: str, a: Any, b: Any, bind: bool = False) -> None:
        self.path.append(step)
        if bind:
            self.bind(a, b)
        else:
            self.eq(a, b)
        self.path.pop()

    def eq(self, a: Any, b: Any) -> None:
        if isinstance(a, Var) or isinstance(b, Var):
            self.use(a, b)
        elif isinstance(a, tuple) or isinstance(b, tuple):
            self.seq(a, b, False)
        elif _is_node(a) or _is_node(b):
            if type(a) is not type(b):
                self.fail(a, b)
            if isinstance(a, Program):
                self.program(a, b)
            elif isinstance(a, GlobalVar):
                self.callee(a.name, b.name)
            self.in_type += isinstance(a, Type)
            for name, bind in _fields(type(a)):
                self.at("." + name, getattr(a, name), getattr(b, name), bind)
            self.in_type -= isinstance(a, Type)
        elif not _leaf_equal(a, b):
            self.fail(a, b)

    def program(self, a: Program, b: Program) -> None:
        fa, fb = a.functions, b.functions
        if len(fa) != len(fb):
            self.fail(fa, fb, "different numbers of functions")
        if {f.name for f in fa} == {f.name for f in fb}:
            by_name = {f.name: f for f in fb}
            fb = tuple(by_name[f.name] for f in fa)
        for x, y in zip(fa, fb):
            self.callee(x.name, y.name)
        self.path.append(".functions")
        self.seq(fa, fb, False)
        self.path.pop()

    def callee(self, a: str, b: str) -> None:
        ma, mb = self.fa2b.setdefault(a, b), self.fb2a.setdefault(b, a)
        if ma != b or mb != a:
            self.fail(a, b, f"function {a!r} is paired with {ma!r}, {b!r} with {mb!r}")

    def seq(self, a: Any, b: Any, bind: bool) -> None:
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            self.fail(a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            self.at(f"[{i}]", x, y, bind)

    def var_parts(self, a: Var, b: Var) -> None:
        if type(a) is not type(b):
            self.fail(a, b)
        for f in dataclasses.fields(a):
            if f.compare and f.name not in _VAR_SKIP:
                self.at("." + f.name, getattr(a, f.name), getattr(b, f.name))
        self.in_type += 1
        self.at(".type", a.var_type, b.var_type)
        self.in_type -= 1

    def use(self, a: Any, b: Any) -> None:
        if not (isinstance(a, Var) and isinstance(b, Var)):
            self.fail(a, b)
        ma, mb = self.a2b.get(a), self.b2a.get(b)
        if ma is not None or mb is not None:
            if ma is not b or mb is not a:
                self.fail(a, b, f"{a!r} is mapped to {ma!r}, {b!r} to {mb!r}")
            return
        if a is not b and not self.map_free and not (self.in_type and a.name == b.name):
            self.fail(a, b, "different free variables")
        self.var_parts(a, b)
        self.a2b[a], self.b2a[b] = b, a

    def bind(self, a: Any, b: Any) -> None:
        if a is None and b is None:  # an optional binding site left empty (ScopeStmt.task_id)
            return None
        if isinstance(a, tuple) or isinstance(b, tuple):
            return self.seq(a, b, True)
        if not (isinstance(a, Var) and isinstance(b, Var)):
            return self.fail(a, b)
        self.var_parts(a, b)
        ma, mb = self.a2b.get(a), self.b2a.get(b)
        if ma is None and mb is None:
            self.a2b[a], self.b2a[b] = b, a
        elif ma is not b or mb is not a:
            self.fail(a, b, f"rebinding: {a!r} was mapped to {ma!r}, {b!r} to {mb!r}")


def _check(a: Any, b: Any, map_free_vars: bool) -> None:
    cmp = _Equal(map_free_vars)
    cmp.path.append(type(a).__name__)
    cmp.eq(a, b)


def structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    """Whether two IR nodes (Program, Function, Stmt, Expr, Type, ...) are structurally equal.

    Compares classes and all compared dataclass fields recursively; ignores spans, Var name hints,
    function names (SPEC §13: callees must name paired functions) and Program names; maps Vars at
    binding sites (SPEC §4). Free Vars match only themselves unless
    `map_free_vars` is true, except dynamic-dimension Vars inside types, which match by name.
    Never raises for well-formed nodes.
    """
    try:
        _check(a, b, map_free_vars)
    except _Mismatch:
        return False
    return True


def assert_structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> None:
    """Like `structural_equal` (SPEC §4), but raise on the first difference.

    Raises:
        AssertionError: naming the path to the first difference and both values, e.g.
            `Program.functions[1].body.stmts[3].value.args[0]: Var(x) vs ConstInt(1)`.
    """
    try:
        _check(a, b, map_free_vars)
    except _Mismatch as e:
        raise AssertionError(str(e)) from None


class _Hasher:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.index: dict[Var, int] = {}
        self.callees: dict[str, int] = {}  # function name -> position (Program) or first sight
        self.out: list[Any] = []

    def var(self, v: Var, bind: bool) -> None:
        idx = self.index.get(v)
        if bind or (idx is None and self.map_free):
            self.out.append(type(v).__name__)
            for f in dataclasses.fields(v):
                if f.compare and f.name not in _VAR_SKIP:
                    self.visit(getattr(v, f.name), False)
            self.visit(v.var_type, False)
            if idx is None:
                idx = self.index[v] = len(self.index)
        self.out.append(("var", idx) if idx is not None else ("free", v.name))

    def visit(self, x: Any, bind: bool) -> None:
        out = self.out
        if isinstance(x, Var):
            self.var(x, bind)
        elif isinstance(x, tuple):
            out.append(("tuple", len(x)))
            for y in x:
                self.visit(y, bind)
        elif _is_node(x):
            out.append(type(x).__name__)
            if isinstance(x, Program):  # functions in their (sorted) order, names left out
                for f in x.functions:
                    self.callees.setdefault(f.name, len(self.callees))
                self.visit(x.functions, False)
            elif isinstance(x, GlobalVar):
                out.append(("callee", self.callees.setdefault(x.name, len(self.callees))))
            for name, b in _fields(type(x)):
                self.visit(getattr(x, name), b)
        elif isinstance(x, DataType):
            out.append("dtype:" + x.name)
        elif isinstance(x, enum.Enum):
            out.append(f"{type(x).__name__}.{x.name}")
        elif isinstance(x, float):
            out.append("nan" if math.isnan(x) else int(x) if x.is_integer() else x)
        else:
            out.append(x)


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with `structural_equal` (SPEC §4): equal nodes hash equal.

    Ignores spans, Var names, function names and Program names; bound Vars hash by binding order, free Vars by
    name (by first-sight order when `map_free_vars`). Deterministic across processes (the token
    stream is digested with BLAKE2b). Returns a signed 64-bit int.
    """
    h = _Hasher(map_free_vars)
    h.visit(node, False)
    digest = hashlib.blake2b(repr(h.out).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)
