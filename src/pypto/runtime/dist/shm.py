"""Named shared-memory segments of a distributed run (SPEC §8 "windows are shared memory").

A `Segment` is a POSIX shared-memory object (`/dev/shm/pypto_<world>_<what>` on Linux) mapped into
this process. The host creates it (`Segment.create`), rank processes map it by name
(`Segment.attach`). Only the creator unlinks it (or, when the host was killed, a rank: `unlink_name`): `unlink()` removes the name at once (mappings stay
valid until their processes drop them), and every segment created and not yet unlinked is unlinked at
interpreter exit as well (`atexit`), so a failed run or a Ctrl-C leaves nothing in /dev/shm.

The module uses `_posixshmem` (what `multiprocessing.shared_memory` is built on) directly, without
that module's resource tracker, which would also "clean up" segments that rank processes merely map.
"""

from __future__ import annotations

import atexit
import mmap
import os
import secrets

import torch

try:
    import _posixshmem
except ImportError:   # pragma: no cover - Windows has no POSIX shared memory
    _posixshmem = None

__all__ = ["Segment", "PREFIX", "new_world_id", "live_segments", "unlink_name"]

PREFIX = "pypto_"
_CREATED: set[str] = set()     # names this process created and has not unlinked yet


def new_world_id() -> str:
    """A fresh id for one world's segments: `pypto_<pid>_<random>`."""
    return f"{PREFIX}{os.getpid()}_{secrets.token_hex(4)}"


def live_segments() -> list[str]:
    """Names of the segments this process created and has not unlinked (for tests and cleanup)."""
    return sorted(_CREATED)


class Segment:
    """One mapped shared-memory segment of `size` bytes (zero-filled when created).

    Attributes:
        name: the segment name (no leading slash). size: its size in bytes.
        bytes: a uint8 torch tensor over the whole mapping.

    Raises:
        RuntimeError: the platform has no POSIX shared memory. FileExistsError / FileNotFoundError
            from the OS for a name that exists (create) or does not (attach).
    """

    def __init__(self, name: str, size: int, mm: mmap.mmap, owner: bool) -> None:
        self.name, self.size, self._mm, self.owner = name, size, mm, owner
        self.bytes = torch.frombuffer(mm, dtype=torch.uint8) if size else torch.empty(0, dtype=torch.uint8)

    @classmethod
    def create(cls, name: str, size: int) -> Segment:
        """Create and map segment `name` of `size` bytes (rounded up to 64 bytes)."""
        if _posixshmem is None:   # pragma: no cover
            raise RuntimeError("distributed runs need POSIX shared memory, which this platform lacks")
        size = max(64, -(-int(size) // 64) * 64)
        fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        _CREATED.add(name)
        try:
            os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            _unlink(name)
            raise
        os.close(fd)
        return cls(name, size, mm, True)

    @classmethod
    def attach(cls, name: str, size: int) -> Segment:
        """Map the existing segment `name` (created with `size` bytes, rounded as in `create`)."""
        if _posixshmem is None:   # pragma: no cover
            raise RuntimeError("distributed runs need POSIX shared memory, which this platform lacks")
        size = max(64, -(-int(size) // 64) * 64)
        fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
        try:
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        return cls(name, size, mm, False)

    def unlink(self) -> None:
        """Remove the name (creator only; idempotent). The mapping stays usable in every process
        that has it until `close`."""
        if self.owner:
            _unlink(self.name)

    def close(self) -> None:
        """Drop this process's mapping once no tensor views it any more (else keep it mapped until
        the process exits: the memory is freed when the last mapping goes)."""
        self.bytes = torch.empty(0, dtype=torch.uint8)
        try:
            self._mm.close()
        except BufferError:
            pass

    def __repr__(self) -> str:
        return f"Segment({self.name!r}, {self.size} bytes)"


def unlink_name(name: str) -> None:
    """Unlink segment `name` whoever created it (a rank cleaning up after a host that was killed);
    a name that is already gone is fine."""
    try:
        _posixshmem.shm_unlink("/" + name)
    except FileNotFoundError:
        pass


def _unlink(name: str) -> None:
    if name not in _CREATED:
        return
    _CREATED.discard(name)
    try:
        _posixshmem.shm_unlink("/" + name)
    except FileNotFoundError:
        pass


@atexit.register
def _unlink_all() -> None:
    for name in list(_CREATED):
        _unlink(name)
