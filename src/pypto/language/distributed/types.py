"""Annotations of distributed programs (SPEC §8): `pld.DistributedTensor[[shape], dtype]` and
`pld.CommCtx`.

`pld.DistributedTensor[[1, 256], pl.FP32]` is a DDR tensor bound to a window (IR
`DistributedTensorType`, a TensorType); bare `pld.DistributedTensor` is allowed where bare
`pl.Tensor` is (`@pl.jit` parameters: shape and dtype come from the call). Both work inside
`pl.In` / `pl.Out` / `pl.InOut`. `pld.CommCtx` is the opaque communication context
(`pld.get_comm_ctx`), IR `CommCtxType`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.dtype import INT64
from ...ir.types import CommCtxType, DistributedTensorType
from ..typing import AnnotationError, ScalarAnnotation, TensorAnnotation, _subscript

__all__ = ["DistributedTensor", "CommCtx", "DistributedTensorAnnotation", "CommCtxAnnotation"]


@dataclass(frozen=True)
class DistributedTensorAnnotation(TensorAnnotation):
    """`pld.DistributedTensor[[shape], dtype, ...]`; shape and dtype None for the bare spelling."""

    def to_ir(self) -> DistributedTensorType:
        if self.shape is None or self.dtype is None:
            raise AnnotationError("bare pld.DistributedTensor needs a shape and dtype: write "
                                  "pld.DistributedTensor[[shape], dtype] (bare pld.DistributedTensor is only "
                                  "allowed under @pl.jit)")
        t = TensorAnnotation(self.shape, self.dtype, self.extra).to_ir()
        return DistributedTensorType(t.shape, t.dtype, t.view)

    def __getitem__(self, item: Any) -> Any:
        return _subscript("pld.DistributedTensor", "[shape, dtype] and an optional layout/view", item,
                          lambda it: DistributedTensorAnnotation(it[0], it[1], tuple(it[2:])))

    def __repr__(self) -> str:
        if self.shape is None:
            return "pld.DistributedTensor"
        return f"pld.DistributedTensor[{self.shape!r}, {self.dtype!r}]"

    @property
    def bare(self) -> bool:
        """Whether this is the bare spelling (shape and dtype from a `@pl.jit` call's argument)."""
        return self.shape is None


@dataclass(frozen=True)
class CommCtxAnnotation(ScalarAnnotation):
    """`pld.CommCtx`: a communication context value."""

    def to_ir(self) -> CommCtxType:
        return CommCtxType()

    def __repr__(self) -> str:
        return "pld.CommCtx"


DistributedTensor = DistributedTensorAnnotation()
CommCtx = CommCtxAnnotation(INT64)
