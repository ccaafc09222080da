"""Group calls and cross-core pipes in generated PyTorch scripts (copied into the scripts of programs
with Group functions or pipe ops, after `torch_prelude`, whose `BLOCK` it sets; lines marked
"not in scripts" are left out).

The meaning of a Group call, as the simulator runs it (`pypto/runtime/sim/cluster.py`,
`pypto/ops/system.py`), in plain sequential Python:

- A kernel whose body contains a pipe op that may wait is a Python generator: `_tpush` / `_tpop`
  yield a wait record `(ready, what, where)` while they cannot proceed (a full ring, an empty one).
- A Group function collects its kernel calls (`_Group.call`, which returns the kernel's Out/InOut
  arguments: DDR tensors, filled in place) and runs them together (`_Group.run`) before it returns:
  the AIC kernel once, the AIV kernel once per vector core — twice, as subblocks 0 and 1, under a
  split mode (`BLOCK["subblock_idx"]`, read by `get_subblock_idx()`, is set on every resume).
- Members run in call order, vector subblocks in order. The running member keeps going until it
  finishes or waits; then the next member, round robin, that can make progress runs. A member that
  overlaps an earlier one in DDR (at least one of them writing, a different kernel) starts only after
  that one finished.
- Each (direction, vector subblock) is a FIFO ring of `depth` slots: a push takes a slot and
  clones the tile in; a pop takes the oldest tile; the consumer's tfree gives the slot back. Under
  UP_DOWN / LEFT_RIGHT the cube core's push sends each vector core its half (rows / columns) and
  its pop joins the halves of both; under NONE every running vector core gets the whole tile.
- When no member can make progress although some are unfinished, the script raises RuntimeError
  naming each waiting kernel, the source line of its pipe op and why it waits (a deadlock); tiles
  left in a ring at the end, a pipe op outside a Group call, a tfree without a popped tile and a
  tile of an unexpected shape raise too.

Only the numbers and these errors are modelled, not time. With deterministic kernels and FIFO rings
the result does not depend on the interleaving, so it equals the simulator's.
"""

import collections
import types

import torch

from .torch_prelude import BLOCK  # not in scripts (the prelude before this defines BLOCK)

_CLUSTER = {"pipes": None}   # the pipes of the Group call running now (None outside one)
_TO_AIV = "AIC->AIV"


class _Ring:
    def __init__(self, depth):
        self.depth, self.items, self.held = depth, collections.deque(), 0

    def has_slot(self):
        return self.depth is None or self.held < self.depth


class _Pipes:
    """The pipes of one Group call: a FIFO ring of `depth[direction]` slots per (direction, subblock)."""

    def __init__(self, depth):
        self.depth, self.rings = dict(depth), {}
        self.unfreed = collections.defaultdict(collections.deque)

    def ring(self, direction, sub):
        key = (direction, sub)
        if key not in self.rings:
            self.rings[key] = _Ring(self.depth.get(direction))
        return self.rings[key]

    def pending(self):
        return {k: len(r.items) for k, r in self.rings.items() if r.items}


def _at(where):
    return f" at {where}" if where else ""


def _pipes(where):
    ch = _CLUSTER["pipes"]
    if ch is None:
        raise RuntimeError(f"cross-core pipe op{_at(where)} outside a mixed-kernel group: call the AIC and "
                           f"AIV kernels that use pipes through a Group function")
    return ch


def _pipe_name(direction, subs):
    cores = " and ".join(str(s) for s in subs)
    return f"pipe {direction} (vector core{'s' if len(subs) > 1 else ''} {cores})"


def _wait(ready, what, where):
    while not ready():
        yield (ready, what, where)


def _halves(x, split, n):
    if split == "NONE":
        return [x] * n
    dim = 0 if split == "UP_DOWN" else 1
    if x.shape[dim] % 2:
        raise RuntimeError(f"cannot split a tile of shape {list(x.shape)} {split}: odd size")
    return list(torch.chunk(x, 2, dim=dim))


def _tpush(direction, tile, split="NONE", where=None):
    ch = _pipes(where)
    if direction == _TO_AIV:   # the cube core sends to its vector core(s)
        n = BLOCK["subblock_num"] if split == "NONE" else 2
        subs, values = tuple(range(n)), _halves(tile, split, n)
    else:
        subs, values = (BLOCK["subblock_idx"] if split != "NONE" else 0,), [tile]
    rings = [ch.ring(direction, s) for s in subs]
    yield from _wait(lambda: all(r.has_slot() for r in rings),
                     f"{_pipe_name(direction, subs)} is full: all {rings[0].depth} slots hold tiles the "
                     f"consumer has not freed", where)
    for r, v in zip(rings, values):
        r.items.append(v.clone())
        r.held += 1


def _tpop(direction, shape, dtype=None, split="NONE", where=None):
    ch = _pipes(where)
    if direction == _TO_AIV:   # a vector core receives its own tile
        consumer = BLOCK["subblock_idx"]
        subs = (consumer,)
    else:
        subs, consumer = ((0,) if split == "NONE" else (0, 1)), 0
    rings = [ch.ring(direction, s) for s in subs]
    yield from _wait(lambda: all(r.items for r in rings),
                     f"{_pipe_name(direction, subs)} is empty: no matching tpush has run", where)
    got = [r.items.popleft() for r in rings]
    ch.unfreed[(direction, consumer)].append(tuple((direction, s) for s in subs))
    x = got[0] if len(got) == 1 else torch.cat(got, dim=0 if split == "UP_DOWN" else 1)
    if tuple(x.shape) != tuple(shape):
        raise RuntimeError(f"tpop{_at(where)} expected a tile of shape {list(shape)}, the pipe delivered "
                           f"{list(x.shape)}")
    return x if dtype is None or isinstance(dtype, str) else x.to(dtype)   # str: a packed type, unpacked


def _tfree(direction, where=None):
    ch = _pipes(where)
    q = ch.unfreed[(direction, BLOCK["subblock_idx"] if direction == _TO_AIV else 0)]
    if not q:
        raise RuntimeError(f"tfree{_at(where)} on pipe {direction} without a popped tile to release")
    for key in q.popleft():
        ch.rings[key].held -= 1


def _alone(result):
    """The value of a kernel call made outside a Group call (a generator runs to its end)."""
    if not isinstance(result, types.GeneratorType):
        return result
    try:
        _, what, where = next(result)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError(f"a kernel waits{_at(where)} outside a Group call: {what}")


def _span(t):
    """First and one-past-last byte of storage that tensor `t` can touch."""
    hi = t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.storage_offset() * t.element_size(), hi * t.element_size()


def _offsets(t, n):
    return torch.as_strided(torch.arange(n), t.shape, t.stride(), t.storage_offset()).flatten()


def _overlap(a, b):
    """Whether tensors `a` and `b` share an element of DDR (exact)."""
    if a.numel() == 0 or b.numel() == 0 or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (a0, a1), (b0, b1) = _span(a), _span(b)
    if a0 >= b1 or b0 >= a1:
        return False
    if a.element_size() != b.element_size() or (a.is_contiguous() and b.is_contiguous()):
        return True   # dense byte ranges that intersect (or mixed element sizes: assume so)
    n = max(a1, b1) // a.element_size()
    return bool(torch.isin(_offsets(a, n), _offsets(b, n)).any())


class _Member:
    def __init__(self, name, core, fn, args, writes, sub):
        self.name, self.core, self.fn, self.args, self.writes, self.sub = name, core, fn, args, writes, sub
        self.state, self.gen, self.wait, self.after = "new", None, None, ()

    def label(self):
        return f"'{self.name}'" + ("" if self.sub is None else f" (vector core {self.sub})")

    def conflicts(self, other):
        return any(isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
                   and (i in self.writes or j in other.writes) and _overlap(x, y)
                   for i, x in enumerate(self.args) for j, y in enumerate(other.args))


class _Group:
    """One call of Group function `name` (split mode `split`, ring `depth` per direction)."""

    def __init__(self, name, split, depth):
        self.name, self.split, self.depth, self.calls = name, split, depth, []

    def call(self, name, core, fn, args, writes):
        """Collect a kernel call; its value is the kernel's Out/InOut arguments (filled by `run`)."""
        self.calls.append((name, core, fn, args, writes))
        outs = [args[i] for i in writes]
        return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)

    def run(self):
        """Run the collected kernels together (module docstring); raises RuntimeError on a deadlock."""
        calls, self.calls = self.calls, []
        for core in ("AIC", "AIV"):
            names = [c[0] for c in calls if c[1] == core]
            if len(names) > 1:
                raise RuntimeError(f"Group function '{self.name}' calls {len(names)} {core} kernels "
                                   f"({', '.join(names)}); a cluster runs one AIC and one AIV kernel")
        nvec = 1 if self.split == "NONE" else 2
        members = [_Member(name, core, fn, args, writes, sub) for name, core, fn, args, writes in calls
                   for sub in (range(nvec) if core == "AIV" else (None,))]
        for k, m in enumerate(members):
            m.after = tuple(j for j in range(k) if members[j].name != m.name and members[j].conflicts(m))
        nsub = nvec if any(m.core == "AIV" for m in members) else 1
        saved = dict(BLOCK)
        _CLUSTER["pipes"] = pipes = _Pipes(self.depth)
        try:
            last = -1
            while True:
                k = self._next(members, last)
                if k is None:
                    break
                self._resume(members[k], nsub)
                last = k
        finally:
            _CLUSTER["pipes"] = None
            BLOCK.update(saved)
        stuck = [m for m in members if m.state == "waiting"]
        if stuck:
            parts = [f"kernel {m.label()} waits{_at(m.wait[2])}: {m.wait[1]}" for m in stuck]
            idle = [m.label() for m in members if m.state == "new"]
            if idle:
                parts.append(f"not started (waiting for other kernels to finish): {', '.join(idle)}")
            raise RuntimeError(f"group '{self.name}': deadlock on the cross-core pipes: " + "; ".join(parts))
        left = pipes.pending()
        if left:
            rings = ", ".join(f"{n} in {d} (vector core {s})" for (d, s), n in sorted(left.items()))
            raise RuntimeError(f"group '{self.name}' finished with tiles pushed but never popped: {rings}")

    @staticmethod
    def _next(members, last):
        n = len(members)
        for step in range(1, n + 1):
            m = members[(last + step) % n]
            if m.state == "waiting" and m.wait[0]():
                return (last + step) % n
            if m.state == "new" and all(members[j].state == "done" for j in m.after):
                return (last + step) % n
        return None

    @staticmethod
    def _resume(m, nsub):
        BLOCK.update(subblock_idx=m.sub or 0, subblock_num=nsub)
        if m.gen is None:
            result = m.fn(*m.args)
            if not isinstance(result, types.GeneratorType):
                m.state = "done"
                return
            m.gen = result
        try:
            m.wait, m.state = next(m.gen), "waiting"
        except StopIteration:
            m.state = "done"
