"""Double buffering with `pl.pipeline`: the same elementwise loop, once with one set of buffers and
once with `stage=2`, so that the loads of block j+1 run while block j is added and stored.

    python examples/double_buffering.py

Both runs compute c = a + b (checked against torch) with the same work on every pipe; the
simulated cycles of the task drop with two stages, and each build folder gets a swimlane at level 2
(one track per pipe under the core; render it with `python -m pypto.tools.swimlane <build folder>`).
docs/performance.md ("Double buffering with pl.pipeline") walks through it.
"""

import sys

import torch
from _check import check

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

ROWS, COLS, TILE = 16, 4096, 512


def add_blocks(stage: int):
    """c = a + b over [16, 4096] FP32, one [16, 512] block per loop trip, `stage` buffer sets."""

    @pl.program
    class AddBlocks:
        @pl.function(type=pl.FunctionType.InCore)
        def add(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
                c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            for j, (cc,) in pl.pipeline(0, COLS, TILE, stage=stage, init_values=(c,)):
                ta = pl.load(a, [0, j], [ROWS, TILE])
                tb = pl.load(b, [0, j], [ROWS, TILE])
                nc = pl.store(pl.add(ta, tb), [0, j], cc)
                out = pl.yield_(nc)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
                 c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            c = self.add(a, b, c)
            return c

    return AddBlocks


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    cycles = {}
    for stage in (1, 2):
        compiled = ir.compile(add_blocks(stage), output_dir=f"build_output/double_buffering_stage{stage}")
        c = torch.zeros(ROWS, COLS)
        compiled(a, b, c, config=RunConfig(enable_chip_swimlane=2))
        check(f"double buffering, stage={stage}", c, a + b)
        cost = compiled.tasks[0].cost
        cycles[stage] = cost.cycles
        pipes = ", ".join(f"{p} {n}" for p, n in cost.pipe_cycles.items())
        print(f"  stage={stage}: {cost.cycles} cycles ({pipes}); swimlane: "
              f"{compiled.output_dir}/dfx_outputs/swimlane.json")
    if not cycles[2] < cycles[1]:
        print(f"FAIL double buffering did not pay: {cycles[1]} -> {cycles[2]} cycles")
        sys.exit(1)
    print(f"PASS double buffering: {cycles[1]} -> {cycles[2]} cycles ({cycles[1] / cycles[2]:.2f}x)")


if __name__ == "__main__":
    main()
