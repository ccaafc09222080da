"""DDR regions of task arguments and the RAW / WAR / WAW dependencies between tasks (issue 6)."""

import torch

from pypto.runtime.sim.deps import DepTracker
from pypto.runtime.sim.regions import describe, region_of


def test_slices_are_boxes_of_their_buffer() -> None:
    base = torch.zeros(64, 128)
    r = region_of(base[16:32, 64:128])
    assert r.key == region_of(base).key
    assert r.box == ((16, 32), (64, 128)) and describe(r) == "[16:32, 64:128]"
    assert r.lo == (16 * 128 + 64) * 4 and r.hi == (31 * 128 + 128) * 4
    assert region_of(base).box == ((0, 64), (0, 128))


def test_overlap_is_exact_for_boxes_and_conservative_otherwise() -> None:
    base = torch.zeros(64, 128)
    left, right = region_of(base[0:16, 0:64]), region_of(base[0:16, 64:128])
    assert left.lo < right.hi and right.lo < left.hi      # byte ranges interleave ...
    assert not left.overlaps(right)                        # ... but the boxes are disjoint
    assert left.overlaps(region_of(base[8:24, 32:96]))
    assert not left.overlaps(region_of(torch.zeros(64, 128)))   # another buffer
    t = region_of(base.t()[0:64, 0:16])                   # a transposed view: not a box
    assert t.box is None and t.overlaps(left) and describe(t).startswith("bytes")
    assert region_of(base).covers(left) and not left.covers(region_of(base))


def test_raw_war_waw_and_independent_tasks() -> None:
    a, tmp, out = torch.zeros(32, 64), torch.zeros(32, 64), torch.zeros(32, 64)
    tr = DepTracker()

    def acc(t, read=False, write=False):
        return region_of(t), read, write

    assert tr.add(0, [acc(a, read=True), acc(tmp[0:16], write=True)]) == {}
    assert tr.add(1, [acc(a, read=True), acc(tmp[16:32], write=True)]) == {}   # disjoint halves
    assert tr.add(2, [acc(tmp[0:16], read=True), acc(out[0:16], write=True)]) == {0: "RAW"}
    assert tr.add(3, [acc(tmp, read=True, write=True)]) == {0: "RAW", 1: "RAW", 2: "WAR"}
    assert tr.add(4, [acc(out, write=True)]) == {2: "WAW"}
    assert tr.add(5, [acc(a, write=True)]) == {0: "WAR", 1: "WAR"}


def test_covered_accesses_are_dropped_but_order_is_kept_transitively() -> None:
    buf = torch.zeros(16, 16)
    tr = DepTracker()
    for i in range(100):   # the same region rewritten in a loop: each write depends on the last
        deps = tr.add(i, [(region_of(buf), False, True)])
        assert deps == ({} if i == 0 else {i - 1: "WAW"})
    assert tr.live_entries() == 1
    tr.reset()
    assert tr.add(0, [(region_of(buf), True, False)]) == {}


def test_bucketed_index_finds_far_apart_overlaps() -> None:
    big = torch.zeros(2048, 2048)
    tr = DepTracker()
    n = 0
    for i in range(0, 2048, 128):
        for j in range(0, 2048, 128):
            assert tr.add(n, [(region_of(big[i:i + 128, j:j + 128]), False, True)]) == {}
            n += 1
    whole = tr.add(n, [(region_of(big), True, False)])
    assert sorted(whole) == list(range(n)) and set(whole.values()) == {"RAW"}
    corner = tr.add(n + 1, [(region_of(big[2000:2048, 2000:2048]), False, True)])
    assert corner == {255: "WAW", n: "WAR"}


def test_many_readers_then_one_writer() -> None:
    w = torch.zeros(64, 64)
    tr = DepTracker()
    for i in range(500):       # e.g. weights read by every task: reads never wait for reads
        assert tr.add(i, [(region_of(w), True, False)]) == {}
    deps = tr.add(500, [(region_of(w[0:32]), False, True)])
    assert deps == dict.fromkeys(range(500), "WAR")
    assert tr.add(501, [(region_of(w[32:64]), True, False)]) == {}      # the other half
    assert tr.add(502, [(region_of(w[16:48]), True, False)]) == {500: "RAW"}


def test_the_grid_index_finds_the_same_dependencies_in_the_same_order_as_byte_buckets() -> None:
    import random

    rng = random.Random(3)
    bufs = [torch.zeros(256, 256), torch.zeros(64, 512), torch.zeros(4096)]

    def view(buf):
        if buf.dim() == 1:
            a = rng.randrange(0, 4000)
            return buf[a:a + rng.randrange(1, 96)]
        r, c = buf.shape
        if rng.random() < 0.1:
            return buf.t()[0:rng.randrange(1, c), 0:rng.randrange(1, r)]    # not a box
        if rng.random() < 0.1:
            return buf                                                    # the whole buffer
        h, w = rng.choice([8, 16, 32, 48]), rng.choice([8, 16, 64, 100])
        i, j = rng.randrange(0, r - h + 1), rng.randrange(0, c - w + 1)
        return buf[i:i + h, j:j + w]

    for _ in range(20):
        grid, plain = DepTracker(), DepTracker(grid=False)
        for t in range(120):
            acc = [(region_of(view(rng.choice(bufs))), *rng.choice([(True, False), (False, True), (True, True)]))
                   for _ in range(rng.randrange(1, 4))]
            since = t - rng.randrange(0, 3) if rng.random() < 0.1 else None
            derive = rng.random() > 0.05
            got, want = grid.add(t, acc, since, derive), plain.add(t, acc, since, derive)
            assert list(got.items()) == list(want.items())
        assert grid.live_entries() == plain.live_entries()
