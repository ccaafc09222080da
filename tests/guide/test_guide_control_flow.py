"""Language Guide: Control Flow — every example, run on the simulator against Python/torch."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserSyntaxError, ParserTypeError


def run(fn_or_prog, *args):
    prog = fn_or_prog if isinstance(fn_or_prog, ir.Program) else ir.Program(fn_or_prog.name, (fn_or_prog,))
    return ir.compile(prog, dump_passes=False)(*args)


@pytest.mark.parametrize("bounds,expected", [((10,), list(range(10))), ((2, 10), list(range(2, 10))),
                                             ((0, 100, 4), list(range(0, 100, 4))),
                                             ((9, -1, -3), list(range(9, -1, -3)))])
def test_range_forms_visit_the_python_iterations(bounds, expected):
    n = len(bounds)
    src = f'''
import pypto.language as pl

@pl.function
def visits(x: pl.Tensor[[128, 8], pl.FP32]) -> pl.Tensor[[1, 8], pl.FP32]:
    acc = pl.create_tensor([1, 8], dtype=pl.FP32)
    acc = pl.mul(acc, 0.0)
    for i in pl.range({", ".join(map(str, bounds))}):
        acc = pl.add(acc, pl.slice(x, [1, 8], [i, 0]))
    return acc
'''
    fn = pl.parse(src)
    x = torch.randn(128, 8)
    y = run(fn, x)
    torch.testing.assert_close(y, x[expected].sum(0, keepdim=True), rtol=1e-5, atol=1e-5)
    assert n == len(bounds)


def test_sum_16_elements():
    @pl.function
    def sum_16_elements(data: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[1], pl.FP32]:
        init_sum: pl.Tensor[[1], pl.FP32] = pl.create_tensor([1], dtype=pl.FP32)

        for i, (running_sum,) in pl.range(16, init_values=(init_sum,)):
            chunk: pl.Tensor[[1], pl.FP32] = pl.slice(data, [1], [i])
            new_sum: pl.Tensor[[1], pl.FP32] = pl.add(running_sum, chunk)
            sum_out: pl.Tensor[[1], pl.FP32] = pl.yield_(new_sum)

        # sum_out holds the final accumulated value after the loop
        return sum_out

    data = torch.randn(16)
    torch.testing.assert_close(run(sum_16_elements, data), data.sum().reshape(1), rtol=1e-5, atol=1e-5)


def test_find_max_and_sum():
    @pl.function
    def find_max_and_sum(
        data: pl.Tensor[[4, 64], pl.FP32],
    ) -> pl.Tensor[[1, 64], pl.FP32]:
        init_max: pl.Tensor[[1, 64], pl.FP32] = pl.create_tensor([1, 64], dtype=pl.FP32)
        init_sum: pl.Tensor[[1, 64], pl.FP32] = pl.create_tensor([1, 64], dtype=pl.FP32)

        for i, (acc_max, acc_sum) in pl.range(4, init_values=(init_max, init_sum)):
            row: pl.Tensor[[1, 64], pl.FP32] = pl.slice(data, [1, 64], [i, 0])
            new_max: pl.Tensor[[1, 64], pl.FP32] = pl.maximum(acc_max, row)
            new_sum: pl.Tensor[[1, 64], pl.FP32] = pl.add(acc_sum, row)
            out_max, out_sum = pl.yield_(new_max, new_sum)

        return out_sum

    data = torch.randn(4, 64)
    torch.testing.assert_close(run(find_max_and_sum, data), data.sum(0, keepdim=True), rtol=1e-5, atol=1e-5)


def test_parallel_loop():
    @pl.function
    def scale_blocks(x: pl.Tensor[[64, 32], pl.FP32], num_blocks: pl.Scalar[pl.INDEX],
                     y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.parallel(0, num_blocks):
            # iterations are independent, can run in parallel
            y[i * 16:i * 16 + 16, :] = pl.mul(pl.slice(x, [16, 32], [i * 16, 0]), 2.0)
        return y

    assert "pl.parallel(0, num_blocks, 1)" in scale_blocks.as_python()
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    run(scale_blocks, x, 4, y)
    torch.testing.assert_close(y, x * 2)


def test_while_loop():
    @pl.function
    def count(x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:
        acc = pl.mul(x, 1.0)
        for (x_it, a) in pl.while_(init_values=(0, acc)):
            pl.cond(x_it < 10)          # continue while x < 10
            new_x = x_it + 1
            a2 = pl.add(a, 1.0)
            x_out, a_out = pl.yield_(new_x, a2)
        return a_out

    x = torch.randn(8)
    torch.testing.assert_close(run(count, x), x + 10.0)


def test_guide_while_example_parses_and_round_trips():
    @pl.function
    def f(a: pl.Tensor[[4], pl.FP32]) -> pl.Tensor[[4], pl.FP32]:
        for (x,) in pl.while_(init_values=(0,)):
            pl.cond(x < 10)          # continue while x < 10
            new_x = x + 1
            x_out = pl.yield_(new_x)
        return a

    ir.assert_structural_equal(pl.parse(f.as_python()), f)


def test_conditional_update():
    @pl.function
    def conditional_update(
        a: pl.Tensor[[64], pl.FP32],
        delta: pl.Tensor[[64], pl.FP32],
    ) -> pl.Tensor[[64], pl.FP32]:
        init: pl.Tensor[[64], pl.FP32] = pl.create_tensor([64], dtype=pl.FP32)

        for i, (prev,) in pl.range(4, init_values=(init,)):
            if i == 0:
                result: pl.Tensor[[64], pl.FP32] = pl.yield_(a)
            else:
                updated: pl.Tensor[[64], pl.FP32] = pl.add(prev, delta)
                result: pl.Tensor[[64], pl.FP32] = pl.yield_(updated)
            # result holds whichever branch executed
            out: pl.Tensor[[64], pl.FP32] = pl.yield_(result)

        return out

    a, d = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(run(conditional_update, a, d), a + 3 * d, rtol=1e-5, atol=1e-5)


def test_if_branches_must_agree():
    with pytest.raises(ParserSyntaxError, match="if one branch yields, the other must too"):
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            if n == 0:
                r = pl.yield_(a)
            else:
                b = pl.add(a, 1.0)
            return a

    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def g(a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            if n == 0:
                r = pl.yield_(a)
            else:
                r = pl.yield_(pl.cast(a, pl.FP16))
            return a
    msg = ei.value.message
    assert "then-branch pl.Tensor[[64], pl.FP32]" in msg and "else-branch pl.Tensor[[64], pl.FP16]" in msg

    with pytest.raises(ParserTypeError, match="then-branch yields 1 .* else-branch yields 2"):
        @pl.function
        def h(a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            if n == 0:
                r = pl.yield_(a)
            else:
                r, s = pl.yield_(a, a)
            return a


def test_break_rejected_in_parallel_loop():
    with pytest.raises(ParserSyntaxError, match="parallel"):
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            for i in pl.parallel(4):
                if i == 2:
                    break
            return a


def test_loop_local_temporaries_are_not_loop_carried():
    @pl.function
    def f(x: pl.Tensor[[4, 8], pl.FP32]) -> pl.Tensor[[1, 8], pl.FP32]:
        acc = pl.mul(pl.slice(x, [1, 8], [0, 0]), 0.0)
        for i in pl.range(4):
            tmp = pl.slice(x, [1, 8], [i, 0])  # defined in the body only: stays local
            acc = pl.add(acc, tmp)
        return acc

    from pypto.passes.base import PassContext
    from pypto.passes.convert_to_ssa import ConvertToSSA

    prog = ConvertToSSA().run(ir.Program("p", (f,)), PassContext())
    loop = [s for s in prog.functions[0].body.stmts if isinstance(s, ir.ForStmt)][0]
    assert [ia.name for ia in loop.iter_args] == ["acc"]
    x = torch.randn(4, 8)
    torch.testing.assert_close(run(f, x), x.sum(0, keepdim=True), rtol=1e-5, atol=1e-5)
