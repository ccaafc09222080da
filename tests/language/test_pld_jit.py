"""`pld` under `@pl.jit` (SPEC §8, Language Guide "`@pl.jit` family"): a bare `pld.DistributedTensor`
parameter takes its shape and dtype from the call and stays window-bound; jit sub-functions receive
window-bound arguments; the specialised program runs on the fake world of `tests/ops/dist_harness`."""

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.errors import ParserTypeError
from pypto.ir.types import DistributedTensorType, TensorType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
from dist_harness import World, run_ranks  # noqa: E402


@pl.jit.incore
def shift(inp: pl.Tensor, data: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    pld.tensor.remote_store(inp, data, (me + 1) % n, [0, 0])
    pld.notify(sig, (me + 1) % n, [0, 0], 1)
    pld.wait(sig, [0, 0], 1)
    out = pld.get(out, me, data)
    return out


@pl.jit
def chip_orch(inp: pl.Tensor, out: pl.Out[pl.Tensor], data: pl.InOut[pld.DistributedTensor],
              sig: pld.DistributedTensor):
    out = shift(inp, data, sig, out)
    return out


def test_bare_distributed_tensor_is_typed_by_the_call_and_stays_window_bound():
    args = (torch.randn(1, 256), torch.zeros(1, 256), torch.zeros(1, 256), torch.zeros(1, 1, dtype=torch.int32))
    prog = chip_orch.specialize(*args)
    main = prog.get_function("chip_orch")
    kinds = {p.name: type(p.type) for p in main.params}
    assert kinds == {"inp": TensorType, "out": TensorType, "data": DistributedTensorType,
                     "sig": DistributedTensorType}
    assert "data: pl.InOut[pld.DistributedTensor[[1, 256], pl.FP32]]" in prog.as_python()
    kernel = next(f for f in prog.functions if f.name.startswith("shift"))
    assert type(kernel.params[1].type) is DistributedTensorType


@pytest.mark.parametrize("p", [2, 3])
def test_jit_program_shifts_a_ring(p):
    shapes = (torch.randn(1, 256), torch.zeros(1, 256), torch.zeros(1, 256), torch.zeros(1, 1, dtype=torch.int32))
    compiled = ir.compile(chip_orch.specialize(*shapes), dump_passes=False, skip_ptoas=True)
    world = World([[torch.zeros(1, 256), torch.zeros(1, 1, dtype=torch.int32)] for _ in range(p)])
    xs = [torch.randn(1, 256) for _ in range(p)]
    outs = [torch.zeros(1, 256) for _ in range(p)]
    run_ranks(compiled, world, lambda r: [xs[r], outs[r], None, None], [2, 3])
    for r in range(p):
        assert torch.equal(outs[r], xs[(r - 1) % p])


def test_a_plain_tensor_for_a_window_parameter_is_a_located_error():
    @pl.jit.incore
    def k(data: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
        t = pld.remote_load(data, 0, [0, 0], [1, 256])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def orch(x: pl.Tensor[[1, 256], pl.FP32], out: pl.Out[pl.Tensor[[1, 256], pl.FP32]]):
        out = k(x, out)
        return out

    with pytest.raises(ParserTypeError, match=r"argument 'data' of 'k' must be a window-bound pld.DistributedTensor "
                                              r"\(the parameter is declared pld.DistributedTensor\), got a plain "
                                              r"pl.Tensor \[1, 256\]") as info:
        orch.specialize(torch.zeros(1, 256), torch.zeros(1, 256))
    assert info.value.span.begin_line == orch.__pypto_pyfunc__.__code__.co_firstlineno + 2


def test_a_plain_tensor_for_an_annotated_window_parameter_of_a_program_function():
    src = """import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        pld.notify(sig, 0, [0, 0], 1)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, sig: pl.Tensor[[2, 1], pl.INT32]):
        self.k(sig)
"""
    with pytest.raises(ParserTypeError, match="argument 'sig' of 'k' must be a window-bound") as info:
        pl.parse(src)
    assert info.value.span.begin_line == 13
