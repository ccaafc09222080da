"""Performance hints of a lowered program: `report/perf_hints.log` of a build (User Manual
"I have a kernel and it is slow": check report/perf_hints.log first).

Each hint has a code, the user's source location, the function and a message saying what to change:

| code  | what it finds |
|-------|---------------|
| PH001 | a DDR transfer whose innermost tile dimension is below the backend's recommended bytes
|       | (`SoCModel.recommended_inner_bytes`: 512 B on Ascend910B, 128 B on Ascend950); for a
|       | transfer the compiler made from tensor-level code (ConvertTensorToTileOps records their
|       | spans) it advises a wider tensor or slice instead of a wider tile |
| PH002 | an L0 tile (Left/Right/Acc) whose rows or columns are not a multiple of the 16-row fractal |
| PH003 | an Out parameter that no path writes (the caller's tensor keeps its old contents) |
| PH008 | a tensor-level region TileTensorBlocks could only tile into blocks whose rows are below the
|       | DDR access granule, or of fewer than 8 rows (found by the pass, `block_shape.poor_shape_hint`,
|       | and handed over in `PassContext.records["perf_hints"]`; not re-derived from a finished build) |
| PH009 | a `pl.pipeline(stage=N)` loop whose N buffer copies do not fit: fewer stages used; or whose
|       | body has no buffer of its own to copy (an Orchestration loop): a plain loop (found by the
|       | PipelineLoops pass while compiling; the command line below does not re-derive it) |

Command line: `python -m pypto.tools.perf_hints BUILD_DIR` prints the hints of a finished build.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Iterator
from typing import Any

from ..backend import BackendType, SoCModel, get_soc
from ..core.diagnostics import CATALOGUE, Diagnostic, DiagnosticOptions, render_diagnostics
from ..core.enums import MemorySpace
from ..core.span import Span
from ..ir.expr import Call, ConstInt, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt
from ..ir.types import TensorType, TileType
from ..ir.visitor import IRVisitor
from ..ops import get_op

__all__ = ["PerfHint", "perf_hints", "render_perf_hints", "HINT_CODES", "main", "transfers_to_json",
           "transfers_from_json"]

_L0 = {MemorySpace.Left: "Left (L0A)", MemorySpace.Right: "Right (L0B)", MemorySpace.Acc: "Acc (L0C)"}


PerfHint = Diagnostic   # one hint: `code` (PH001...), `function` name, `message`, the user's `span`


class _Calls(IRVisitor):
    """Every op call of a function with its span, and every tile Var bound by an assignment;
    `generated`: the spans of the DDR transfers the compiler made from tensor-level code."""

    def __init__(self, generated: Collection[Span] = ()) -> None:
        self.calls: list[Call] = []
        self.tiles: list[Var] = []
        self.generated = generated

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, str):
            self.calls.append(e)
        super().visit_Call(e)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if isinstance(s.var.type, TileType) and s.var not in self.tiles:
            self.tiles.append(s.var)
        super().visit_AssignStmt(s)


def _static(t: TileType) -> list[int] | None:
    return [d.value for d in t.shape] if all(isinstance(d, ConstInt) for d in t.shape) else None


def _narrow_ddr_rows(func: Function, c: _Calls, soc: SoCModel) -> Iterator[PerfHint]:
    for call in c.calls:
        spec = get_op(call.op)  # type: ignore[arg-type]
        if not any(isinstance(a.type, TensorType) for a in call.args):
            continue
        tile = call.type if isinstance(call.type, TileType) else next(
            (a.type for a in call.args if isinstance(a.type, TileType)), None)
        shape = _static(tile) if tile is not None else None
        if not shape:
            continue
        nbytes = tile.dtype.storage_bytes(shape[-1])  # type: ignore[union-attr]
        rec = soc.recommended_inner_bytes
        if nbytes < rec:
            per = max(1, rec * 8 // tile.dtype.storage_bits)  # type: ignore[union-attr]
            fix = _tensor_level_fix(call, shape[-1], per) if call.span in c.generated else \
                f"make the innermost tile dimension at least {per} elements"
            yield PerfHint("PH001", func.name,
                           f"'{spec.name}' moves tile rows of {nbytes} B ({shape[-1]} x "
                           f"{tile.dtype.name}), below the {rec} B innermost size {soc.backend.name} "  # type: ignore[union-attr]
                           f"recommends (DDR is accessed in {soc.ddr_access_granularity} B units); {fix}",
                           call.span)


def _tensor_level_fix(call: Call, cols: int, per: int) -> str:
    """PH001's advice for a transfer made from tensor-level code, whose tile the user did not
    shape: its rows are whole rows of the tensor, or of a slice (the user's, or a block
    TileTensorBlocks chose, which PH008 reports)."""
    tensor = next(a.type for a in call.args if isinstance(a.type, TensorType))
    inner = tensor.shape[-1] if tensor.shape else None
    if isinstance(inner, ConstInt) and inner.value == cols:
        return (f"the compiler made this transfer from tensor-level code, with whole rows of the tensor: "
                f"give the tensor an innermost dimension of at least {per} elements (a layout with a longer "
                f"last dimension, e.g. the transposed tensor)")
    return (f"the compiler made this transfer from tensor-level code, with rows of a slice of the tensor: "
            f"slice at least {per} elements along its innermost dimension (when the compiler chose the slice, "
            f"a block of the region, PH008 says what to change)")


def _unaligned_l0(func: Function, c: _Calls, soc: SoCModel) -> Iterator[PerfHint]:
    f = soc.l0_fractal_rows
    for v in c.tiles:
        t = v.type
        space = t.memref.memory_space if t.memref is not None else t.memory_space  # type: ignore[union-attr]
        shape = _static(t)  # type: ignore[arg-type]
        if space not in _L0 or not shape or len(shape) < 2:
            continue
        rows, cols = shape[-2], shape[-1]
        if rows % f or cols % f:
            pad = [-(-rows // f) * f, -(-cols // f) * f]
            yield PerfHint("PH002", func.name,
                           f"tile '{v.name}' in {_L0[space]} is {rows} x {cols}, not aligned to the "  # type: ignore[index]
                           f"{f}-row fractal; the cube unit works on whole {f} x {f} boxes, so pad it "
                           f"to {pad[0]} x {pad[1]}", v.span)


def _unwritten_outputs(program: Program) -> Iterator[PerfHint]:
    from ..passes.analysis import unwritten_outputs

    for func, p in unwritten_outputs(program):
        yield PerfHint("PH003", func.name,  # type: ignore[attr-defined]
                       f"Out parameter '{p.name}' is never written: the caller's tensor keeps its old "
                       f"contents; write it with {p.name}[...] = value, pl.assemble or pl.store", p.span)


_PER_FUNCTION: list[tuple[str, Callable[[Function, _Calls, SoCModel], Iterator[PerfHint]]]] = [
    ("PH001", _narrow_ddr_rows),
    ("PH002", _unaligned_l0),
]
HINT_CODES = {c: CATALOGUE[c].summary for c in ("PH001", "PH002", "PH003", "PH008", "PH009")}


def perf_hints(program: Program, backend: BackendType, generated: Collection[Span] = ()) -> list[PerfHint]:
    """Every hint for the lowered `program` on `backend`, kernels in program order. `generated`:
    the spans of the DDR transfers the compiler made from tensor-level code
    (`ctx.records["tensor_transfers"]` of the compile, kept in `compiled_meta.json`), which PH001
    words for a tensor-level author."""
    from ..codegen.common import is_kernel

    soc = get_soc(backend)
    out: list[PerfHint] = []
    for f in program.functions:
        if not is_kernel(f):
            continue
        c = _Calls(generated)
        c.visit_function(f)
        for _, rule in _PER_FUNCTION:
            out.extend(rule(f, c, soc))
    out.extend(_unwritten_outputs(program))
    return out


def transfers_to_json(spans: Collection[Span]) -> list[list[Any]]:
    """The spans of the transfers made from tensor-level code (`perf_hints`'s `generated`) as
    `compiled_meta.json` keeps them: [file, begin line, begin column, end line, end column], sorted."""
    return sorted([sp.filename, sp.begin_line, sp.begin_col, sp.end_line, sp.end_col] for sp in spans)


def transfers_from_json(rows: list[list[Any]] | None) -> set[Span]:
    """The spans `transfers_to_json` wrote (None, a build from before they were kept: none)."""
    return {Span(*row) for row in rows or ()}


def render_perf_hints(hints: list[PerfHint], program: Program, backend: BackendType,
                      options: DiagnosticOptions | None = None) -> str:
    """The text of `report/perf_hints.log` (`options`: the build's diagnostic options)."""
    return render_diagnostics(f"Performance hints for program '{program.name}' on {backend.name}", hints,
                              options or DiagnosticOptions(), "compile", HINT_CODES, "no performance hints")


def main(argv: list[str] | None = None) -> int:
    """`python -m pypto.tools.perf_hints BUILD_DIR`: print the hints of a finished build (with the
    diagnostic options it was compiled with). For a distributed build (SPEC §8) the hints of each
    chip program under `next_levels/`, each headed by its name."""
    from ..runtime.compiled import CompiledProgram

    ap = argparse.ArgumentParser(prog="python -m pypto.tools.perf_hints", description=__doc__.splitlines()[0])
    ap.add_argument("build_dir", help="a folder written by ir.compile")
    ns = ap.parse_args(argv)
    try:
        cp = CompiledProgram.from_dir(ns.build_dir)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if isinstance(cp, CompiledProgram):
        _print_hints(cp)
        return 0
    for name, chip in cp.chip_programs.items():   # a DistributedCompiledProgram
        sys.stdout.write(f"== chip program '{name}' (next_levels/{name}) ==\n")
        _print_hints(chip)
    return 0


def _print_hints(cp: Any) -> None:
    """Write the hints of the single-chip build `cp` (a CompiledProgram) to stdout."""
    opts = cp.diagnostics   # the build's diagnostic_phase / disabled_diagnostics
    generated = transfers_from_json((cp.meta or {}).get("tensor_transfers"))
    hints = opts.keep(perf_hints(cp.program, cp.backend_type, generated)) if opts.runs("compile") else []
    sys.stdout.write(render_perf_hints(hints, cp.program, cp.backend_type, opts))


if __name__ == "__main__":
    sys.exit(main())
