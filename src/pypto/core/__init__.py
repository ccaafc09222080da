"""Foundation of PyPTO: data types, source spans and error classes. Imports nothing of pypto."""

from . import dtype
from .dtype import ALL_DTYPES, DataType, DTypeKind, dtype_from_name, dtype_from_torch, promote
from .errors import (
    CompileError,
    InternalError,
    InvalidOperationError,
    MemoryCapacityError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    PyPTOError,
    RuntimeSimError,
    SSAViolationError,
    UndefinedVariableError,
    VerificationError,
)
from .span import Span

__all__ = [
    "dtype", "ALL_DTYPES", "DataType", "DTypeKind", "dtype_from_name", "dtype_from_torch", "promote",
    "Span", "PyPTOError", "ParserError", "ParserSyntaxError", "ParserTypeError",
    "UndefinedVariableError", "SSAViolationError", "InvalidOperationError", "CompileError",
    "MemoryCapacityError", "VerificationError", "RuntimeSimError", "InternalError",
]
