"""Hardware models: `BackendType` and the SoC models of Ascend910B / Ascend950 (SPEC §6)."""

from .soc import KIB, BackendType, SoCModel, get_soc

__all__ = ["BackendType", "SoCModel", "get_soc", "KIB"]
