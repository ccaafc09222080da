"""The memory map as a PNG for reports, drawn with matplotlib (SPEC §11, `--png`).

One panel per kernel and memory space, laid out like the HTML lanes: address on x, statement rows
on y (top to bottom), a box per tile value in the page's colours, conflicts filled red, the panel
title giving the high-water mark against the capacity (red from 95 %).
"""

from __future__ import annotations

from pathlib import Path

from .model import KernelMap
from .page import CONFLICT_COLOR, PALETTE, axis_extent

__all__ = ["render_png"]


def render_png(kernels: list[KernelMap], path: str | Path, title: str) -> None:
    """Write the figure of `kernels` to `path` (PNG).

    Raises:
        ImportError: matplotlib is not installed (it is in the `dev` extra), with what to install.
    """
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("--png needs matplotlib: pip install matplotlib (it is in pypto-sim's dev extra)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    panels = [(km, lane) for km in kernels for lane in km.lanes]
    cols = min(3, max(1, len(panels)))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 0.5 + 3.2 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (km, lane) in zip(axes.flat, panels):
        extent = axis_extent(lane.high_water)
        for b in lane.boxes:
            ax.add_patch(Rectangle((b.addr, b.first_row - 0.4), b.size, b.last_row - b.first_row + 0.8,
                                   facecolor=PALETTE[b.buffer % len(PALETTE)], edgecolor="#333333", linewidth=0.6))
            if b.size / extent > 0.15:
                ax.text(b.addr + extent * 0.01, b.first_row, b.names[0], color="white", fontsize=6, va="center")
        for c in lane.conflicts:
            ax.add_patch(Rectangle((c.lo, c.first_row - 0.4), c.hi - c.lo, c.last_row - c.first_row + 0.8,
                                   facecolor=CONFLICT_COLOR, edgecolor="#700000", linewidth=0.8))
        if lane.capacity is not None and lane.capacity <= extent:
            ax.axvline(lane.capacity, color=CONFLICT_COLOR, linestyle="--", linewidth=1)
        ax.set_xlim(0, extent)
        ax.set_ylim(len(km.rows) - 0.5, -0.5)
        ax.set_yticks(range(len(km.rows)), [str(r.line or "") for r in km.rows], fontsize=6)
        ax.set_ylabel("dump line", fontsize=7)
        ax.set_xlabel("address (bytes)", fontsize=7)
        ax.tick_params(axis="x", labelsize=6)
        use = (f"{lane.high_water} B of {lane.capacity} B ({100 * lane.high_water / lane.capacity:.1f} %)"
               if lane.capacity else f"{lane.high_water} B")
        n = len(lane.conflicts)
        ax.set_title(f"{km.name} · {lane.space.name}: {use}" + (f" · {n} conflict(s)" if n else ""), fontsize=8,
                     color=CONFLICT_COLOR if lane.full or n else "black")
    fig.suptitle(f"Memory map: {title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(path), dpi=120)
    plt.close(fig)
