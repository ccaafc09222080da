"""Language Guide: Operations — dispatch, Python operators, unified ops, subscript sugar."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError, SSAViolationError


def run(fn, *args):
    return ir.compile(ir.Program(fn.name, (fn,)), dump_passes=False)(*args)


def test_unified_dispatch_examples():
    @pl.function(type=pl.FunctionType.InCore)
    def k(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        # Explicit tile-level (when you need tile-specific ops)
        tile = pl.tile.load(a, [0, 0], [64, 64])
        tile = pl.tile.adds(tile, 1.0)
        tb = pl.load(b, [0, 0], [64, 64])
        result = pl.add(tile, tb)       # dispatches to tile.add
        result = pl.mul(result, 2.0)    # dispatches to tile.muls
        out = pl.store(result, [0, 0], out)
        return out

    text = k.as_python()
    assert "pl.tile.add(tile, tb)" in text and "pl.tile.muls(result, 2.0)" in text
    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    run(k, a, b, out)
    torch.testing.assert_close(out, (a + 1.0 + b) * 2.0)


def test_tensor_level_unified_ops():
    @pl.function
    def f(a: pl.Tensor[[16, 8], pl.FP32], b: pl.Tensor[[8, 16], pl.FP32]
          ) -> tuple[pl.Tensor[[16, 1], pl.FP32], pl.Tensor[[8, 1], pl.FP32]]:
        c = pl.add(a, 1.0)          # scalar rhs auto-detected
        c = pl.cast(c, pl.FP16)     # type cast
        c = pl.cast(c, pl.FP32)
        d = pl.reshape(c, [8, 16])  # shape operations
        m = pl.matmul(a, b)         # linear algebra
        s = pl.row_sum(m)           # reductions
        t = pl.row_sum(d)
        return s, t

    text = f.as_python()
    for op in ("tensor.adds", "tensor.cast", "tensor.reshape", "tensor.matmul", "tensor.row_sum"):
        assert f"pl.{op}(" in text
    a, b = torch.randn(16, 8), torch.randn(8, 16)
    c = (a + 1.0).half().float()
    s, t = run(f, a, b)
    torch.testing.assert_close(s, (a @ b).sum(-1, keepdim=True), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(t, c.reshape(8, 16).sum(-1, keepdim=True), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op,ir_op,ref", [("+", "add", torch.add), ("-", "sub", torch.sub),
                                          ("*", "mul", torch.mul), ("/", "div", torch.div)])
def test_python_arithmetic_operators(op, ir_op, ref):
    src = f'''
import pypto.language as pl

@pl.function
def f(a: pl.Tensor[[8, 16], pl.FP32], b: pl.Tensor[[8, 16], pl.FP32]) -> pl.Tensor[[8, 16], pl.FP32]:
    c = a {op} b
    return c
'''
    fn = pl.parse(src)
    assert f"pl.tensor.{ir_op}(a, b)" in fn.as_python()
    a, b = torch.randn(8, 16), torch.rand(8, 16) + 0.5
    torch.testing.assert_close(run(fn, a, b), ref(a, b))


@pytest.mark.parametrize("op,name", [("==", "eq"), ("!=", "ne"), ("<", "lt"), (">", "gt")])
def test_python_comparison_operators(op, name):
    src = f'''
import pypto.language as pl

@pl.function
def f(a: pl.Tensor[[8, 16], pl.FP32], b: pl.Tensor[[8, 16], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[8, 16], pl.UINT8]:
    m = a {op} b
    if n {op} 0:
        r = pl.yield_(m)
    else:
        r = pl.yield_(m)
    return r
'''
    fn = pl.parse(src)
    text = fn.as_python()
    assert f"pl.tensor.cmp(a, b, cmp_type='{name}')" in text
    assert f"if n {op} 0:" in text
    a = torch.randint(-2, 3, (8, 16)).float()
    b = torch.randint(-2, 3, (8, 16)).float()
    ref = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "gt": torch.gt}[name](a, b).to(torch.uint8)
    assert torch.equal(run(fn, a, b, 1), ref)


def test_subscript_sugar():
    @pl.function
    def f(A: pl.Tensor[[32, 64], pl.FP32], i: pl.Scalar[pl.INDEX], j: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        row = A[0:16, :]       # equivalent to pl.slice(A, [16, N], [0, 0])
        elem = A[i, j]         # equivalent to pl.tensor.read(A, [i, j])
        block = A[0:16, 0:32]  # equivalent to pl.slice(A, [16, 32], [0, 0])
        src = pl.add(block, elem)
        out[i:i + 16, j:j + 32] = src   # equivalent to out = pl.assemble(out, src, [i, j])
        out[16:32, :] = pl.mul(row, 2.0)
        return out

    text = f.as_python()
    assert "pl.tensor.slice(A, [16, 64], [0, 0])" in text
    assert "pl.tensor.read(A, [i, j])" in text
    assert "pl.tensor.slice(A, [16, 32], [0, 0])" in text
    assert "pl.tensor.assemble(out, src, [i, j])" in text
    ir.assert_structural_equal(pl.parse(text), f)
    A, out = torch.randn(32, 64), torch.zeros(32, 64)
    run(f, A, 0, 32, out)
    expected = torch.zeros(32, 64)
    expected[0:16, 32:64] = A[0:16, 0:32] + A[0, 32]
    expected[16:32, :] = A[0:16, :] * 2.0
    torch.testing.assert_close(out, expected)


def test_subscript_negative_indices_count_from_the_end():
    """Python's meaning: A[-16:, :] is the last 16 rows, A[:, :-32] all but the last 32 columns,
    A[-1, -1] the last element, on the right and on the left of `=`; on a dynamic dimension a
    negative index is an error that says how to write it."""
    @pl.function
    def f(A: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        tail = A[-16:, :-32]
        out[-16:, -32:] = pl.add(tail, A[-1, -1])
        return out

    assert "pl.tensor.slice(A, [16, 32], [16, 0])" in f.as_python()
    A, out = torch.randn(32, 64), torch.zeros(32, 64)
    run(f, A, out)
    expected = torch.zeros(32, 64)
    expected[-16:, -32:] = A[-16:, :-32] + A[-1, -1]
    torch.testing.assert_close(out, expected)

    M = pl.dynamic("M")
    with pytest.raises(ParserTypeError, match=r"a negative index \(-1\) counts from the end of dimension 'M', "
                                              r"whose size is known only at run time: write it as M - 1"):
        @pl.function
        def g(A: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
            out[:, :] = A[-1:M, :]
            return out


def test_augmented_assignment_to_a_subscript():
    """`out[i:i+16, :] += v` is the write sugar applied to `out[i:i+16, :] + v`."""
    @pl.function
    def f(A: pl.Tensor[[16, 64], pl.FP32], out: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        out[16:32, :] += A
        out[0:16, 0:32] *= 2.0
        return out

    A, out = torch.randn(16, 64), torch.randn(32, 64)
    expected = out.clone()
    expected[16:32] += A
    expected[0:16, 0:32] *= 2.0
    run(f, A, out)
    torch.testing.assert_close(out, expected)


def test_subscript_write_rejected_under_strict_ssa():
    with pytest.raises(SSAViolationError, match="use pl.assemble"):
        @pl.function(strict_ssa=True)
        def f(out: pl.Out[pl.Tensor[[32, 64], pl.FP32]], src: pl.Tensor[[16, 32], pl.FP32]
              ) -> pl.Tensor[[32, 64], pl.FP32]:
            out[0:16, 0:32] = src
            return out
