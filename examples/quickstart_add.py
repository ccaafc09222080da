"""Quickstart (User Manual): a tensor-level @pl.jit add inside an InCore scope, run on the simulator.

    python examples/quickstart_add.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, b)
    return c


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(64, 128)
    b = torch.randn(64, 128)
    c = torch.empty(64, 128)
    add_kernel(a, b, c, config=RunConfig(platform="a2a3sim"))
    check("quickstart add (64x128 fp32, a2a3sim)", c, a + b)


if __name__ == "__main__":
    main()
