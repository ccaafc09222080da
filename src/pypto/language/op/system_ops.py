"""`pl.system.*` as a module (upstream path `pypto.language.op.system_ops`, SPEC §13).

The same op objects as `pl.system`, so `from pypto.language.op.system_ops import sync_src` inside a kernel
means `pl.system.sync_src`.
"""

from ..op_wrappers import export_namespace

__all__ = export_namespace(globals(), "system")
