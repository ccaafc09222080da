"""The pass pipeline (SPEC §5): `Pass`, `PassManager` and the passes (the driver is `pypto.compiler`)."""

from .base import FunctionPass, Pass, PassContext
from .manager import PassManager, VerificationLevel
from .pipeline import DEFAULT_PIPELINE, OptimizationStrategy, passes_for

__all__ = ["Pass", "FunctionPass", "PassContext", "PassManager", "VerificationLevel",
           "OptimizationStrategy", "DEFAULT_PIPELINE", "passes_for"]
