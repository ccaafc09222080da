"""Runtime rings: sizes (RunConfig / environment / defaults) and their occupancy during a run (SPEC §12).

The runtime keeps three bounded resources per scope depth (4 rings: depth 0 is the entry's scope,
deeper `pl.scope()` blocks and nested orchestration calls use the next ring, depth 3 and deeper
share the last one):

| ring          | counts                                                  | freed when                    |
|---------------|---------------------------------------------------------|-------------------------------|
| `task_window` | tasks submitted on the ring and not yet retired         | the task retires              |
| `heap`        | bytes of tensors orchestration created (`tensor.create`) | its scope has ended and every task submitted before that end has finished |
| `dep_pool`    | dependency entries (one per producer a task waits for)  | the task retires              |

Tasks retire in submission order within a ring (the ring's oldest slot frees first), so a task
retires when it and every earlier task of its ring have finished. When a ring cannot take what a
submission or a creation needs, the orchestrator stalls until enough retires (`SimDevice`); a need
larger than the whole ring is an error naming the RunConfig field.

Sizes: `ring_sizes(task_window, heap, dep_pool)`: a RunConfig value wins, else the environment
variable (`PTO2_RING_TASK_WINDOW`, `PTO2_RING_HEAP`, `PTO2_RING_DEP_POOL`: an int, or 4 ints
separated by commas), else the default (16384 slots, 256 MiB, 16384 entries).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RING_DEPTHS", "RING_FIELDS", "RingFigures", "RingSizes", "check_ring", "ring_sizes", "RingTracker",
           "ring_of", "ring_state"]

RING_DEPTHS = 4

#  kind          RunConfig field       environment variable      default     power of 2  minimum  what it holds
RING_FIELDS: dict[str, tuple[str, str, int, bool, int, str]] = {
    "task_window": ("ring_task_window", "PTO2_RING_TASK_WINDOW", 16384, True, 4, "in-flight task slots"),
    "heap": ("ring_heap", "PTO2_RING_HEAP", 256 << 20, True, 1024, "bytes of tensors in flight"),
    "dep_pool": ("ring_dep_pool", "PTO2_RING_DEP_POOL", 16384, False, 4, "dependency entries in flight"),
}
_BY_FIELD = {f[0]: kind for kind, f in RING_FIELDS.items()}


def ring_of(depth: int) -> int:
    """The ring a scope at `depth` (0 = the entry's scope) uses."""
    return min(max(depth, 0), RING_DEPTHS - 1)


def _ok(kind: str, v: Any) -> bool:
    _, _, _, pow2, lo, _ = RING_FIELDS[kind]
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (not pow2 or v & (v - 1) == 0)


def check_ring(field: str, value: Any, what: str) -> int | list[int] | None:
    """`value` of RunConfig field `field` ("ring_task_window", "ring_heap", "ring_dep_pool"):
    None, an int, or a list of `RING_DEPTHS` ints (returned as a list).

    Raises:
        ValueError: naming `what` (the field or the environment variable) and the allowed values.
    """
    if value is None:
        return None
    kind = _BY_FIELD[field]
    if isinstance(value, (list, tuple)) and len(value) == RING_DEPTHS and all(_ok(kind, v) for v in value):
        return list(value)
    if _ok(kind, value):
        return int(value)
    _, _, _, pow2, lo, holds = RING_FIELDS[kind]
    rule = f"{'a power of 2' if pow2 else 'an int'} >= {lo}"
    raise ValueError(f"{what} must be {rule} ({holds}) or a list of {RING_DEPTHS} such values (one per "
                     f"scope depth), got {value!r}")


@dataclass(frozen=True)
class RingSizes:
    """Capacity of each ring per scope depth (4 values each)."""

    task_window: tuple[int, ...]
    heap: tuple[int, ...]
    dep_pool: tuple[int, ...]

    def capacity(self, kind: str, ring: int) -> int:
        return getattr(self, kind)[ring]

    def as_dict(self) -> dict[str, list[int]]:
        return {k: list(getattr(self, k)) for k in RING_FIELDS}


def _from_env(kind: str) -> int | list[int] | None:
    field, env, *_ = RING_FIELDS[kind]
    text = os.environ.get(env, "").strip()
    if not text:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        nums = [int(p, 0) for p in parts]
    except ValueError:
        nums = None
    value: Any = text if nums is None else nums[0] if len(nums) == 1 else nums
    return check_ring(field, value, f"environment variable {env}")


def ring_sizes(task_window: Any = None, heap: Any = None, dep_pool: Any = None) -> RingSizes:
    """The ring sizes of a run: each given value (already checked by RunConfig), else its
    environment variable, else the default; a scalar applies to every depth.

    Raises:
        ValueError: a bad environment value (the message names the variable).
    """
    out = {}
    for kind, given in (("task_window", task_window), ("heap", heap), ("dep_pool", dep_pool)):
        v = given if given is not None else _from_env(kind)
        if v is None:
            v = RING_FIELDS[kind][2]
        out[kind] = tuple(v) if isinstance(v, (list, tuple)) else (int(v),) * RING_DEPTHS
    return RingSizes(**out)


RingFigures = tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int]
"""The rings at one moment (`RingTracker.figures`), compact (a replay plan keeps one per task): the
occupancy of each kind (`RING_FIELDS` order) on each ring (`RING_DEPTHS` values per kind); per open
scope its id followed by its peaks (`RING_FIELDS` order); the tasks retired so far."""


def ring_state(used: Sequence[int], sizes: RingSizes, ring: int,
               peaks: Sequence[int] | None = None) -> dict[str, dict[str, int]]:
    """{kind: {"used", "capacity"}} of `ring`, given the occupancy of each kind on it (`used`,
    `RING_FIELDS` order), plus "peak" from `peaks` (same order) when given: the ring figures of a
    `scope_stats.jsonl` record."""
    out = {}
    for i, k in enumerate(RING_FIELDS):
        v = {"used": used[i], "capacity": sizes.capacity(k, ring)}
        if peaks is not None:
            v["peak"] = peaks[i]
        out[k] = v
    return out


class RingTracker:
    """Occupancy of the rings during one run (module docstring).

    Attributes:
        sizes: the capacities. used / peak: {kind: [value per ring]} now and at most so far.
        retired: tasks retired so far.
    """

    def __init__(self, sizes: RingSizes) -> None:
        self.sizes = sizes
        self.used = {k: [0] * RING_DEPTHS for k in RING_FIELDS}
        self.peak = {k: [0] * RING_DEPTHS for k in RING_FIELDS}
        self._order: list[deque[Any]] = [deque() for _ in range(RING_DEPTHS)]
        self._task_ring: dict[int, tuple[int, int]] = {}     # task id -> (ring, dep entries), until it retires
        self._finished: set[int] = set()
        self._prefix = 0                                      # every task below it has finished
        self._releases: list[tuple[int, int, int]] = []       # (last task id, ring, bytes) after a scope end
        self._marks: dict[int, tuple[int, dict[str, int]]] = {}  # open scope id -> (ring, peaks)
        self.retired = 0
        self._figures: RingFigures | None = None             # `figures()` until the rings change
        self._peak_figures: tuple[tuple[int, ...], ...] | None = None   # its peaks, until they change

    def fits(self, kind: str, ring: int, need: int) -> bool:
        return self.used[kind][ring] + need <= self.sizes.capacity(kind, ring)

    def freeable(self, kind: str, ring: int) -> int:
        """How much of `kind` on `ring` will be freed by tasks already submitted."""
        if kind == "task_window":
            return len(self._order[ring])
        if kind == "dep_pool":
            return sum(self._task_ring[t.task_id][1] for t in self._order[ring])
        return sum(b for _, r, b in self._releases if r == ring)

    def _add(self, kind: str, ring: int, n: int) -> None:
        self._figures = None
        used = self.used[kind]
        used[ring] += n
        if used[ring] > self.peak[kind][ring]:
            self.peak[kind][ring] = used[ring]
        for r, peaks in self._marks.values():
            if r == ring and used[ring] > peaks[kind]:
                peaks[kind] = used[ring]
                self._peak_figures = None

    def alloc_task(self, task: Any, ring: int, entries: int) -> None:
        """Task `task` takes a slot and `entries` dependency entries of `ring`."""
        self._task_ring[task.task_id] = (ring, entries)
        self._order[ring].append(task)
        self._add("task_window", ring, 1)
        self._add("dep_pool", ring, entries)

    def alloc_heap(self, ring: int, nbytes: int) -> None:
        self._add("heap", ring, nbytes)

    def finished(self, task: Any, now: int) -> None:
        """Task `task` finished at cycle `now`: retire what can retire in order, free heap."""
        self._finished.add(task.task_id)
        self._figures = None
        while self._prefix in self._finished:
            self._prefix += 1
        ring = self._task_ring[task.task_id][0]
        order = self._order[ring]
        while order and order[0].task_id in self._finished:
            t = order.popleft()
            t.retire_cycle = now
            self.retired += 1
            self.used["task_window"][ring] -= 1
            self.used["dep_pool"][ring] -= self._task_ring.pop(t.task_id)[1]   # (a retired task is done with)
        if self._releases:
            self._release()

    def _release(self) -> None:
        self._figures = None
        keep = []
        for last, ring, nbytes in self._releases:
            if last < self._prefix:
                self.used["heap"][ring] -= nbytes
            else:
                keep.append((last, ring, nbytes))
        self._releases = keep

    def scope_end(self, ring: int, nbytes: int, last_task: int) -> None:
        """A scope on `ring` that created `nbytes` of tensors ended after task `last_task` (-1: none)
        was submitted: the bytes are freed once every task up to `last_task` has finished."""
        if nbytes:
            self._releases.append((last_task, ring, nbytes))
            self._release()

    def open_mark(self, scope_id: int, ring: int) -> None:
        """Start tracking the peak occupancy of `ring` while scope `scope_id` is open."""
        self._figures = self._peak_figures = None
        self._marks[scope_id] = (ring, {k: self.used[k][ring] for k in RING_FIELDS})

    def close_mark(self, scope_id: int) -> dict[str, int]:
        """The peaks of scope `scope_id`'s ring while it was open."""
        self._figures = self._peak_figures = None
        return self._marks.pop(scope_id)[1]

    def figures(self) -> RingFigures:
        """The rings now (`RingFigures`), for scope records written later (`rewind.py`): copies,
        kept until the rings change (the peaks' part until a peak rises or a scope opens or
        closes), so that asking again before then costs little."""
        f = self._figures
        if f is None:
            peaks = self._peak_figures
            if peaks is None:
                peaks = self._peak_figures = tuple([(s, *p.values()) for s, (_, p) in self._marks.items()])
            used = self.used
            f = self._figures = (tuple([n for k in RING_FIELDS for n in used[k]]), peaks, self.retired)
        return f
