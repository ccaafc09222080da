"""What `torch_codegen` needs to know about a program's mixed kernels before it writes any function
(see `torch_cluster` for the script side):

- `generators`: the functions the script writes as Python generators: those containing an op whose
  template may wait (`torch_ops.waits`: a pipe push or pop), and every function other than a Group
  function that calls one (it resumes the callee with `yield from`). A Group function is the driver
  of its kernels, never a generator.
- `cores`: "AIC" or "AIV" for every kernel: by function type, and for an InCore kernel "AIC" when
  any of its tiles lives in a cube memory (Mat / Left / Right / Acc / Bias), like the simulator, or
  it calls an op with the "cube" trait (tensor-level stages have no tiles yet).
- `groups`: per Group function, its split mode (name) and ring depth per live pipe direction, from
  `codegen.cluster_config` — the configuration the simulator and the orchestration codegen use.
  That function also checks each pushed tile's route on a chip; the script models no route, so it
  asks with the Ascend950 model, whose on-chip moves include Ascend910B's (a program valid for
  either backend passes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import BackendType, get_soc
from ..codegen.cluster_config import cluster_config
from ..codegen.common import CUBE_SPACES
from ..core.enums import KERNEL_TYPES, FunctionType
from ..ir.expr import Call, GlobalVar, Var
from ..ir.function import Function, Program
from ..ir.types import TileType
from ..ir.visitor import IRVisitor
from ..ops.registry import get_op, has_op
from .torch_ops import waits

__all__ = ["ScriptPlan", "plan_script", "KERNEL_TYPES"]



@dataclass(frozen=True)
class ScriptPlan:
    """See the module docstring: `groups` maps a Group function's name to (split name, {direction: slots})."""

    generators: frozenset[str]
    cores: dict[str, str]
    groups: dict[str, tuple[str, dict[str, int]]]


class _Scan(IRVisitor):
    """Callees, waiting ops and cube tiles of one function."""

    def __init__(self) -> None:
        self.callees: set[str] = set()
        self.waits = False
        self.cube = False

    def visit_Call(self, e: Call) -> None:
        super().visit_Call(e)
        if isinstance(e.op, GlobalVar):
            self.callees.add(e.op.name)
            return
        if waits(e.op):
            self.waits = True
        if has_op(e.op) and get_op(e.op).has_trait("cube"):
            self.cube = True

    def visit_Var(self, e: Var) -> None:
        super().visit_Var(e)
        t = e.type
        if isinstance(t, TileType) and t.memory_space in CUBE_SPACES:
            self.cube = True


def _core(f: Function, scan: _Scan) -> str:
    if f.func_type is FunctionType.AIC:
        return "AIC"
    if f.func_type is FunctionType.AIV:
        return "AIV"
    return "AIC" if scan.cube else "AIV"


def plan_script(program: Program) -> ScriptPlan:
    """The ScriptPlan of `program`.

    Raises:
        CompileError: a Group function whose kernels split their pipes in different ways, or push a
            tile that no path carries (as `codegen.cluster_config` says).
    """
    scans: dict[str, _Scan] = {}
    for f in program.functions:
        scans[f.name] = s = _Scan()
        s.visit_function(f)
    types = {f.name: f.func_type for f in program.functions}
    gens = {name for name, s in scans.items() if s.waits}
    changed = True
    while changed:   # callers of generators (other than Group functions) are generators
        changed = False
        for name, s in scans.items():
            if name not in gens and types[name] is not FunctionType.Group and s.callees & gens:
                gens.add(name)
                changed = True
    cores = {f.name: _core(f, scans[f.name]) for f in program.functions if f.func_type in KERNEL_TYPES}
    soc = get_soc(BackendType.Ascend950)
    groups = {}
    for f in program.functions:
        if f.func_type is FunctionType.Group:
            cfg = cluster_config(f, program, soc)
            groups[f.name] = (cfg.split.name, dict(cfg.depth))
    return ScriptPlan(frozenset(gens), cores, groups)
