"""Source text, spans and compile-time name resolution for the parser (TVMScript style).

`SourceInfo` maps AST nodes of a (possibly dedented) snippet back to the user's file:line:col.
`Namespace` resolves free names of a kernel body: closure cells first, then module globals, then
builtins — so module globals and closure constants are usable inside kernels (SPEC §9).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.errors import ParserSyntaxError, register_source
from ...core.span import Span

__all__ = ["SourceInfo", "Namespace", "source_of", "source_of_text", "MISSING"]

MISSING = object()
_TEXT_COUNTER = itertools.count()


@dataclass
class SourceInfo:
    """Where a parsed snippet came from: file name, and line/column offsets added to AST positions."""

    filename: str
    tree: ast.Module
    line_offset: int = 0
    col_offset: int = 0

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 0)
        if not line:
            return Span.unknown()
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", line) or line
        end_col = getattr(node, "end_col_offset", col) or col
        return Span(self.filename, line + self.line_offset, col + 1 + self.col_offset,
                    end_line + self.line_offset, end_col + 1 + self.col_offset)


def _class_source(cls: type) -> SourceInfo | None:
    """Locate a class through its methods' code objects (works under profilers and runpy, where
    `inspect` cannot map `cls.__module__` back to a file)."""
    import linecache

    for attr in vars(cls).values():
        fn = getattr(attr, "__pypto_pyfunc__", attr)
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        lines = linecache.getlines(code.co_filename)
        if not lines:
            continue
        tree = ast.parse("".join(lines), filename=code.co_filename)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == cls.__name__ and \
                    node.lineno <= code.co_firstlineno <= (node.end_lineno or node.lineno):
                return SourceInfo(code.co_filename, ast.Module(body=[node], type_ignores=[]))
    return None


def source_of(obj: Callable | type) -> SourceInfo:
    """Parse the source of a Python function or class. Raises ParserSyntaxError if unavailable."""
    if isinstance(obj, type):
        info = _class_source(obj)
        if info is not None:
            return info
    try:
        lines, first = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ParserSyntaxError(f"cannot read the source of {getattr(obj, '__qualname__', obj)!r}: {e}; "
                                f"PyPTO parses kernel source, so define kernels in a file") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = 0
    for a, b in zip(text.splitlines(), dedented.splitlines()):
        if b.strip():
            indent = len(a) - len(b)
            break
    return SourceInfo(filename, ast.parse(dedented), first - 1, indent)


def source_of_text(text: str, filename: str | None = None) -> SourceInfo:
    """Parse DSL text given as a string (pl.parse); registers it so errors can show the line."""
    filename = filename or f"<pl.parse-{next(_TEXT_COUNTER)}>"
    register_source(filename, text)
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as e:
        raise ParserSyntaxError(f"invalid Python syntax: {e.msg}",
                                Span(filename, e.lineno or 0, e.offset or 0)) from None
    return SourceInfo(filename, tree)


class Namespace:
    """Free-name lookup for a kernel body: closure cells, module globals, builtins."""

    def __init__(self, globals_: dict[str, Any], closure: dict[str, Any] | None = None) -> None:
        self.globals = globals_
        self.closure = closure or {}

    @staticmethod
    def of_function(fn: Callable) -> Namespace:
        closure: dict[str, Any] = {}
        code = getattr(fn, "__code__", None)
        if code is not None and fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:  # empty cell (defined later)
                    pass
        return Namespace(fn.__globals__, closure)

    def lookup(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, MISSING)

    def eval(self, node: ast.expr, info: SourceInfo, local_vars: dict[str, Any] | None = None) -> Any:
        """Evaluate a compile-time expression (annotations, pl.at arguments) in this namespace;
        `local_vars` (IR scalar variables in scope) shadow the closure and globals."""
        code = compile(ast.Expression(body=node), info.filename, "eval")
        return eval(code, self.globals, {**self.closure, **(local_vars or {})})  # noqa: S307 - evaluating the user's own annotation
