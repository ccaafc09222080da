"""On-chip memory map of a compiled program (User Manual "On-chip memory map visualization", SPEC §11).

    python -m pypto.tools.memory_map <dump file | passes_dump dir | build dir> [-o out.html]
                                     [-p PASS] [-b BACKEND] [--png out.png]

reads the pass dump after AllocateMemoryAddr (or after `-p PASS`, which must come later: a dump
without addresses is refused with an explanation) and writes one self-contained HTML page
(default `memory_map.html`; no network access needed): a card per kernel; per memory space a lane
with the address left to right and the statements top to bottom; each tile value a box over
[address, address + size) × its live range (the compiler's own liveness rules, `passes.liveness`);
capacity and high-water mark per space (red from 95 %); two different buffers live at the same time
on the same bytes — a conflict — drawn red and listed at the top; hovering a box shows its name,
space, shape and dtype, producing op, address range, size and live range; the kernel's dump lines
beside the lanes. `--png` also draws the lanes with matplotlib. Capacities are the backend's
(`-b`, else the build's `compiled_meta.json`, else Ascend910B).

Exit status: 0 written, 2 refused (the message says why).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ...backend import BackendType, get_soc
from ...core.errors import PyPTOError
from .inputs import DEFAULT_PASS, DumpInput, read_dump
from .model import Conflict, KernelMap, Lane, MemoryMapError, Row, TileBox, kernel_maps
from .page import render_html

__all__ = ["MemoryMap", "memory_map", "MemoryMapError", "KernelMap", "Lane", "TileBox", "Conflict", "Row", "main"]


@dataclass(frozen=True)
class MemoryMap:
    """The memory map of one dump: `kernels` (a `KernelMap` each) and the `dump` they come from."""

    dump: DumpInput
    kernels: list[KernelMap]

    @property
    def conflicts(self) -> list[Conflict]:
        return [c for k in self.kernels for c in k.conflicts]

    @property
    def meta(self) -> str:
        after = f"after {self.dump.pass_name}" if self.dump.pass_name else "dump"
        return (f"{self.dump.path} ({after}); capacities of {self.dump.backend.name} "
                f"({self.dump.backend_source})")

    def html(self) -> str:
        """The self-contained page (see the module docstring)."""
        return render_html(self.kernels, self.dump.text, self.dump.program.name, self.meta)

    def write_png(self, path: str | Path) -> None:
        """The lanes as a PNG through matplotlib. Raises ImportError without matplotlib."""
        from .figure import render_png

        render_png(self.kernels, path, self.dump.program.name)


def memory_map(path: str | Path, pass_name: str | None = None, backend: BackendType | None = None) -> MemoryMap:
    """The memory map of a dump file, a `passes_dump/` folder or a build folder.

    Raises MemoryMapError (not a dump; no dump after `pass_name`; a dump before address
    allocation) or ParserError (a file that is not DSL).
    """
    d = read_dump(path, pass_name, backend)
    return MemoryMap(d, kernel_maps(d.program, get_soc(d.backend), d.text.splitlines()))


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m pypto.tools.memory_map", description=__doc__.splitlines()[0])
    ap.add_argument("input", help="a pass dump file, a passes_dump/ folder or a build folder")
    ap.add_argument("-o", "--output", default="memory_map.html", help="the HTML page to write (default: %(default)s)")
    ap.add_argument("-p", "--pass", dest="pass_name", metavar="PASS",
                    help=f"draw the dump after PASS (default: {DEFAULT_PASS}); folders only")
    ap.add_argument("-b", "--backend", choices=[b.name for b in BackendType],
                    help="whose memory capacities to draw (default: the build's, else Ascend910B)")
    ap.add_argument("--png", metavar="OUT.png", help="also draw the lanes to a PNG (needs matplotlib)")
    ns = ap.parse_args(argv)
    try:
        mm = memory_map(ns.input, ns.pass_name, BackendType[ns.backend] if ns.backend else None)
    except PyPTOError as e:
        text = str(e)
        print(text if " error: " in text else f"error: {text}", file=sys.stderr)
        return 2
    out = Path(ns.output)
    try:
        out.write_text(mm.html(), encoding="utf-8")
    except OSError as e:
        print(f"error: cannot write the page: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({len(mm.kernels)} kernel(s), {len(mm.conflicts)} conflict(s))")
    for c in mm.conflicts:
        print(f"conflict: {c.a.names[0]} and {c.b.names[0]} share {c.a.space.name} bytes [{c.lo}, {c.hi})")
    if ns.png:
        try:
            mm.write_png(ns.png)
        except ImportError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {ns.png}")
    return 0
