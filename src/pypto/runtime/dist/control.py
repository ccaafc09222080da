"""The control block of a world: one shared int64 array every rank and the host map.

Layout (int64 words):

- word 0: the abort flag (`ABORT_NONE`, `ABORT_ERROR` a rank failed, `ABORT_DEADLOCK` the host found
  a deadlock, `ABORT_CANCEL` the host gave up, e.g. Ctrl-C); a rank blocked in a wait sees it and
  stops.
- per rank r, at `_HEAD + r * _RANK_WORDS`: its state (`IDLE`, `RUNNING`, `BLOCKED`) and a progress
  counter it bumps on every notify, remote write, released wait and finished dispatch (the host's
  deadlock check watches the counters).
- per rank r, a table of `SLOTS` signal stamps: for a signal cell hashed to a slot, the latest
  simulated arrival time of a notify (cycles), the bit mask of the ranks that notified it since the
  call began, and the id of the notify event that set the time (rank << 40 | sequence number);
  cleared at the start of every host call.
  Cells that share a slot share their stamp (a later arrival, more senders): a rare overestimate.
"""

from __future__ import annotations

import torch

from .shm import Segment

__all__ = ["Control", "IDLE", "RUNNING", "BLOCKED", "ABORT_NONE", "ABORT_ERROR", "ABORT_DEADLOCK",
           "ABORT_CANCEL", "SLOTS"]

IDLE, RUNNING, BLOCKED = 0, 1, 2
ABORT_NONE, ABORT_ERROR, ABORT_DEADLOCK, ABORT_CANCEL = 0, 1, 2, 3
SLOTS = 2048
_U64 = (1 << 64) - 1
_HEAD = 8
_RANK_WORDS = 8


class Control:
    """Typed access to a world's control segment (see the module docstring)."""

    def __init__(self, seg: Segment, nranks: int) -> None:
        self.seg, self.nranks = seg, nranks
        words = seg.bytes.view(torch.int64)
        self.words = words
        self.ranks = words[_HEAD:_HEAD + nranks * _RANK_WORDS].view(nranks, _RANK_WORDS)
        start = _HEAD + nranks * _RANK_WORDS
        self.stamps = words[start:start + nranks * SLOTS * 3].view(nranks, SLOTS, 3)

    @staticmethod
    def nbytes(nranks: int) -> int:
        return 8 * (_HEAD + nranks * _RANK_WORDS + nranks * SLOTS * 3)

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

    def bump(self, rank: int) -> None:
        self.ranks[rank, 1] += 1

    def progress(self) -> tuple[int, ...]:
        return tuple(self.ranks[:, 1].tolist())

    # ---- signal stamps ---------------------------------------------------------------------------
    @staticmethod
    def slot(window: int, offset: int) -> int:
        return (window * 1000003 + offset // 4) % SLOTS

    def stamp(self, peer: int, slot: int, arrival: int, sender: int, event: int) -> None:
        """Record a notify from `sender` arriving at `arrival` (call with PEER's lock held)."""
        row = self.stamps[peer, slot]
        if arrival >= int(row[0]):
            row[0] = arrival
            row[2] = event
        mask = (int(row[1]) & _U64) | (1 << sender)
        row[1] = mask - (1 << 64) if mask >= 1 << 63 else mask   # stored as int64

    def read_stamp(self, rank: int, slot: int) -> tuple[int, int, int]:
        """(latest arrival, sender mask, event id) of `rank`'s slot."""
        a, m, e = self.stamps[rank, slot].tolist()
        return int(a), int(m) & _U64, int(e)

    def clear_stamps(self) -> None:
        """Start of a host call (every rank idle): forget who notified what and when (each call's
        simulated time starts at 0)."""
        self.stamps.zero_()
