"""The parser's exception classes (upstream path `...parser.diagnostics.exceptions`, SPEC §13).

Re-exports of `pypto.core.errors`; no second definition.
"""

from ....core.errors import (
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    PyPTOError,
    SSAViolationError,
    UndefinedVariableError,
    UnsupportedFeatureError,
)

__all__ = [
    "PyPTOError", "ParserError", "ParserSyntaxError", "ParserTypeError", "UndefinedVariableError",
    "SSAViolationError", "InvalidOperationError", "UnsupportedFeatureError",
]
