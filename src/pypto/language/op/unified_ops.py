"""The unified `pl.*` ops as a module (upstream path `pypto.language.op.unified_ops`, SPEC §13).

The same objects as `pl.add`, `pl.matmul`, ...: each picks the `tensor.*` or `tile.*` form (or the
scalar form) from its arguments' types when the kernel is parsed.
"""

from ..op_wrappers import unified_ops as _unified

globals().update(_unified)
__all__ = sorted(_unified)
