"""`pypto.language.parser.diagnostics`: the parser's error classes by upstream's import path (SPEC §13).

A thin module over `pypto.core.errors`: the classes are the same objects, so
`except pypto.language.parser.diagnostics.ParserTypeError` catches what the parser raises. Every
error carries `.span` (file, line, column; `str(span)` is `file:line:col`) and `.message`.
`ErrorRenderer` formats an error as `file:line:col: error: message`, the source line and a caret.
"""

from .exceptions import (
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    SSAViolationError,
    UndefinedVariableError,
    UnsupportedFeatureError,
)
from .renderer import ErrorRenderer

__all__ = [
    "ParserError", "ParserSyntaxError", "ParserTypeError", "UndefinedVariableError",
    "SSAViolationError", "InvalidOperationError", "UnsupportedFeatureError", "ErrorRenderer",
]
