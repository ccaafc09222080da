"""The pass pipeline (SPEC §5): `Pass`, `PassManager`, the passes, and `compile`."""

from .base import FunctionPass, Pass, PassContext
from .manager import PassManager, VerificationLevel
from .pipeline import DEFAULT_PIPELINE, OptimizationStrategy, passes_for

__all__ = ["Pass", "FunctionPass", "PassContext", "PassManager", "VerificationLevel",
           "OptimizationStrategy", "DEFAULT_PIPELINE", "passes_for"]
