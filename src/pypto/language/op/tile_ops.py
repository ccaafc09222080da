"""`pl.tile.*` as a module (upstream path `pypto.language.op.tile_ops`, SPEC §13).

The same op objects as `pl.tile`, so `from pypto.language.op.tile_ops import add` inside a kernel
means `pl.tile.add`.
"""

from ..op_wrappers import export_namespace

__all__ = export_namespace(globals(), "tile")
