"""OutlineClusterScopes: `pl.at(level=CLUSTER_0 | CLUSTER_1 | CLUSTER_2 | GLOBAL)` scopes — levels
that span several machines — become functions of that level (SPEC §2.2 "pl.Level", §5).

Runs after OutlineIncoreScopes, so the body it outlines already calls its InCore kernels (and any
host/chip functions OutlineHierarchyScopes made). See `scope_outline` for the rules; a program
without such scopes is returned unchanged.
"""

from __future__ import annotations

from ..core.enums import Level
from ..ir.function import Program
from .base import Pass, PassContext
from .scope_outline import outline_level_scopes

__all__ = ["OutlineClusterScopes", "CLUSTER_LEVELS"]

#  levels above one host: clusters of machines and the whole system
CLUSTER_LEVELS = frozenset({Level.CLUSTER_0, Level.CLUSTER_1, Level.CLUSTER_2, Level.GLOBAL})


class OutlineClusterScopes(Pass):
    """Outline cluster and global level scopes into Orchestration functions of that level."""

    name = "OutlineClusterScopes"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return outline_level_scopes(program, CLUSTER_LEVELS.__contains__)
