"""Code pinned to one core kind does only that core's work (SPEC §6 "Cluster"; Language Guide
"@pl.jit family", "pl.at").

`check_core_level` accepts only the core-level values of pl.Level for an InCore kernel. Three
constructs pin InCore code to the cube core (AIC) or a vector core (AIV) with
`level=pl.Level.AIC | AIV`: `@pl.jit.incore(level=...)`, `@pl.function(type=pl.FunctionType.InCore,
level=...)` and `with pl.at(level=...):`. All three get the same check: cube ops and
Mat/Left/Right/Acc/Bias tiles on the AIC, vector ops and Vec tiles on an AIV (scalar and tensor
bookkeeping runs on either). The side of each op comes from `ir.kernel_sides.sided_ops` (op
traits and tile memory spaces).
"""

from __future__ import annotations

from typing import Any

from ...core.enums import Level
from ...core.errors import InvalidOperationError, ParserTypeError
from ...core.span import Span
from ...ir.stmt import Stmt

__all__ = ["CORE_SIDE", "check_core_level", "check_core_side"]

CORE_SIDE = {Level.AIC: "C", Level.AIV: "V"}
_CORE_LEVEL_TEXT = ("pl.Level.CORE_GROUP (the default: the compiler runs cube ops on the cube core and "
                    "vector ops on the vector cores, splitting a kernel that uses both), pl.Level.AIC "
                    "(the cube core only) or pl.Level.AIV (a vector core only)")


def check_core_level(level: Any, decorator: str, span: Span | None) -> None:
    """An InCore kernel runs on the cores of one cluster (SPEC §6), so its `level=` is None or one
    of the three core-level values of pl.Level (SPEC §2.2: all level 0). Raises ParserTypeError at
    `span` otherwise; `decorator` is the declaration up to `level=`, e.g. "@pl.jit.incore(" or
    "@pl.function(type=pl.FunctionType.InCore, "."""
    if level is None or level in (Level.CORE_GROUP, Level.AIC, Level.AIV):
        return
    if not isinstance(level, Level):
        raise ParserTypeError(f"{decorator}level=...) expects a pl.Level, got {level!r}: use {_CORE_LEVEL_TEXT}",
                              span)
    raise ParserTypeError(
        f"{decorator}level={level!r}): an InCore kernel runs on the cores of one cluster, so its level is "
        f"{_CORE_LEVEL_TEXT}; {level!r} (level {level.level_number}) is above the cores — put work for "
        f"that level in the entry under 'with pl.at(level={level!r}):'", span)


def check_core_side(body: Stmt, level: Level, pinned_by: str) -> None:
    """Raise InvalidOperationError at the first op of `body` that needs the other core than
    `level` (AIC or AIV), or that moves data between the two. `pinned_by` completes "but ..."
    naming the construct that pinned the code, e.g. "kernel 'k' is @pl.jit.incore(level=pl.Level.AIC)"."""
    from ...ir.kernel_sides import C, V, X, sided_ops

    want = CORE_SIDE[level]
    other = {C: ("the cube core (AIC)", "pl.Level.AIC"), V: ("a vector core (AIV)", "pl.Level.AIV")}
    for side, what, span, _ in sided_ops(body):
        if side not in (C, V, X) or side == want:
            continue
        where = ("moves data between the cube core and a vector core" if side == X
                 else f"runs on {other[side][0]}")
        fix = ("level=pl.Level.CORE_GROUP (the default), which splits a kernel using both cores" if side == X
               else f"level={other[side][1]}, or level=pl.Level.CORE_GROUP (the default) to let the "
                    f"compiler place each op")
        raise InvalidOperationError(f"{what} {where}, but {pinned_by}, which runs only on "
                                    f"{other[want][0]}; use {fix}", span)
