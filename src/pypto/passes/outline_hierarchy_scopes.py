"""OutlineHierarchyScopes: `pl.at(level=CHIP_DIE | CHIP | HOST)` scopes become functions of that
level (SPEC §2.2 "pl.Level", §5).

Runs before OutlineIncoreScopes, so the InCore scopes (level 0) inside an outlined body are
outlined afterwards from the new function. See `scope_outline` for the rules; a program without
such scopes is returned unchanged.
"""

from __future__ import annotations

from ..core.enums import Level
from ..ir.function import Program
from .base import Pass, PassContext
from .scope_outline import outline_level_scopes

__all__ = ["OutlineHierarchyScopes", "HIERARCHY_LEVELS"]

#  levels of one machine above the core group: a die, a chip, the host
HIERARCHY_LEVELS = frozenset({Level.CHIP_DIE, Level.CHIP, Level.HOST})


class OutlineHierarchyScopes(Pass):
    """Outline chip-die, chip and host level scopes into Orchestration functions of that level."""

    name = "OutlineHierarchyScopes"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return outline_level_scopes(program, HIERARCHY_LEVELS.__contains__)
