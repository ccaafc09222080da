"""OutlineIncoreScopes' implicit regions of Opaque functions (SPEC §5; Language Guide plain
`@pl.function`): a function that computes at tensor level and also calls other functions keeps its
calls on the orchestration side and runs each stretch of computing statements between them as its
own kernel. A user trial found `o[:] = helper(d)` in an Opaque function failing in codegen
("op 'tensor.assemble' computes on data and cannot run in host code")."""

import torch

import pypto.language as pl
from pypto import ir


@pl.function
def helper(d: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
    r = pl.add(d, 1.0)
    return r


@pl.program
class WholeSlice:
    @pl.function
    def main(self, d: pl.Tensor[[16, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o[:] = helper(d)
        return o


@pl.program
class BlocksAroundCalls:
    @pl.function
    def main(self, d: pl.Tensor[[32, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t = pl.mul(d, 3.0)
        for i in pl.range(2):
            blk = pl.slice(t, [16, 64], [i * 16, 0])
            u = helper(blk)
            o[i * 16:(i + 1) * 16, :] = pl.mul(u, 2.0)
        return o


def _kernel_calls(func) -> list[str]:  # type: ignore[no-untyped-def]
    text = func.as_python()
    return [line.split("= ")[1].split("(")[0] for line in text.splitlines() if "_incore_" in line and "= " in line]


def test_an_out_slice_assigned_from_a_function_call_is_copied_by_a_kernel():
    compiled = ir.compile(WholeSlice, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    main = compiled.program.get_function("main")
    assert main.func_type is pl.FunctionType.Opaque
    assert _kernel_calls(main) == ["main_incore_0"]  # the copy into o; helper stays a call
    assert "helper(d)" in main.as_python()
    d, o = torch.randn(16, 64), torch.zeros(16, 64)
    compiled(d, o)
    torch.testing.assert_close(o, d + 1.0)


def test_computing_statements_between_calls_become_kernels_inside_loops():
    compiled = ir.compile(BlocksAroundCalls, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    assert _kernel_calls(compiled.program.get_function("main")) == ["main_incore_0", "main_incore_1"]
    d, o = torch.randn(32, 64), torch.zeros(32, 64)
    compiled(d, o)
    torch.testing.assert_close(o, (d * 3.0 + 1.0) * 2.0)
