"""`pld.system.*`: the distributed ops of the system namespace (SPEC §8; `pypto.ops.distributed`), as
op objects generated from the registry. Parsed inside a kernel body, not called.
"""

from ._namespace import ops_under

globals().update(ops_under("pld.system."))
__all__ = sorted(ops_under("pld.system."))
