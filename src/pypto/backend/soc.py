"""SoC models of the Ascend NPUs PyPTO targets (SPEC §6). All sizes in bytes.

One `SoCModel` per `BackendType` holds what passes and the simulator need: usable capacity of each
on-chip memory space per core, core counts, the cluster shape, allowed memory-to-memory moves,
buffer alignment and the recommended innermost tile size.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..core import dtype as D
from ..core.dtype import DataType
from ..core.enums import MemorySpace as M
from ..core.enums import member_named
from .casts import NATIVE_CASTS, cast_chain

__all__ = ["BackendType", "SoCModel", "get_soc", "KIB"]

KIB = 1024


class BackendType(enum.Enum):
    """Target hardware: Ascend910B (platforms a2a3 / a2a3sim) or Ascend950 (a5 / a5sim)."""

    Ascend910B = "Ascend910B"
    Ascend950 = "Ascend950"

    def __repr__(self) -> str:
        return f"BackendType.{self.name}"

    @classmethod
    def of(cls, backend: object) -> BackendType:
        """`backend` as a BackendType: a member, or its name as a string (`"Ascend910B"`).

        Raises:
            ValueError: naming the value and the allowed ones.
        """
        found = member_named(cls, backend)
        if found is not None:
            return found   # type: ignore[return-value]
        raise ValueError(f"unknown backend_type {backend!r}; allowed: "
                         f"{', '.join('BackendType.' + m for m in cls.__members__)} "
                         f"(from pypto.backend import BackendType), or their names as strings")


@dataclass(frozen=True)
class SoCModel:
    """Capacities and topology of one chip.

    Attributes:
        capacity: usable bytes per memory space *per core* (Vec per AIV core; Mat, Left, Right, Acc,
            Bias per AIC core).
        physical: physical bytes per memory space (Vec reserves some for the runtime).
        num_aic / num_aiv: cube / vector cores on the chip; a cluster is 1 AIC + 2 AIV.
        allowed_moves: (src, dst) memory pairs a load, store or move may use.
        alignment: on-chip buffer address alignment.
        recommended_inner_bytes: innermost tile dimension below this many bytes wastes DDR bandwidth.
        ddr_access_granularity: bytes of one line of the chip's L2 cache, the unit DDR (HBM) is
            read in (Ascend C programming guide: transfers aligned to the 512-byte cache line
            perform better).
        l2_bytes: capacity of the L2 cache shared by all cores in front of DDR (Ascend910B: 192
            MiB, `l2_size` of the CANN platform configuration of the 910B parts; Ascend950:
            estimate, assumed the same).
        l0_fractal_rows: rows of one fractal box of an L0 (Left/Right/Acc) or Mat tile.
        fractal_bytes: bytes of one fractal box per memory space (512 in Mat/Left/Right, 1024 in Acc).
        native_casts: (src, dst) dtype pairs one conversion instruction handles (`backend.casts`).
        cube_dtypes: operand dtypes the cube unit multiplies (matmul inputs; accumulated in FP32,
            INT32 for INT8). Ascend950 adds FP8 (E4M3, E5M2) and FP4 (E2M1) to Ascend910B's set.
    """

    backend: BackendType
    platform: str
    capacity: dict[M, int]
    physical: dict[M, int]
    num_aic: int
    num_aiv: int
    allowed_moves: frozenset[tuple[M, M]]
    alignment: int = 32
    recommended_inner_bytes: int = 512
    ddr_access_granularity: int = 512
    l2_bytes: int = 192 * 1024 * KIB
    num_dies: int = 1
    l0_fractal_rows: int = 16
    fractal_bytes: dict[M, int] = field(default_factory=lambda: {M.Mat: 512, M.Left: 512, M.Right: 512,
                                                                 M.Acc: 1024})
    extra: dict[str, int] = field(default_factory=dict)
    cube_dtypes: frozenset[DataType] = frozenset({D.FP16, D.BF16, D.FP32, D.INT8})

    @property
    def native_casts(self) -> frozenset[tuple[DataType, DataType]]:
        return NATIVE_CASTS[self.backend.name]

    def cast_chain(self, src: DataType, dst: DataType) -> tuple[DataType, ...] | None:
        """Dtypes a `src` → `dst` conversion passes through here (see `backend.casts.cast_chain`)."""
        return cast_chain(self.backend.name, src, dst)

    def pipe_route(self, src: M, dst: M) -> str | None:
        """How a cross-core pipe carries a tile from `src` (the sender's memory) to `dst` (the
        receiver's): "direct" when the chip moves src → dst on chip, "gm" when it goes through a
        DDR slot buffer (src → DDR, then DDR → dst), None when neither path exists."""
        if (src, dst) in self.allowed_moves:
            return "direct"
        if (src, M.DDR) in self.allowed_moves and (M.DDR, dst) in self.allowed_moves:
            return "gm"
        return None

    def capacity_of(self, space: M) -> int:
        """Usable bytes of `space` per core. Raises KeyError for DDR (not an on-chip space)."""
        return self.capacity[space]


_MOVES_910B = frozenset({
    (M.DDR, M.Vec), (M.DDR, M.Mat), (M.Vec, M.DDR), (M.Mat, M.Left), (M.Mat, M.Right),
    (M.Mat, M.Bias), (M.Acc, M.Mat), (M.Acc, M.DDR),
})
_MOVES_950 = _MOVES_910B | {(M.Vec, M.Mat), (M.Acc, M.Vec)}

_SOCS = {
    BackendType.Ascend910B: SoCModel(
        backend=BackendType.Ascend910B, platform="a2a3",
        capacity={M.Vec: 184 * KIB, M.Mat: 512 * KIB, M.Left: 64 * KIB, M.Right: 64 * KIB,
                  M.Acc: 128 * KIB, M.Bias: 1 * KIB},
        physical={M.Vec: 192 * KIB, M.Mat: 512 * KIB, M.Left: 64 * KIB, M.Right: 64 * KIB,
                  M.Acc: 128 * KIB, M.Bias: 1 * KIB},
        num_aic=24, num_aiv=48, allowed_moves=_MOVES_910B,
        recommended_inner_bytes=512, ddr_access_granularity=512),
    BackendType.Ascend950: SoCModel(
        backend=BackendType.Ascend950, platform="a5",
        capacity={M.Vec: 240 * KIB, M.Mat: 512 * KIB, M.Left: 64 * KIB, M.Right: 64 * KIB,
                  M.Acc: 256 * KIB, M.Bias: 4 * KIB},
        physical={M.Vec: 248 * KIB, M.Mat: 512 * KIB, M.Left: 64 * KIB, M.Right: 64 * KIB,
                  M.Acc: 256 * KIB, M.Bias: 4 * KIB},
        num_aic=36, num_aiv=72, allowed_moves=_MOVES_950, num_dies=2,
        cube_dtypes=frozenset({D.FP16, D.BF16, D.FP32, D.INT8, D.FP8E4M3FN, D.FP8E5M2, D.FP4}),
        recommended_inner_bytes=128, ddr_access_granularity=128),
}


def get_soc(backend: BackendType) -> SoCModel:
    """The SoC model of `backend`."""
    return _SOCS[backend]
