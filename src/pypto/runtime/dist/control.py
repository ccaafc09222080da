"""The control block of a world: one shared int64 array every rank and the host map.

Layout (int64 words):

- word 0: the abort flag (`ABORT_NONE`, `ABORT_ERROR` a rank failed, `ABORT_DEADLOCK` the host found
  a deadlock, `ABORT_CANCEL` the host gave up, e.g. Ctrl-C); a rank blocked in a wait sees it and
  stops.
- per rank r, at `_HEAD + r * _RANK_WORDS`: its state (`IDLE`, `RUNNING`, `BLOCKED`), a progress
  counter it bumps on every notify, remote write, released wait and finished dispatch (the host's
  deadlock check watches the counters), and the key of the cell it is blocked on (0: none).
- per rank r, a table of `SLOTS` signal logs (simulated time, SPEC §8; deterministic): a signal cell
  hashes to a slot; its head holds the bit mask of the ranks that notified it since the call began,
  the cell's *base* (its simulated value after the notifies consumed so far, the latest arrival
  among them in cycles and that notify's event id, rank << 40 | sequence number), the key of the
  cell owning the slot and the number of logged entries; then up to `LOG` entries, one per notify
  not yet consumed by a wait: (cell key, op, value, arrival, event id). A wait replays the entries
  in simulated arrival order from the base and completes at the arrival of the notify that first
  satisfies it (`consume`), so the release time does not depend on which notifies happened to be
  applied (wall clock) before the waiter looked. Heads are cleared at the start of every host call.
  A cell sharing its slot with the slot's owner falls back to the latest arrival of its logged
  notifies (a rare overestimate).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .shm import Segment

__all__ = ["Control", "IDLE", "RUNNING", "BLOCKED", "ABORT_NONE", "ABORT_ERROR", "ABORT_DEADLOCK",
           "ABORT_CANCEL", "SLOTS", "LOG", "OP_ADD", "OP_SET"]

IDLE, RUNNING, BLOCKED = 0, 1, 2
ABORT_NONE, ABORT_ERROR, ABORT_DEADLOCK, ABORT_CANCEL = 0, 1, 2, 3
SLOTS = 2048
LOG = 16            # logged notifies per slot not yet consumed (more: the oldest folds into the base)
OP_ADD, OP_SET = 0, 1
_HEAD_WORDS, _ENTRY = 6, 5
_U64 = (1 << 64) - 1
_HEAD = 8
_RANK_WORDS = 8


class Control:
    """Typed access to a world's control segment (see the module docstring)."""

    def __init__(self, seg: Segment, nranks: int) -> None:
        self.seg, self.nranks = seg, nranks
        words = seg.bytes.view(torch.int64).numpy()   # numpy: cheaper scalar access than torch
        self.words = words
        self.ranks = words[_HEAD:_HEAD + nranks * _RANK_WORDS].reshape(nranks, _RANK_WORDS)
        start = _HEAD + nranks * _RANK_WORDS
        flat = words[start:]
        nh = nranks * SLOTS * _HEAD_WORDS
        self.head = flat[:nh].reshape(nranks, SLOTS, _HEAD_WORDS)
        self.log = flat[nh:nh + nranks * SLOTS * LOG * _ENTRY].reshape(nranks, SLOTS, LOG, _ENTRY)

    @staticmethod
    def nbytes(nranks: int) -> int:
        return 8 * (_HEAD + nranks * _RANK_WORDS + nranks * SLOTS * (_HEAD_WORDS + LOG * _ENTRY))

    @classmethod
    def create(cls, name: str, nranks: int) -> Control:
        return cls(Segment.create(name, cls.nbytes(nranks)), nranks)

    @classmethod
    def attach(cls, name: str, nranks: int) -> Control:
        return cls(Segment.attach(name, cls.nbytes(nranks)), nranks)

    # ---- abort flag ------------------------------------------------------------------------------
    @property
    def abort(self) -> int:
        return int(self.words[0])

    def set_abort(self, why: int) -> None:
        if int(self.words[0]) == ABORT_NONE:
            self.words[0] = why

    def clear_abort(self) -> None:
        self.words[0] = ABORT_NONE

    # ---- per-rank state --------------------------------------------------------------------------
    def state(self, rank: int) -> int:
        return int(self.ranks[rank, 0])

    def set_state(self, rank: int, state: int) -> None:
        self.ranks[rank, 0] = state

    def set_waiting(self, rank: int, key: int) -> None:
        """The cell (`key`; 0: none) `rank` is blocked on: notifies of other cells need not wake it."""
        self.ranks[rank, 2] = key

    def waiting(self, rank: int) -> int:
        return int(self.ranks[rank, 2])

    def bump(self, rank: int) -> None:
        self.ranks[rank, 1] += 1

    def progress(self) -> tuple[int, ...]:
        return tuple(self.ranks[:, 1].tolist())

    # ---- signal logs -----------------------------------------------------------------------------
    @staticmethod
    def slot(window: int, offset: int) -> int:
        return (window * 1000003 + offset // 4) % SLOTS

    @staticmethod
    def key(window: int, offset: int) -> int:
        """The cell's id in a log entry (window id, byte offset); never 0."""
        return (window << 40) | (offset + 1)

    def stamp(self, peer: int, slot: int, key: int, op: int, value: int, before: int, arrival: int,
              sender: int, event: int) -> None:
        """Log a notify from `sender` (`op` `OP_ADD` / `OP_SET` of `value`) to the cell `key` of `peer`,
        arriving at `arrival`; `before` is the cell's value before it (call with PEER's lock held)."""
        h = self.head[peer, slot]
        h[0] |= 1 << sender
        if not h[4]:                 # the first notify of the call: the slot belongs to this cell
            h[1], h[2], h[3], h[4] = before, 0, 0, key
        n = int(h[5])
        log = self.log[peer, slot]
        if n == LOG:                 # full: fold the oldest entry into the base (its arrival a floor)
            e = log[0]
            if int(e[0]) == int(h[4]):
                h[1] = _apply(int(h[1]), int(e[1]), int(e[2]))
                if int(e[3]) > int(h[2]):
                    h[2], h[3] = e[3], e[4]
            log[:-1] = log[1:].copy()
            n -= 1
        log[n] = (key, op, value, arrival, event)
        h[5] = n + 1

    def consume(self, rank: int, slot: int, key: int, ok: Callable[[int], bool], current: int
                ) -> tuple[int, int]:
        """(arrival, notify event id) of the earliest simulated state of `rank`'s cell `key` that
        satisfies `ok`: the logged notifies not yet consumed are replayed in simulated arrival order
        (ties by event id) from the cell's base value; the shortest satisfying prefix is consumed (the
        base advances past it). Deterministic whatever the wall-clock order in which the notifies
        were applied. A cell that shares its slot with another cell, or whose replay never
        satisfies `ok` (its value was changed by a plain store), falls back to: every logged notify
        consumed, base := `current`. (0, 0) when nothing was logged. Call with RANK's lock held."""
        h = self.head[rank, slot]
        n = int(h[5])
        log = self.log[rank, slot]
        entries = sorted(((int(e[3]), int(e[4]), int(e[1]), int(e[2]), i) for i, e in enumerate(log[:n].tolist())
                          if e[0] == key), key=lambda e: (e[0], e[1]))
        owner = int(h[4]) == key
        value, floor, cause = int(h[1]), int(h[2]), int(h[3])
        if not owner:
            floor, cause = 0, 0
        taken = -1
        if owner:
            if ok(value):
                return floor, cause
            for j, (arr, eid, op, v, _) in enumerate(entries):
                value = _apply(value, op, v)
                if arr >= floor:
                    floor, cause = arr, eid
                if ok(value):
                    taken = j
                    break
        if taken < 0:                # fallback: everything logged for this cell
            taken, value = len(entries) - 1, current
            for arr, eid, *_ in entries:
                if arr >= floor:
                    floor, cause = arr, eid
        gone = {e[4] for e in entries[:taken + 1]}
        if gone:
            keep = [e for i, e in enumerate(log[:n].tolist()) if i not in gone]
            for i, e in enumerate(keep):
                log[i] = e
            h[5] = len(keep)
        if owner:
            h[1], h[2], h[3] = value, floor, cause
        return floor, cause

    def senders(self, rank: int, slot: int) -> int:
        """The bit mask of the ranks that notified `rank`'s slot in this call."""
        return int(self.head[rank, slot, 0]) & _U64

    def clear_stamps(self) -> None:
        """Start of a host call (every rank idle): forget who notified what and when (each call's
        simulated time starts at 0)."""
        self.head[...] = 0


def _apply(value: int, op: int, v: int) -> int:
    return value + v if op == OP_ADD else v
