"""Host orchestration code generation: one C++ file per Orchestration function (SPEC §5)."""

from .host import emit_orchestration, entry_dynamic_dims, kernel_enum_name

__all__ = ["emit_orchestration", "entry_dynamic_dims", "kernel_enum_name"]
