"""SPMD (SPEC §13): one kernel body launched on several cores, each block on its own rows
(`pl.get_block_idx()`), in the three spellings: `with pl.spmd(core_num=N)`, `for b in pl.spmd(N)`
and `pl.spmd_submit(kernel, ..., core_num=N)`; run on the simulator.

    python examples/spmd.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS = 16


# --- doc: spmd ---
@pl.jit.incore
def add_rows(a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    r = pl.get_block_idx() * 16                      # this block's rows
    t = pl.load(a, [r, 0], [16, 128])
    o = pl.store(pl.add(t, pl.cast(pl.get_block_num(), pl.FP32)), [r, 0], o)
    return o


@pl.jit
def with_form(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.spmd(core_num=4, sync_start=True):      # every task submitted here: 4 blocks
        o = add_rows(a, o)
    return o


@pl.jit
def loop_form(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for b in pl.spmd(4):                             # b: the block index
        with pl.at(level=pl.Level.CORE_GROUP):
            o[b * 16:b * 16 + 16, :] = pl.mul(a[b * 16:b * 16 + 16, :], 3.0)
    return o


@pl.jit
def submitted(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o, tid = pl.spmd_submit(add_rows, a, o, core_num=4)
    return o
# --- end doc ---


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(64, 128)
    for kernel, want in ((with_form, a + 4.0), (loop_form, 3 * a), (submitted, a + 4.0)):
        o = torch.empty(64, 128)
        kernel(a, o, config=RunConfig(sanitize=True))
        check(f"SPMD {kernel.__name__} (4 blocks x {ROWS} rows)", o, want)
        tasks = kernel.compile(a, o).last_run.tasks
        spread = ", ".join(f"block {t.block_idx} on {t.core} at cycle {t.start_cycle}" for t in tasks)
        assert len({t.core for t in tasks}) == 4, spread
        print(f"PASS {kernel.__name__}: {spread}")


if __name__ == "__main__":
    main()
