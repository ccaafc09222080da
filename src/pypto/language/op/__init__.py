"""`pypto.language.op`: the op namespaces by upstream's module paths (SPEC §13).

`tensor_ops`, `tile_ops` and `unified_ops` hold the same op objects as `pl.tensor`, `pl.tile` and
the unified `pl.*` ops; `system_ops` those of `pl.system`.
"""

from . import system_ops, tensor_ops, tile_ops, unified_ops

__all__ = ["tensor_ops", "tile_ops", "unified_ops", "system_ops"]
