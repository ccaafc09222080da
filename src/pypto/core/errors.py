"""User-facing error classes (SPEC §2.4) and their rendering with file:line:col, source and caret.

Every error a kernel author can cause is a `PyPTOError` carrying a `Span`. `str(err)` renders::

    kernel.py:12:9: error: Undefined variable 'x'
        y = pl.add(x, 1.0)
                   ^

Internal invariant violations raise `InternalError` instead, so they are never mistaken for user
mistakes.
"""

from __future__ import annotations

import linecache

from .span import Span

__all__ = [
    "PyPTOError",
    "ParserError",
    "ParserSyntaxError",
    "UnsupportedFeatureError",
    "ParserTypeError",
    "UndefinedVariableError",
    "SSAViolationError",
    "InvalidOperationError",
    "CompileError",
    "MemoryCapacityError",
    "VerificationError",
    "RuntimeSimError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "DeviceStateError",
    "PlatformUnavailableError",
    "InternalError",
    "render_location",
    "user_call_span",
]

# Source texts registered for pseudo-files (e.g. text given to pl.parse) so carets can be drawn.
_SOURCES: dict[str, list[str]] = {}


def register_source(filename: str, text: str) -> None:
    """Make `text` available for rendering errors located in `filename`."""
    _SOURCES[filename] = text.splitlines()


def _source_line(filename: str, line: int) -> str | None:
    lines = _SOURCES.get(filename)
    if lines is not None:
        return lines[line - 1] if 0 < line <= len(lines) else None
    text = linecache.getline(filename, line)
    return text.rstrip("\n") if text else None


def render_location(span: Span | None, message: str, kind: str = "error") -> str:
    """`file:line:col: <kind>: message`, then the source line and a caret under the column."""
    if span is None or not span.is_known():
        return message
    out = f"{span.filename}:{span.begin_line}:{span.begin_col}: {kind}: {message}"
    src = _source_line(span.filename, span.begin_line)
    if src is not None:
        width = 1
        if span.end_line == span.begin_line and span.end_col > span.begin_col:
            width = span.end_col - span.begin_col
        out += f"\n    {src}\n    {' ' * (span.begin_col - 1)}{'^' * width}"
    return out


class PyPTOError(Exception):
    """Base class of every user-facing PyPTO error. `span` locates it; `message` is the bare text.

    `notes` are further (span, text) places that explain it (e.g. where a value was defined),
    rendered after the error as `file:line:col: note: text` with their own source line and caret.
    """

    def __init__(self, message: str, span: Span | None = None,
                 notes: tuple[tuple[Span | None, str], ...] = ()) -> None:
        self.message = message
        self.span = span
        self.notes = tuple(notes)
        super().__init__(message)

    def __str__(self) -> str:
        parts = [render_location(self.span, self.message)]
        parts += [render_location(span, text, "note") for span, text in self.notes]
        return "\n".join(parts)


class ParserError(PyPTOError):
    """Base of every error raised while turning Python source (or printed IR) into IR."""


class ParserSyntaxError(ParserError):
    """A Python construct the DSL does not accept (e.g. `lambda`, a missing annotation)."""


class UnsupportedFeatureError(ParserSyntaxError):
    """A Python construct or DSL feature that this implementation does not support in a kernel body
    (an unsupported statement or expression kind). A ParserSyntaxError, so existing handlers keep
    catching it (upstream's name, SPEC §13)."""


class ParserTypeError(ParserError):
    """Operands of the wrong type, shape or memory space for an op or statement."""


class UndefinedVariableError(ParserError):
    """A name that is neither a DSL variable, a parameter, nor a module global/closure constant."""


class SSAViolationError(ParserError):
    """A reassignment under `strict_ssa=True`."""


class InvalidOperationError(ParserError):
    """An op used where it is not allowed (e.g. a tensor compute op in an Orchestration function)."""


class CompileError(PyPTOError):
    """A program that parsed but cannot be compiled (a pass rejected it)."""


class MemoryCapacityError(CompileError):
    """Live on-chip buffers of a kernel exceed a memory space's capacity."""


class VerificationError(CompileError):
    """A pass produced IR that fails verification (e.g. print → parse round trip differs)."""


class RuntimeSimError(PyPTOError):
    """The simulator found an error while running a compiled program."""


class ArgumentTypeError(PyPTOError, TypeError):
    """A call of a compiled program (CompiledProgram, kernel handle, ChipWorker, `@pl.jit` kernel) got
    the wrong arguments: wrong count, unknown / missing / duplicate names, a wrong kind or dtype.
    Also a TypeError, so `except TypeError` keeps working."""


class ArgumentValueError(PyPTOError, ValueError):
    """A call argument of the right kind with a wrong value: a wrong shape, an out-of-range scalar, a
    tensor not on the CPU, a RunConfig for another chip. Also a ValueError."""


class DeviceStateError(PyPTOError, RuntimeError):
    """A ChipWorker or DeviceTensor used when it cannot be: a closed worker, a freed tensor, a tensor
    of a closed worker. Also a RuntimeError."""


class PlatformUnavailableError(PyPTOError, RuntimeError):
    """A platform that cannot run on this machine: a real-NPU platform (`a2a3`, `a5`) without the
    vendor toolkit or device. Located at the user's call; also a RuntimeError."""


class InternalError(Exception):
    """A broken compiler invariant: a bug in PyPTO, not in the user's program."""


def user_call_span() -> Span | None:
    """The span of the innermost call on the current stack made from outside the pypto package —
    the user's line that called into PyPTO (with its columns, where Python records them) — for
    errors found at run time rather than in the user's kernel source."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(package):
        f = f.f_back
    if f is None:
        return None
    line, end_line, col, end_col = f.f_lineno, -1, 1, -1
    try:
        pos = list(f.f_code.co_positions())[f.f_lasti // 2]
        if None not in pos:
            line, end_line, col, end_col = pos[0], pos[1], pos[2] + 1, pos[3] + 1
    except (AttributeError, IndexError):  # no position table (Python < 3.11)
        pass
    return Span(f.f_code.co_filename, line, col, end_line, end_col)


def user_facing(fn):  # type: ignore[no-untyped-def]
    """Decorator for public entry points: a PyPTOError leaves without PyPTO's internal frames.

    The error already names the user's file and line; the traceback then shows only the user's
    own call chain. Other exceptions (bugs) keep their full traceback.
    """
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return fn(*args, **kwargs)
        except PyPTOError as e:
            raise e.with_traceback(None) from None

    return wrapper
