"""What the memory map reads: a pass dump file, a `passes_dump/` folder or a build folder (SPEC §11).

A folder is searched for `NN_after_<PASS>.py` (default PASS: AllocateMemoryAddr); a build folder's
`compiled_meta.json` names the backend whose capacities are drawn (else `-b`, else Ascend910B).
The dump is parsed back with `pl.parse` (pass dumps are re-parseable DSL, SPEC §4).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...backend import BackendType
from ...core.enums import FunctionType
from ...core.span import Span
from ...ir.function import Program
from .model import MemoryMapError, tile_vars, unplaced_tile

__all__ = ["DumpInput", "DEFAULT_PASS", "read_dump"]

DEFAULT_PASS = "AllocateMemoryAddr"
_DUMP = re.compile(r"^(\d\d)_after_(\w+)\.py$")


@dataclass(frozen=True)
class DumpInput:
    """A parsed, address-allocated dump: `program`, its `text`, the `path` it came from, the
    `pass_name` after which it was written (None: not a `NN_after_<PASS>.py` file) and the
    `backend` whose capacities apply (`backend_source`: where that choice came from)."""

    path: Path
    text: str
    program: Program
    pass_name: str | None
    backend: BackendType
    backend_source: str


def _dumps_of(folder: Path) -> dict[str, Path]:
    out = {}
    for p in sorted(folder.iterdir()):
        m = _DUMP.match(p.name)
        if m:
            out[m.group(2)] = p
    return out


def _pick_dump(path: Path, pass_name: str | None) -> tuple[Path, Path | None]:
    """(dump file, build folder or None) for a file, a passes_dump folder or a build folder."""
    if path.is_file():
        if pass_name is not None:
            raise MemoryMapError(f"-p {pass_name} selects a dump inside a folder; '{path}' is a file "
                                 f"(pass its folder, or leave out -p)")
        build = path.parent.parent if path.parent.name == "passes_dump" else None
        return path, build
    if not path.is_dir():
        raise MemoryMapError(f"no such file or folder: '{path}'")
    folder, build = (path / "passes_dump", path) if (path / "passes_dump").is_dir() else (path, path.parent)
    dumps = _dumps_of(folder)
    if not dumps:
        if (path / "compiled_meta.json").is_file():
            raise MemoryMapError(f"build folder '{path}' has no passes_dump/ (it was compiled with "
                                 f"dump_passes=False); compile again with dump_passes=True")
        if (path / "distributed_meta.json").is_file() and (path / "next_levels").is_dir():
            chips = sorted(p.name for p in (path / "next_levels").iterdir() if p.is_dir())
            raise MemoryMapError(f"'{path}' is a distributed build: its kernels are in the build of each "
                                 f"chip program, next_levels/<program>/ ({', '.join(chips)}); pass one of "
                                 f"those folders")
        raise MemoryMapError(f"'{path}' is neither a pass dump file, a passes_dump/ folder nor a build folder "
                             f"(no NN_after_<Pass>.py files in it)")
    want = pass_name or DEFAULT_PASS
    if want not in dumps:
        raise MemoryMapError(f"no dump after pass '{want}' in '{folder}'; it has dumps after: "
                             f"{', '.join(dumps)}")
    return dumps[want], build


def _backend(build: Path | None, given: BackendType | None) -> tuple[BackendType, str]:
    if given is not None:
        return given, "-b"
    meta = build / "compiled_meta.json" if build is not None else None
    if meta is not None and meta.is_file():
        name = json.loads(meta.read_text(encoding="utf-8")).get("backend")
        if name in BackendType.__members__:
            return BackendType[name], f"{meta}"
    return BackendType.Ascend910B, "default (no build folder: pass -b to choose)"


def read_dump(path: str | Path, pass_name: str | None = None, backend: BackendType | None = None) -> DumpInput:
    """Find, parse and check the dump that `path` names (module docstring).

    Raises:
        MemoryMapError: `path` is none of the accepted inputs, has no dump after `pass_name`, or the
            dump is from before AllocateMemoryAddr (a kernel tile without an address); the message
            says which tile and which dump to use instead, the span points at the tile's line.
        ParserError: the file is not valid DSL (not a pass dump).
    """
    from ... import language as pl

    dump, build = _pick_dump(Path(path), pass_name)
    text = dump.read_text(encoding="utf-8")
    program = pl.parse(text, filename=str(dump))
    if not isinstance(program, Program):
        raise MemoryMapError(f"'{dump}' holds a single function, not a program dump")
    m = _DUMP.match(dump.name)
    where = unplaced_tile(program)
    if where is not None:
        func, var = where
        memref = var.type.memref  # type: ignore[attr-defined]
        why = "has no MemRef (buffer)" if memref is None else "has a buffer but no address yet (addr=-1)"
        after = f" (after {m.group(2)})" if m else ""
        raise MemoryMapError(
            f"a dump from before address allocation{after}: tile '{var.name}' of kernel '{func.name}' {why}. "
            f"The memory map draws buffers at their addresses, which AllocateMemoryAddr assigns: use the "
            f"NN_after_{DEFAULT_PASS}.py dump or a later one (or pass the build folder or its passes_dump/ "
            f"folder, which picks it)",
            var.span if var.span.is_known() else Span(str(dump), 1, 1))
    if not any(tile_vars(f).vars for f in program.functions if f.func_type is not FunctionType.Orchestration):
        after = f" (after {m.group(2)})" if m else ""
        raise MemoryMapError(
            f"no kernel of this dump{after} has tiles, so there is no on-chip memory to draw: a tensor-level "
            f"program has tiles only from ConvertTensorToTileOps on, and addresses from {DEFAULT_PASS} on; "
            f"use the NN_after_{DEFAULT_PASS}.py dump", Span(str(dump), 1, 1))
    chosen, source = _backend(build, backend)
    return DumpInput(dump, text, program, m.group(2) if m else None, chosen, source)
