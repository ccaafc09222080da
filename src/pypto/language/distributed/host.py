"""Host-level annotation of distributed programs (SPEC §8): `pld.WindowBuffer`, the type of
`pld.alloc_window_buffer(...)` in a HOST orchestrator (IR `WindowBufferType`). Printed IR annotates
window buffers with it, so printed host orchestrators parse back."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.types import WindowBufferType
from ..typing import Annotation

__all__ = ["WindowBuffer", "WindowBufferAnnotation"]


@dataclass(frozen=True)
class WindowBufferAnnotation(Annotation):
    """`pld.WindowBuffer`: a host window buffer handle."""

    def to_ir(self) -> WindowBufferType:
        return WindowBufferType()

    def __repr__(self) -> str:
        return "pld.WindowBuffer"


WindowBuffer = WindowBufferAnnotation()
