"""A tensor-level region too large for one core that TileTensorBlocks leaves as written: the
MemoryCapacityError says that automatic blocking exists, that it applies to whole-tensor writes,
and why it was not applied (the trial's at_tensor_level.py)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import MemoryCapacityError

N, D, T = 4096, 1024, 8
RT = N // T


@pl.jit
def part_rows(x: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    for k in pl.parallel(T):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[k * RT:k * RT + RT, :] = pl.exp(pl.add(pl.mul(x[k * RT:k * RT + RT, :], 0.5), b[k * RT:k * RT + RT, :]))
    return y


@pl.jit
def whole(x: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.exp(pl.add(pl.mul(x, 0.5), b))
    return y


def test_a_part_write_says_blocking_was_not_applied_and_why():
    x, b, y = torch.randn(N, D), torch.randn(N, D), torch.empty(N, D)
    with pytest.raises(MemoryCapacityError) as err:
        part_rows(x, b, y)
    msg = err.value.message
    assert "live tiles need 4194304 bytes of Vec memory" in msg
    assert "automatic blocking (TileTensorBlocks) applies to a straight-line chain of vector ops ending in " \
           "whole-tensor writes (`y[:] = ...`) and was not applied here: it writes a part of 'y' " in msg
    assert "Write the whole tensor in one pl.at" in msg


def test_the_advice_works():
    x, b, y = torch.randn(N, D), torch.randn(N, D), torch.empty(N, D)
    whole(x, b, y)
    torch.testing.assert_close(y, torch.exp(x * 0.5 + b))


@pl.program
class TileLevel:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[512, 1024], pl.FP32],
          y: pl.Out[pl.Tensor[[512, 1024], pl.FP32]]) -> pl.Tensor[[512, 1024], pl.FP32]:
        t = pl.load(x, [0, 0], [512, 1024])
        y = pl.store(pl.exp(t), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[512, 1024], pl.FP32],
             y: pl.Out[pl.Tensor[[512, 1024], pl.FP32]]) -> pl.Tensor[[512, 1024], pl.FP32]:
        y = self.k(x, y)
        return y


def test_a_tile_level_kernel_gets_no_blocking_note():
    with pytest.raises(MemoryCapacityError) as err:
        ir.compile(TileLevel, dump_passes=False, skip_ptoas=True)
    assert "use smaller tiles or loop over blocks" in err.value.message
    assert "automatic blocking" not in err.value.message
