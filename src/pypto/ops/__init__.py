"""The operator catalog (SPEC §3): importing this package registers every op family."""

from . import cast, elementwise, matmul, memory, reduction  # noqa: F401  (registration)
from .registry import UNIFIED, OpSpec, OpTypeError, all_ops, get_op, has_op, register

__all__ = ["OpSpec", "OpTypeError", "get_op", "has_op", "all_ops", "register", "UNIFIED"]
