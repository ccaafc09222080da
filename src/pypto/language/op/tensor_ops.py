"""`pl.tensor.*` as a module (upstream path `pypto.language.op.tensor_ops`, SPEC §13).

The same op objects as `pl.tensor`, so `from pypto.language.op.tensor_ops import add` inside a kernel
means `pl.tensor.add`.
"""

from ..op_wrappers import export_namespace

__all__ = export_namespace(globals(), "tensor")
