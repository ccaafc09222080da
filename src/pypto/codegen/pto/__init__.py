"""PTO MLIR code generation: one `.pto` module per InCore/AIC/AIV kernel (SPEC §5)."""

from .kernel import emit_kernel, mlir_loc

__all__ = ["emit_kernel", "mlir_loc"]
