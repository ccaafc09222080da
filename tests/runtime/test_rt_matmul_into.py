"""matmul / matmul_acc write their result straight into the Acc tile (`OpSpec.compute_into`): in
place when the result shares the accumulator's buffer, with `out=` when it is elsewhere, and through
a copy when the two overlap only partly. Every placement gives torch's numbers."""

from __future__ import annotations

import pytest
import torch
from rt_ir import (
    FP16,
    FP32,
    Acc,
    In,
    Left,
    Mat,
    Out,
    Right,
    assign,
    call,
    function,
    load,
    program,
    ret,
    store,
    tensor_t,
    tile,
)

from pypto.ir import Var
from pypto.runtime import CompiledProgram

T = 16
_HALF = T * T * 2     # bytes of a [T, T] FP16 tile


def _kernel(acc_addr: int):
    """k(a [T, 2T], b [2T, T]) -> c = a[:, :T] @ b[:T] + a[:, T:] @ b[T:]; the first product `acc`
    sits at Acc 0, the sum `nacc` at byte `acc_addr`."""
    a, b = Var("a", tensor_t((T, 2 * T), FP16)), Var("b", tensor_t((2 * T, T), FP16))
    c, c1 = Var("c", tensor_t((T, T))), Var("c1", tensor_t((T, T)))
    a0, b0, a1, b1 = (tile(n, (T, T), FP16, Mat, k * _HALF) for k, n in enumerate(("a0", "b0", "a1", "b1")))
    l0, l1 = tile("l0", (T, T), FP16, Left, 0), tile("l1", (T, T), FP16, Left, _HALF)
    r0, r1 = tile("r0", (T, T), FP16, Right, 0), tile("r1", (T, T), FP16, Right, _HALF)
    acc, nacc = tile("acc", (T, T), FP32, Acc, 0), tile("nacc", (T, T), FP32, Acc, acc_addr)
    mv = [assign(d, call("tile.move", [s], d.type, target_memory=d.type.memory_space))
          for d, s in ((l0, a0), (r0, b0), (l1, a1), (r1, b1))]
    return function("k", [(a, In), (b, In), (c, Out)], [
        load(a0, a, (0, 0), Mat), load(b0, b, (0, 0), Mat), load(a1, a, (0, T), Mat), load(b1, b, (T, 0), Mat),
        *mv,
        assign(acc, call("tile.matmul", [l0, r0], acc.type)),
        assign(nacc, call("tile.matmul_acc", [acc, l1, r1], nacc.type)),
        store(c1, nacc, (0, 0), c), ret(c1)])


@pytest.mark.parametrize("acc_addr", [0, 512, 4096], ids=["in-place", "partial-overlap", "apart"])
def test_matmul_acc_result_placement(acc_addr: int) -> None:
    g = torch.Generator().manual_seed(acc_addr)
    a, b = torch.randn(T, 2 * T, generator=g).half(), torch.randn(2 * T, T, generator=g).half()
    c = torch.zeros(T, T)
    CompiledProgram(program(_kernel(acc_addr)), "out", None)(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)
