"""Running hand-written kernels on the simulator, and their simulated time (SPEC §10).

`ExternalExecutor(func)` stands in for a `KernelExecutor` when `func.external` is set: the
simulator's DDR is host memory, so a task calls the kernel's shared library (`build.py`, `abi.py`)
directly on the task's torch tensors. A kernel declared with `core_num=N` is submitted as N tasks
(`instance(b)`), block b of N each; otherwise the block identity is the one of the enclosing launch
(`pypto.ops.block.current_block`).

Simulated time of one task = `task_launch` + the kernel's cycles, which are
- the declared `cost=`: an int, a formula over the parameter names (tensors are the task's torch
  tensors: `x.shape[0]`, `x.numel()`, `x.nbytes`; scalars their values; `block_num`; min, max, abs,
  int, len, round), or a callable called with the task's arguments;
- by default a memory-bound estimate: every In / InOut tensor read and every Out / InOut tensor
  written once, this block's share of it (1 / block_num), at the MTE2 / MTE3 bandwidth of the cost
  model plus one `mte_issue` per direction — the time of a kernel that streams its data once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from ...core.enums import FunctionType, MemorySpace, ParamDirection
from ...core.errors import RuntimeSimError
from ...ir.function import Function
from ...ir.types import TensorType
from ...ops.block import current_block
from ..sim.cost_model import TaskCost, const
from .abi import KernelLibrary, load_library
from .build import build_library

__all__ = ["ExternalExecutor", "BlockInstance", "kernel_cycles"]

_READS = (ParamDirection.In, ParamDirection.InOut)
_WRITES = (ParamDirection.Out, ParamDirection.InOut)
_warned_callables: set[str] = set()


class _WholeArguments:
    """The `AccessSummary` of an external kernel: its accesses are not visible, so a task's DDR
    region is every tensor argument as a whole."""

    narrowed: frozenset[int] = frozenset()

    @staticmethod
    def region_arg(i: int, args: Sequence[Any]) -> Any:
        return args[i]


def kernel_cycles(func: Function, args: Sequence[Any], block_num: int = 1) -> tuple[int, bool]:
    """(cycles of one task of external kernel `func` on `args`, whether they were declared).

    Raises:
        RuntimeSimError: the declared cost fails or is not a number >= 0.
    """
    from ...language.parser.external import CALLABLE_PREFIX, COST_NAMES, cost_callable

    ext = func.external
    assert ext is not None
    cost = ext.cost
    if isinstance(cost, str) and cost.startswith(CALLABLE_PREFIX):
        fn = cost_callable(cost)
        if fn is None:
            if cost not in _warned_callables:
                _warned_callables.add(cost)
                warnings.warn(f"external kernel '{func.name}': its cost callable ({cost}) was defined in "
                              f"another process; using the default cost estimate", RuntimeWarning, stacklevel=2)
            cost = None
        else:
            cost = fn
    if cost is None:
        return _default_cycles(func, args, block_num), False
    if isinstance(cost, int):
        return cost, True
    try:
        if callable(cost):
            value = cost(*args)
        else:
            names = {p.name: a for p, a in zip(func.params, args)}
            value = eval(cost, {"__builtins__": {}}, {**COST_NAMES, "block_num": block_num, **names})  # noqa: S307
    except Exception as e:
        raise RuntimeSimError(f"cost of external kernel '{func.name}' failed: {type(e).__name__}: {e}",
                              func.span) from None
    if isinstance(value, torch.Tensor):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
        raise RuntimeSimError(f"cost of external kernel '{func.name}' gave {value!r}; it must be a number of "
                              f"cycles >= 0", func.span)
    return int(math.ceil(value)), True


def _default_cycles(func: Function, args: Sequence[Any], block_num: int) -> int:
    rd, wr = _bytes(func, args, block_num)
    cycles = 0
    if rd:
        cycles += int(const("mte_issue")) + math.ceil(rd / const("mte2_bytes_per_cycle"))
    if wr:
        cycles += int(const("mte_issue")) + math.ceil(wr / const("mte3_bytes_per_cycle"))
    return cycles


def _bytes(func: Function, args: Sequence[Any], block_num: int) -> tuple[int, int]:
    rd = wr = 0
    for a, d in zip(args, func.param_directions):
        if isinstance(a, torch.Tensor):
            n = math.ceil(a.numel() * a.element_size() / block_num)
            rd += n if d in _READS else 0
            wr += n if d in _WRITES else 0
    return rd, wr


class ExternalExecutor:
    """Executor of an external kernel (see the module docstring). Attributes as `KernelExecutor`:
    `func`, `name`, `core_type` ("AIV" / "AIC"), `access`; `core_num` blocks per call.

    Raises (run): RuntimeSimError for wrong arguments, a library that cannot be built or loaded, an
    error the kernel's helpers recorded, or a failing cost.
    """

    def __init__(self, func: Function) -> None:
        assert func.external is not None
        self.func, self.name = func, func.name
        self.core_type = "AIC" if func.func_type is FunctionType.AIC else "AIV"
        self.core_num = func.external.core_num
        self.access = _WholeArguments()
        self._lib: KernelLibrary | None = None
        self._instances: dict[int, BlockInstance] = {}

    def __repr__(self) -> str:
        return f"ExternalExecutor({self.name}, {self.core_type})"

    def refresh(self) -> None:
        """Look at the source again before the next task (an edited kernel is rebuilt)."""
        self._lib = None

    def library(self) -> KernelLibrary:
        if self._lib is None:
            path = build_library(self.func)
            try:
                self._lib = load_library(path)
            except (OSError, ValueError) as e:
                raise RuntimeSimError(f"external kernel '{self.name}': cannot load {path}: {e}",
                                      self.func.span) from None
        return self._lib

    def instance(self, block: int) -> BlockInstance:
        """The executor of block `block` of a `core_num`-block launch."""
        b = self._instances.get(block)
        if b is None:
            b = self._instances[block] = BlockInstance(self, block)
        return b

    def cycles_so_far(self) -> int:
        return int(const("task_launch"))

    def _check(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.func.params):
            raise RuntimeSimError(f"external kernel '{self.name}' takes {len(self.func.params)} arguments, "
                                  f"got {len(args)}", self.func.span)
        for p, a in zip(self.func.params, args):
            t = p.type
            if not isinstance(t, TensorType):
                continue
            want = t.dtype.to_torch(strict=False)
            static = [getattr(d, "value", None) for d in t.shape]
            if not isinstance(a, torch.Tensor) or a.dtype != want or a.dim() != len(static) or any(
                    s is not None and s != n for s, n in zip(static, a.shape)):
                got = f"{a.dtype} {list(a.shape)}" if isinstance(a, torch.Tensor) else type(a).__name__
                raise RuntimeSimError(f"external kernel '{self.name}': argument '{p.name}' is {got}, expected "
                                      f"{want} {static}", self.func.span)

    def run(self, args: Sequence[Any], arena: Any = None, block: tuple[int, int] | None = None) -> TaskCost:
        """Call the kernel once on `args` as block `block` = (index, count) (default: the current
        launch's block); returns the task's cost."""
        self._check(args)
        ctx = current_block()
        idx, num = block if block is not None else (ctx.block_idx, ctx.block_num)
        lib = self.library()
        err = lib.call(args, (idx, num, ctx.subblock_idx, ctx.subblock_num))
        if err is not None:
            raise RuntimeSimError(f"external kernel '{self.name}' ({self.func.external.source}, block {idx} of "
                                  f"{num}): {err}", self.func.span)
        return self.cost(args, num)

    def cost(self, args: Sequence[Any], block_num: int = 1) -> TaskCost:
        """The `TaskCost` of one task on `args` (see the module docstring)."""
        cycles, declared = kernel_cycles(self.func, args, block_num)
        launch = int(const("task_launch"))
        if declared:
            return TaskCost(launch + cycles, {"cube" if self.core_type == "AIC" else "vector": cycles}, {})
        rd, wr = _bytes(self.func, args, block_num)
        local = MemorySpace.Mat if self.core_type == "AIC" else MemorySpace.Vec
        out = MemorySpace.Acc if self.core_type == "AIC" else MemorySpace.Vec
        pipes, paths = {}, {}
        if rd:
            pipes["mte2"] = int(const("mte_issue")) + math.ceil(rd / const("mte2_bytes_per_cycle"))
            paths[(MemorySpace.DDR, local)] = rd
        if wr:
            pipes["mte3"] = int(const("mte_issue")) + math.ceil(wr / const("mte3_bytes_per_cycle"))
            paths[(out, MemorySpace.DDR)] = wr
        return TaskCost(launch + cycles, pipes, paths)


class BlockInstance:
    """Block `block` of an `ExternalExecutor`'s `core_num`-block launch (one task each)."""

    def __init__(self, ex: ExternalExecutor, block: int) -> None:
        self.ex, self.block = ex, block
        self.func, self.name, self.core_type, self.access = ex.func, ex.name, ex.core_type, ex.access

    def __repr__(self) -> str:
        return f"ExternalExecutor({self.name}, {self.core_type}, block {self.block} of {self.ex.core_num})"

    def cycles_so_far(self) -> int:
        return self.ex.cycles_so_far()

    def run(self, args: Sequence[Any], arena: Any = None) -> TaskCost:
        return self.ex.run(args, arena, (self.block, self.ex.core_num))
