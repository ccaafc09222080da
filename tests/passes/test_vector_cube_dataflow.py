"""Tensor-level mixed regions whose matmul operands are computed by vector ops (Language Guide
"InCore Scopes"; SPEC §5 ConvertTensorToTileOps / InferTileMemorySpace / ExpandMixedKernel, §6
"Allowed moves"): vector → cube (through DDR on Ascend910B, on chip into Mat on Ascend950),
cube → vector, both ways in a chain, under every split mode — checked against torch on both
simulators, and through the torch reference of every pass dump."""

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]
UD, LR = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT


@pl.jit
def cast_mm(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.matmul(pl.cast(a, pl.FP16), b)
    return y


@pl.jit
def muls_mm(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.matmul(pl.muls(a, 2.0), b)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_reported_kernel_casts_on_the_vector_unit_and_multiplies_on_the_cube_unit(platform):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g).half()
    y = torch.zeros(64, 64)
    cast_mm(a, b, y, config=RunConfig(platform=platform, sanitize=True))
    torch.testing.assert_close(y, a.half().float() @ b.float(), rtol=1e-3, atol=1e-3)
    kinds = {f.func_type for f in cast_mm.compile(a, b, y, config=RunConfig(platform=platform)).program.functions}
    assert {pl.FunctionType.AIC, pl.FunctionType.AIV, pl.FunctionType.Group} <= kinds
    a16 = a.half()
    y2 = torch.zeros(64, 64)
    muls_mm(a16, b, y2, config=RunConfig(platform=platform))
    torch.testing.assert_close(y2, (a16 * 2).float() @ b.float(), rtol=1e-3, atol=1e-3)


@pl.jit
def both_sides(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.matmul(pl.cast(a, pl.FP16), pl.cast(pl.muls(b, 0.5), pl.FP16), b_trans=True)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_both_operands_computed_on_the_vector_unit(platform):
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(64, 32, generator=g), torch.randn(48, 32, generator=g)
    y = torch.zeros(64, 48)
    both_sides(a, b, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, a.half().float() @ (b * 0.5).half().float().T, rtol=1e-3, atol=1e-3)


@pl.jit
def bias_ud(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(UD)]):
        y[:] = pl.matmul_bias(a, b, pl.muls(bias, 2.0))
    return y


@pl.jit
def bias_lr(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(LR)]):
        y[:] = pl.matmul_bias(a, b, pl.muls(bias, 2.0))
    return y


@pl.jit
def bias_none(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.matmul_bias(a, b, pl.muls(bias, 2.0))
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel", [bias_none, bias_ud, bias_lr], ids=["NONE", "UP_DOWN", "LEFT_RIGHT"])
def test_a_bias_row_scaled_on_the_vector_unit(kernel, platform):
    # under UP_DOWN the [1, 64] row is not halved: vector core 0 alone sends it (a second copy
    # would be left in the pipe, which the simulator reports)
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(64, 32, generator=g).half(), torch.randn(32, 64, generator=g).half()
    bias, y = torch.randn(1, 64, generator=g), torch.zeros(64, 64)
    kernel(a, b, bias, y, config=RunConfig(platform=platform, sanitize=True))
    torch.testing.assert_close(y, a.float() @ b.float() + 2 * bias, rtol=1e-3, atol=1e-3)


@pl.jit
def chain(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        h = pl.matmul(pl.cast(a, pl.FP16), b)
        h2 = pl.cast(pl.relu(h), pl.FP16)
        y[:] = pl.exp(pl.muls(pl.matmul(h2, c), 0.1))
    return y


@pl.jit
def chain_ud(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(UD)]):
        h = pl.matmul(pl.cast(a, pl.FP16), b)
        h2 = pl.cast(pl.relu(h), pl.FP16)
        y[:] = pl.exp(pl.muls(pl.matmul(h2, c), 0.1))
    return y


@pl.jit
def chain_lr(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(LR)]):
        h = pl.matmul(pl.cast(a, pl.FP16), b)
        h2 = pl.cast(pl.relu(h), pl.FP16)
        y[:] = pl.exp(pl.muls(pl.matmul(h2, c), 0.1))
    return y


def _chain_inputs():
    g = torch.Generator().manual_seed(3)
    return (torch.randn(64, 32, generator=g), (torch.randn(32, 64, generator=g) * 0.3).half(),
            (torch.randn(64, 32, generator=g) * 0.3).half())


def _chain_want(a, b, c):
    h2 = torch.relu(a.half().float() @ b.float()).half().float()
    return torch.exp((h2 @ c.float()) * 0.1)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel", [chain, chain_ud, chain_lr], ids=["NONE", "UP_DOWN", "LEFT_RIGHT"])
def test_vector_cube_vector_cube_vector_chain(kernel, platform):
    a, b, c = _chain_inputs()
    y = torch.zeros(64, 32)
    kernel(a, b, c, y, config=RunConfig(platform=platform, sanitize=True))
    torch.testing.assert_close(y, _chain_want(a, b, c), rtol=1e-3, atol=1e-3)


@pl.jit
def reused(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(UD)]):
        w = pl.cast(a, pl.FP16)
        for i in pl.range(4):
            bi = pl.muls(b[i * 16:(i + 1) * 16, :], 0.5)
            y[i * 16:(i + 1) * 16, :] = pl.add(pl.add(pl.matmul(bi, w), pl.matmul(bi, w, b_trans=True)),
                                               pl.cast(bi, pl.FP32))
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vector_results_used_twice_by_the_cube_unit_and_once_by_the_vector_unit(platform):
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(64, 64, generator=g) * 0.3, torch.randn(64, 64, generator=g).half()
    y = torch.zeros(64, 64)
    reused(a, b, y, config=RunConfig(platform=platform, sanitize=True))
    w, bh = a.half().float(), (b * 0.5).float()
    torch.testing.assert_close(y, bh @ w + bh @ w.T + bh, rtol=1e-3, atol=1e-3)
    # the weight crosses once, before the loop; each block of b once per iteration
    prog = reused.compile(a, b, y, config=RunConfig(platform=platform)).program
    text = next(f for f in prog.functions if f.func_type is pl.FunctionType.AIV).as_python()
    assert text.index("pl.system.tpush_to_aic(w_tile") < text.index("for i")
    assert text.count("pl.system.tpush_to_aic(") == 2


@pl.jit
def carried(a: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.muls(a, 0.5)
        for i in pl.range(3):
            x = pl.matmul(x, w)
        y[:] = x
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_loop_carried_value_goes_round_both_units(platform):
    g = torch.Generator().manual_seed(5)
    a, w = torch.randn(32, 32, generator=g), torch.randn(32, 32, generator=g) * 0.2
    y = torch.zeros(32, 32)
    carried(a, w, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, (a * 0.5) @ w @ w @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_pass_dump_of_the_chain_matches_torch(platform, tmp_path):
    a, b, c = _chain_inputs()
    y = torch.zeros(64, 32)
    cp = chain_ud.compile(a, b, c, y, config=RunConfig(platform=platform, dump_passes=True))
    rep = cp.validate_ir([a, b, c, y], _chain_want(a, b, c), rtol=1e-3, atol=1e-3)
    assert {s.status for s in rep.stages} == {"ok"}, str(rep)
    dumps = sorted((Path(cp.output_dir) / "passes_dump").glob("*.py"))
    assert len(rep.stages) == len(dumps) + 1
    expanded = next(f for f in dumps if f.name.endswith("_after_ExpandMixedKernel.py")).read_text()
    for op in ("tpush_to_aic", "tpop_from_aiv", "tpush_to_aiv", "tpop_from_aic"):
        assert f"pl.system.{op}(" in expanded
    # the standalone torch script of the compiled program gives the same numbers
    ns: dict = {}
    exec(torch_codegen(cp.program), ns)   # noqa: S102
    y2 = torch.zeros(64, 32)
    ns["run"](a, b, c, y2)
    torch.testing.assert_close(y2, _chain_want(a, b, c), rtol=1e-3, atol=1e-3)
    assert torch.equal(y, torch.zeros(64, 32))   # validate_ir leaves the caller's tensors alone
