"""Programs for the ring-sizing tests (test_rt_rings.py)."""

import pypto.language as pl

ROWS = 16


@pl.function(type=pl.FunctionType.InCore)
def twice(x: pl.Tensor[[ROWS, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [ROWS, 64])
    y = pl.store(pl.add(t, t), [0, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def twice_all(x: pl.Tensor[[128, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [128, 64])
    y = pl.store(pl.add(t, t), [0, 0], y)
    return y


@pl.program
class Many:
    """64 independent tasks: y = 2x block by block."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[1024, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[1024, 64], pl.FP32]]) -> pl.Tensor[[1024, 64], pl.FP32]:
        for i in pl.range(0, 1024, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = twice(xs, ys)
        return y


@pl.program
class Gather:
    """8 tasks write the blocks of tmp, one task reads all of tmp (8 dependencies): y = 4x."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        tmp = pl.create_tensor([128, 64], dtype=pl.FP32)
        for i in pl.range(0, 128, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ts = pl.slice(tmp, [ROWS, 64], [i, 0])
            ts = twice(xs, ts)
        y = twice_all(tmp, y)
        return y


@pl.program
class ScopedTemps:
    """Each iteration opens a scope with its own 4 KiB temporary: y = 4x."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(0, 128, ROWS):
            with pl.scope():
                tmp = pl.create_tensor([ROWS, 64], dtype=pl.FP32)
                xs = pl.slice(x, [ROWS, 64], [i, 0])
                tmp = twice(xs, tmp)
                ys = pl.slice(y, [ROWS, 64], [i, 0])
                ys = twice(tmp, ys)
        return y


@pl.program
class Chain:
    """17 tasks in a chain, ping-ponging between y and a temporary: y = 2**17 x."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        tmp = pl.create_tensor([ROWS, 64], dtype=pl.FP32)
        y = twice(x, y)
        for i in pl.range(8):
            tmp = twice(y, tmp)
            y = twice(tmp, y)
        return y
