"""`@pl.jit.incore(level=...)` (Language Guide "@pl.jit family"; docs/language.md): an InCore kernel
runs on the cores of one cluster, so `level=` is CORE_GROUP (the default placement), AIC (cube core
only) or AIV (vector core only); a kernel doing the other core's work, or a level above the cores,
is an error at the user's line."""

import pytest
import torch
from marker_lines import assert_at

import pypto.language as pl
from pypto.core.errors import InvalidOperationError, ParserTypeError


def test_a_level_above_the_cores_is_rejected_at_the_decorator():
    with pytest.raises(ParserTypeError) as e:
        @pl.jit.incore(level=pl.Level.CHIP)  # MARK-chip-level
        def k(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            return y
    assert_at(e.value, __file__, "MARK-chip-level")
    assert e.value.message.startswith("@pl.jit.incore(level=pl.Level.CHIP): an InCore kernel runs on the cores "
                                      "of one cluster, so its level is pl.Level.CORE_GROUP")
    assert "'with pl.at(level=pl.Level.CHIP):'" in e.value.message
    with pytest.raises(ParserTypeError, match="expects a pl.Level, got 'AIV'"):
        @pl.jit.incore(level="AIV")
        def k2(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            return y


def test_an_aic_kernel_with_vector_ops_is_rejected_at_the_op():
    @pl.jit.incore(level=pl.Level.AIC)
    def add1(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [16, 64])
        t2 = pl.add(t, 1.0)  # MARK-vector-on-aic
        y = pl.store(t2, [0, 0], y)
        return y

    @pl.jit
    def entry(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        y = add1(x, y)
        return y

    with pytest.raises(InvalidOperationError) as e:
        entry(torch.randn(16, 64), torch.zeros(16, 64))
    assert_at(e.value, __file__, "MARK-vector-on-aic")
    assert e.value.message == (
        "'tile.adds' runs on a vector core (AIV), but kernel 'add1' is @pl.jit.incore(level=pl.Level.AIC), "
        "which runs only on the cube core (AIC); use level=pl.Level.AIV, or level=pl.Level.CORE_GROUP (the "
        "default) to let the compiler place each op")
    assert len(entry._cache) == 0


def test_an_aiv_kernel_with_a_nested_matmul_is_rejected():
    @pl.jit.incore(level=pl.Level.AIV)
    def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        c[:] = pl.matmul(a, b)  # MARK-matmul-on-aiv
        return c

    @pl.jit
    def entry(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        c = mm(a, b, c)
        return c

    a = torch.randn(32, 32, dtype=torch.float16)
    with pytest.raises(InvalidOperationError, match=r"'tensor.matmul' runs on the cube core \(AIC\), but kernel "
                                                     r"'mm' is @pl.jit.incore\(level=pl.Level.AIV\)") as e:
        entry(a, a, torch.zeros(32, 32))
    assert_at(e.value, __file__, "MARK-matmul-on-aiv")


def test_levels_that_match_the_kernel_run_and_are_recorded():
    @pl.jit.incore(level=pl.Level.AIV)
    def add1(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(pl.add(t, 1.0), [0, 0], y)
        return y

    @pl.jit.incore(level=pl.Level.AIC)
    def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        a0 = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(a0, b0), [0, 0], c)
        return c

    @pl.jit
    def entry(x: pl.Tensor, y: pl.Out[pl.Tensor], a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        y = add1(x, y)
        c = mm(a, b, c)
        return y, c

    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    a, b = torch.randn(32, 32, dtype=torch.float16), torch.randn(32, 32, dtype=torch.float16)
    c = torch.zeros(32, 32)
    entry(x, y, a, b, c)
    torch.testing.assert_close(y, x + 1.0)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    prog = entry.specialize(x, y, a, b, c)
    assert [(f.name, f.func_type, f.level) for f in prog.functions] == [  # sorted by name
        ("add1", pl.FunctionType.InCore, pl.Level.AIV), ("entry", pl.FunctionType.Orchestration, None),
        ("mm", pl.FunctionType.InCore, pl.Level.AIC)]
    assert "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.AIC)" in prog.as_python()


# ---- the same rules for @pl.function(type=InCore, level=...) and pl.at(level=...) ---------------
# A user trial: a vector op under `with pl.at(level=pl.Level.AIC)` or in
# `@pl.function(type=pl.FunctionType.InCore, level=pl.Level.AIC)` ran silently on a vector core.

_PLACE = "to let the compiler place each op"


def test_a_vector_op_in_a_pl_at_aic_region_is_rejected_at_the_op():
    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                with pl.at(level=pl.Level.AIC):  # MARK-at-aic
                    o[:] = pl.adds(x, 1.0)  # MARK-adds-in-aic-region
                return o
    assert_at(e.value, __file__, "MARK-adds-in-aic-region")
    line = e.value.span.begin_line - 1
    assert e.value.message == (
        f"'tensor.adds' runs on a vector core (AIV), but this code is in the 'with pl.at(level=pl.Level.AIC)' "
        f"region at line {line}, which runs only on the cube core (AIC); use level=pl.Level.AIV, or "
        f"level=pl.Level.CORE_GROUP (the default) {_PLACE}")


def test_a_matmul_in_a_pl_at_aiv_region_is_rejected_at_the_op():
    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                     c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
                with pl.at(level=pl.Level.AIV):
                    c[:] = pl.matmul(a, b)  # MARK-matmul-in-aiv-region
                return c
    assert_at(e.value, __file__, "MARK-matmul-in-aiv-region")
    assert e.value.message.startswith("'tensor.matmul' runs on the cube core (AIC), but this code is in the "
                                      "'with pl.at(level=pl.Level.AIV)' region at line ")
    assert e.value.message.endswith(", which runs only on a vector core (AIV); use level=pl.Level.AIC, or "
                                    f"level=pl.Level.CORE_GROUP (the default) {_PLACE}")


def test_pl_function_incore_levels_are_checked_like_jit_incore():
    with pytest.raises(InvalidOperationError) as e:
        @pl.function(type=pl.FunctionType.InCore, level=pl.Level.AIC)
        def k(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            y = pl.store(pl.exp(t), [0, 0], y)  # MARK-exp-on-aic-function
            return y
    assert_at(e.value, __file__, "MARK-exp-on-aic-function")
    assert e.value.message == (
        "'tile.exp' runs on a vector core (AIV), but kernel 'k' is @pl.function(type=pl.FunctionType.InCore, "
        "level=pl.Level.AIC), which runs only on the cube core (AIC); use level=pl.Level.AIV, or "
        f"level=pl.Level.CORE_GROUP (the default) {_PLACE}")
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP)  # MARK-function-chip-level
        def k2(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            return x
    assert_at(e.value, __file__, "MARK-function-chip-level")
    assert e.value.message.startswith("@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP): an InCore "
                                      "kernel runs on the cores of one cluster, so its level is pl.Level.CORE_GROUP")


def test_pl_at_regions_pinned_to_their_core_run():
    from pypto import ir

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
                 c: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
                 d: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> tuple[pl.Tensor[[32, 32], pl.FP32], pl.Tensor[[32, 32], pl.FP32]]:
            with pl.at(level=pl.Level.AIC):
                c[:] = pl.matmul(a, b)
            with pl.at(level=pl.Level.AIV):
                d[:] = pl.adds(c, 1.0)
            return c, d

    compiled = ir.compile(P, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    a, b = torch.randn(32, 32).half(), torch.randn(32, 32).half()
    c, d = torch.zeros(32, 32), torch.zeros(32, 32)
    compiled(a, b, c, d)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d, c + 1.0)
