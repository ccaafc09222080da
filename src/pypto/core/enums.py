"""Enumerations shared by the language, IR, backend and runtime (SPEC §2.2).

Each enum prints as the DSL spelling (`repr(MemorySpace.Vec)` is `pl.Mem.Vec`) so the IR printer
can emit it directly and the parser can evaluate it back.
"""

from __future__ import annotations

import enum

__all__ = [
    "MemorySpace", "FunctionType", "Level", "Role", "ForKind", "ParamDirection", "TensorLayout",
    "PadValue", "SplitMode", "ScopeKind", "ScopeMode", "NotifyOp", "WaitCmp", "AtomicType", "ReduceOp",
    "member_named", "KERNEL_TYPES",
]


def member_named(cls: type[enum.Enum], value: object, any_case: bool = False) -> enum.Enum | None:
    """`value` as a member of the enum `cls`: the member itself, or its name as a string (spaces
    around it ignored; `any_case`: in any case, for enums whose names are upper case). None for
    anything else: the caller raises its own error, naming the option (`backend_type=`,
    `strategy=`, `verification_level=`)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        name = value.strip().upper() if any_case else value.strip()
        return cls.__members__.get(name)
    return None


class _DSLEnumMeta(enum.EnumMeta):
    """Enum classes whose unknown members raise an AttributeError listing the valid ones
    (`pl.Level.CORE` → "did you mean pl.Level.CORE_GROUP? ...")."""

    def __getattr__(cls, name: str) -> object:
        members = cls.__dict__.get("_member_map_", {})
        if name in members:
            return members[name]
        if name.startswith("_") or not members:
            raise AttributeError(name)
        import difflib

        prefix = _DSL_PREFIX.get(cls.__name__, cls.__name__)
        close = difflib.get_close_matches(name, list(members), n=1) or \
            [m for m in members if m.upper().startswith(name.upper())][:1]
        hint = f"; did you mean {prefix}.{close[0]}?" if close else ""
        raise AttributeError(f"{prefix} has no member '{name}'{hint} ({prefix} has {', '.join(members)})")


class _DSLEnum(enum.Enum, metaclass=_DSLEnumMeta):
    def __repr__(self) -> str:
        return f"{_DSL_PREFIX[type(self).__name__]}.{self.name}"


class MemorySpace(_DSLEnum):
    """Where a buffer lives: off-chip DDR or one of the on-chip buffers of an AI core (SPEC §6)."""

    DDR = "gm"
    Vec = "vec"    # UB, AIV cores
    Mat = "mat"    # L1, AIC cores
    Left = "left"  # L0A
    Right = "right"  # L0B
    Acc = "acc"    # L0C
    Bias = "bias"


class FunctionType(_DSLEnum):
    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Spmd = "Spmd"
    Inline = "Inline"


KERNEL_TYPES = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV})
"""The function types that are kernels: code that runs on AI cores (an InCore kernel, or one pinned
to the cube or a vector core)."""


class Level(_DSLEnum):
    """Hierarchy levels; `level_number` gives the numeric level of SPEC §2.2."""

    AIV = "AIV"
    AIC = "AIC"
    CORE_GROUP = "CORE_GROUP"
    CHIP_DIE = "CHIP_DIE"
    CHIP = "CHIP"
    HOST = "HOST"
    CLUSTER_0 = "CLUSTER_0"
    CLUSTER_1 = "CLUSTER_1"
    CLUSTER_2 = "CLUSTER_2"
    GLOBAL = "GLOBAL"

    @property
    def level_number(self) -> int:
        return _LEVEL_NUMBERS[self.name]


_LEVEL_NUMBERS = {"AIV": 0, "AIC": 0, "CORE_GROUP": 0, "CHIP_DIE": 1, "CHIP": 2, "HOST": 3,
                  "CLUSTER_0": 4, "CLUSTER_1": 5, "CLUSTER_2": 6, "GLOBAL": 7}


class Role(_DSLEnum):
    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


class ForKind(_DSLEnum):
    """How a For loop's iterations relate; prints as the DSL loop helper name."""

    Sequential = "range"
    Parallel = "parallel"
    Unroll = "unroll"
    Pipeline = "pipeline"


class ParamDirection(_DSLEnum):
    In = "In"
    Out = "Out"
    InOut = "InOut"


class TensorLayout(_DSLEnum):
    ND = "ND"
    DN = "DN"
    NZ = "NZ"


class PadValue(_DSLEnum):
    null = "null"
    zero = "zero"
    max = "max"
    min = "min"


class SplitMode(_DSLEnum):
    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"


class ScopeKind(_DSLEnum):
    """Kinds of scope statement: an InCore region (`pl.at`), a runtime scope (`pl.scope`), an SPMD
    launch (`pl.spmd`) or a group of kernels run on one cluster (`pl.cluster`)."""

    InCore = "InCore"
    Runtime = "Runtime"
    Spmd = "Spmd"
    Cluster = "Cluster"


class ScopeMode(_DSLEnum):
    """How a runtime scope orders its tasks (SPEC §13): `AUTO` derives the order from overlapping
    tensor regions; `MANUAL` derives none (only TaskIds and `deps=` order its tasks)."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


class NotifyOp(_DSLEnum):
    """How `pld.system.notify` updates a peer's signal cell (SPEC §8): add the value atomically, or
    set it."""

    AtomicAdd = "AtomicAdd"
    Set = "Set"


class WaitCmp(_DSLEnum):
    """What `pld.system.wait` waits for (SPEC §8): its own cell == / >= the expected value."""

    Eq = "Eq"
    Ge = "Ge"


class AtomicType(_DSLEnum):
    """How a remote store writes a peer's window (SPEC §8): plain store (`None_`) or atomic add."""

    None_ = "None"
    Add = "Add"


class ReduceOp(_DSLEnum):
    """The reduction of a collective (`pld.allreduce(..., op=...)`, SPEC §8)."""

    Sum = "Sum"
    Max = "Max"
    Min = "Min"
    Prod = "Prod"


_DSL_PREFIX = {'MemorySpace': 'pl.Mem', 'FunctionType': 'pl.FunctionType', 'Level': 'pl.Level', 'Role': 'pl.Role', 'ForKind': 'pl.ForKind', 'ParamDirection': 'pl.Direction', 'TensorLayout': 'pl.TensorLayout', 'PadValue': 'pl.PadValue', 'SplitMode': 'pl.SplitMode', 'ScopeKind': 'pl.ScopeKind', 'ScopeMode': 'pl.ScopeMode', 'NotifyOp': 'pld.NotifyOp', 'WaitCmp': 'pld.WaitCmp', 'AtomicType': 'pld.AtomicType', 'ReduceOp': 'pld.ReduceOp'}
