"""Hardware models: `BackendType` and the SoC models of Ascend910B / Ascend950 (SPEC §6)."""

from .casts import NATIVE_CASTS, cast_chain, expanded_casts
from .soc import KIB, BackendType, SoCModel, get_soc

__all__ = ["BackendType", "SoCModel", "get_soc", "KIB", "NATIVE_CASTS", "cast_chain", "expanded_casts"]
