"""Building blocks shared by the model examples: kernel factories, compile/run helpers, checks.

Every factory returns a tile-level InCore kernel (a `@pl.function`) specialised by the sizes it is
given; the sizes are closure constants of the kernel body, so one factory serves every model. A
kernel works on one block of the output; the orchestration functions of the models dispatch one task
per block with `pl.slice` views as arguments, so independent blocks run on different cores.

Kernels (all FP32 on the vector unit; matmul operands FP16 or FP32, accumulated in FP32):

- `linear_kernel(BM, BN, BK, dtype, bias=...)`: y [BM, BN] = x [BM, K] @ w [K, BN] (+ b [1, BN]),
  K walked in blocks of BK (`nk` = K / BK blocks); operands DDR -> Mat -> Left/Right, the sum in
  Acc, the bias through Bias memory. Weights are stored [in, out] (a torch Linear's weight
  transposed once when the model is loaded). `dense_function(M, K, N, ...)` is the inline helper
  that dispatches it over every block of an [M, N] result.
- `rmsnorm_kernel(BR, N, eps)`: y = x * rsqrt(mean(x^2) + eps) * w, FP16 result (LLaMA).
- `add_rmsnorm_kernel(BR, N, eps)`: s = x + d (FP32, stored) and y = RMSNorm(s) * w (FP16).
- `add_layernorm_kernel(BR, N, eps)`: y = LayerNorm(x + d) * gamma + beta (BERT's residual + norm).
- `add_kernel(BR, N)`: y = x + d (a residual).
- `gelu_kernel(BR, N)`: the exact (erf) GELU.
- `swiglu_kernel(BR, N)`: SiLU(g) * u, FP16 result.

Capacities (SPEC §6): operand tiles of [BM, BK] / [BK, BN] must fit Left / Right (64 KiB, two
of them live while the K loop runs); the FP32 [BM, BN] accumulator fits Acc (128 KiB on
Ascend910B); a bias row of BN FP32 values fits Bias (1 KiB on Ascend910B: BN <= 256); vector
kernels keep a few [BR, N] FP32 tiles in Vec (184 KiB). MemoryCapacityError names the kernel when
a choice does not fit.

These modules do not use `from __future__ import annotations`: a kernel's annotations name the
factory's arguments (`BM`, `dtype`, ...), which Python keeps in the kernel's closure only when the
annotations are evaluated where they are written.
"""

import math
import time
from dataclasses import dataclass, field

import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.runtime import RunConfig

__all__ = ["linear_kernel", "dense_function", "rmsnorm_kernel", "add_rmsnorm_kernel", "add_layernorm_kernel", "add_kernel",
           "gelu_kernel", "swiglu_kernel", "compile_program", "run_program", "Timings", "report", "BACKENDS"]

BACKENDS = {"a2a3sim": BackendType.Ascend910B, "a5sim": BackendType.Ascend950}

# erf(z) for z >= 0 as 1 - t * poly(t) * exp(-z^2), t = 1 / (1 + P z): Abramowitz & Stegun 7.1.26,
# absolute error below 1.5e-7 (at the level of FP32 rounding of the result).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def linear_kernel(BM: int, BN: int, BK: int, dtype, *, bias: bool = False):
    """y [BM, BN] FP32 = x [BM, K] @ w [K, BN] (+ b [1, BN] FP32) for any K that is `nk` * BK.

    `x` and `w` are FP16 or FP32 (`dtype`); the kernel runs on the cube unit (AIC). With `bias`
    the first K block uses `matmul_bias` (the bias row goes DDR -> Mat -> Bias), the others
    `matmul_acc`. Kernel name: `linear` or `linear_bias`.
    """
    K = pl.dynamic("K")

    @pl.inline
    def k_blocks(acc: pl.Tile[[BM, BN], pl.FP32, pl.Mem.Acc], x: pl.Tensor[[BM, K], dtype],
                 w: pl.Tensor[[K, BN], dtype], nk: pl.Scalar[pl.INDEX]) -> pl.Tile[[BM, BN], pl.FP32, pl.Mem.Acc]:
        for k in pl.range(1, nk):
            xk = pl.load(x, [0, k * BK], [BM, BK], target_memory=pl.Mem.Mat)
            wk = pl.load(w, [k * BK, 0], [BK, BN], target_memory=pl.Mem.Mat)
            acc = pl.matmul_acc(acc, pl.move(xk, target_memory=pl.Mem.Left), pl.move(wk, target_memory=pl.Mem.Right))
        return acc

    if not bias:
        @pl.function(type=pl.FunctionType.InCore)
        def linear(x: pl.Tensor[[BM, K], dtype], w: pl.Tensor[[K, BN], dtype], nk: pl.Scalar[pl.INDEX],
                   y: pl.Out[pl.Tensor[[BM, BN], pl.FP32]]):
            x0 = pl.move(pl.load(x, [0, 0], [BM, BK], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            w0 = pl.move(pl.load(w, [0, 0], [BK, BN], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = k_blocks(pl.matmul(x0, w0), x, w, nk)
            y = pl.store(acc, [0, 0], y)
        return linear

    @pl.function(type=pl.FunctionType.InCore)
    def linear_bias(x: pl.Tensor[[BM, K], dtype], w: pl.Tensor[[K, BN], dtype], b: pl.Tensor[[1, BN], pl.FP32],
                    nk: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[BM, BN], pl.FP32]]):
        x0 = pl.move(pl.load(x, [0, 0], [BM, BK], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        w0 = pl.move(pl.load(w, [0, 0], [BK, BN], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        b0 = pl.move(pl.load(b, [0, 0], [1, BN], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Bias)
        acc = k_blocks(pl.matmul_bias(x0, w0, b0), x, w, nk)
        y = pl.store(acc, [0, 0], y)
    return linear_bias


def dense_function(M: int, K: int, N: int, BM: int, BN: int, BK: int, dtype, *, bias: bool = False):
    """An inline helper of Orchestration code: `y = dense(x, w, y)` (or `dense(x, w, b, y)` with
    `bias`) computes y [M, N] FP32 = x [M, K] @ w [K, N] (+ b [1, N]) with one `linear_kernel` task
    per [BM, BN] block of y; the tasks are independent (`pl.parallel`).

    Raises:
        ValueError: M, N or K not a multiple of BM, BN or BK.
    """
    for name, n, b in (("M", M, BM), ("N", N, BN), ("K", K, BK)):
        if n % b:
            raise ValueError(f"{name}={n} is not a multiple of its block size {b}")
    linear = linear_kernel(BM, BN, BK, dtype, bias=bias)
    if not bias:
        @pl.inline
        def dense(x: pl.Tensor[[M, K], dtype], w: pl.Tensor[[K, N], dtype],
                  y: pl.Tensor[[M, N], pl.FP32]) -> pl.Tensor[[M, N], pl.FP32]:
            for i in pl.parallel(M // BM):
                for j in pl.parallel(N // BN):
                    linear(pl.slice(x, [BM, K], [i * BM, 0]), pl.slice(w, [K, BN], [0, j * BN]), K // BK,
                           pl.slice(y, [BM, BN], [i * BM, j * BN]))
            return y
        return dense

    @pl.inline
    def dense_bias(x: pl.Tensor[[M, K], dtype], w: pl.Tensor[[K, N], dtype], b: pl.Tensor[[1, N], pl.FP32],
                   y: pl.Tensor[[M, N], pl.FP32]) -> pl.Tensor[[M, N], pl.FP32]:
        for i in pl.parallel(M // BM):
            for j in pl.parallel(N // BN):
                linear(pl.slice(x, [BM, K], [i * BM, 0]), pl.slice(w, [K, BN], [0, j * BN]),
                       pl.slice(b, [1, BN], [0, j * BN]), K // BK, pl.slice(y, [BM, BN], [i * BM, j * BN]))
        return y
    return dense_bias


def _vector_helpers(BR: int, N: int):
    """Inline helpers on [BR, N] FP32 tiles (closure constants BR, N)."""

    @pl.inline
    def rms_normalize(x: pl.Tile[[BR, N], pl.FP32], w: pl.Tile[[1, N], pl.FP32],
                      eps: pl.Scalar[pl.FP32]) -> pl.Tile[[BR, N], pl.FP32]:
        """x * rsqrt(mean(x^2) + eps) * w."""
        scratch = pl.create_tile([BR, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        ms = pl.muls(pl.row_sum(pl.mul(x, x), scratch), 1.0 / N)
        y = pl.col_expand_mul(pl.row_expand_mul(x, pl.rsqrt(pl.adds(ms, eps))), w)
        return y

    @pl.inline
    def layer_normalize(x: pl.Tile[[BR, N], pl.FP32], gamma: pl.Tile[[1, N], pl.FP32],
                        beta: pl.Tile[[1, N], pl.FP32], eps: pl.Scalar[pl.FP32]) -> pl.Tile[[BR, N], pl.FP32]:
        """(x - mean) * rsqrt(var + eps) * gamma + beta, statistics per row (biased variance)."""
        scratch = pl.create_tile([BR, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        xc = pl.row_expand_sub(x, pl.muls(pl.row_sum(x, scratch), 1.0 / N))
        var = pl.muls(pl.row_sum(pl.mul(xc, xc), scratch), 1.0 / N)
        normed = pl.row_expand_mul(xc, pl.rsqrt(pl.adds(var, eps)))
        y = pl.col_expand_add(pl.col_expand_mul(normed, gamma), beta)
        return y

    return rms_normalize, layer_normalize


def rmsnorm_kernel(BR: int, N: int, eps: float):
    """`rmsnorm(x [BR, N] FP32, w [1, N] FP32, y Out [BR, N] FP16)`: y = RMSNorm(x) * w."""
    rms_normalize, _ = _vector_helpers(BR, N)

    @pl.function(type=pl.FunctionType.InCore)
    def rmsnorm(x: pl.Tensor[[BR, N], pl.FP32], w: pl.Tensor[[1, N], pl.FP32],
                y: pl.Out[pl.Tensor[[BR, N], pl.FP16]]):
        normed = rms_normalize(pl.load(x, [0, 0], [BR, N]), pl.load(w, [0, 0], [1, N]), eps)
        y = pl.store(pl.cast(normed, pl.FP16), [0, 0], y)
    return rmsnorm


def add_rmsnorm_kernel(BR: int, N: int, eps: float):
    """`add_rmsnorm(x, d, w, s Out, y Out)`: s = x + d (FP32 [BR, N]), y = RMSNorm(s) * w (FP16)."""
    rms_normalize, _ = _vector_helpers(BR, N)

    @pl.function(type=pl.FunctionType.InCore)
    def add_rmsnorm(x: pl.Tensor[[BR, N], pl.FP32], d: pl.Tensor[[BR, N], pl.FP32], w: pl.Tensor[[1, N], pl.FP32],
                    s: pl.Out[pl.Tensor[[BR, N], pl.FP32]], y: pl.Out[pl.Tensor[[BR, N], pl.FP16]]):
        total = pl.add(pl.load(x, [0, 0], [BR, N]), pl.load(d, [0, 0], [BR, N]))
        s = pl.store(total, [0, 0], s)
        y = pl.store(pl.cast(rms_normalize(total, pl.load(w, [0, 0], [1, N]), eps), pl.FP16), [0, 0], y)
    return add_rmsnorm


def add_layernorm_kernel(BR: int, N: int, eps: float):
    """`add_layernorm(x, d, gamma, beta, y Out)`: y = LayerNorm(x + d) * gamma + beta, all FP32
    [BR, N] (gamma, beta [1, N]); BERT's `LayerNorm(hidden + residual)`."""
    _, layer_normalize = _vector_helpers(BR, N)

    @pl.function(type=pl.FunctionType.InCore)
    def add_layernorm(x: pl.Tensor[[BR, N], pl.FP32], d: pl.Tensor[[BR, N], pl.FP32],
                      gamma: pl.Tensor[[1, N], pl.FP32], beta: pl.Tensor[[1, N], pl.FP32],
                      y: pl.Out[pl.Tensor[[BR, N], pl.FP32]]):
        total = pl.add(pl.load(x, [0, 0], [BR, N]), pl.load(d, [0, 0], [BR, N]))
        normed = layer_normalize(total, pl.load(gamma, [0, 0], [1, N]), pl.load(beta, [0, 0], [1, N]), eps)
        y = pl.store(normed, [0, 0], y)
    return add_layernorm


def add_kernel(BR: int, N: int):
    """`add(x, d, y Out)`: y = x + d on FP32 [BR, N] blocks (a residual connection)."""

    @pl.function(type=pl.FunctionType.InCore)
    def add(x: pl.Tensor[[BR, N], pl.FP32], d: pl.Tensor[[BR, N], pl.FP32], y: pl.Out[pl.Tensor[[BR, N], pl.FP32]]):
        y = pl.store(pl.add(pl.load(x, [0, 0], [BR, N]), pl.load(d, [0, 0], [BR, N])), [0, 0], y)
    return add


def gelu_kernel(BR: int, N: int):
    """`gelu(h [BR, N] FP32, y Out [BR, N] FP32)`: the exact GELU 0.5 x (1 + erf(x / sqrt(2))).

    Since x erf(x / sqrt 2) = |x| erf(|x| / sqrt 2), GELU(x) = 0.5 (x + |x| erf(|x| / sqrt 2)), and
    erf of a non-negative argument is 1 - t poly(t) exp(-z^2) with t = 1 / (1 + p z) (Abramowitz &
    Stegun 7.1.26, |error| < 1.5e-7): abs, muls, adds, recip, mul, exp — no select needed.
    """
    a1, a2, a3, a4, a5 = _ERF_A

    @pl.function(type=pl.FunctionType.InCore)
    def gelu(h: pl.Tensor[[BR, N], pl.FP32], y: pl.Out[pl.Tensor[[BR, N], pl.FP32]]):
        x = pl.load(h, [0, 0], [BR, N])
        ax = pl.abs(x)
        z = pl.muls(ax, _INV_SQRT2)
        t = pl.recip(pl.adds(pl.muls(z, _ERF_P), 1.0))
        poly = pl.adds(pl.muls(t, a5), a4)
        poly = pl.adds(pl.mul(poly, t), a3)
        poly = pl.adds(pl.mul(poly, t), a2)
        poly = pl.adds(pl.mul(poly, t), a1)
        poly = pl.mul(poly, t)
        erf = pl.adds(pl.neg(pl.mul(poly, pl.exp(pl.neg(pl.mul(z, z))))), 1.0)
        y = pl.store(pl.muls(pl.add(x, pl.mul(ax, erf)), 0.5), [0, 0], y)
    return gelu


def swiglu_kernel(BR: int, N: int):
    """`swiglu(g, u, a Out)`: a = SiLU(g) * u = g * u / (1 + exp(-g)); g, u FP32 [BR, N], a FP16."""

    @pl.function(type=pl.FunctionType.InCore)
    def swiglu(g: pl.Tensor[[BR, N], pl.FP32], u: pl.Tensor[[BR, N], pl.FP32], a: pl.Out[pl.Tensor[[BR, N], pl.FP16]]):
        gt = pl.load(g, [0, 0], [BR, N])
        gate = pl.mul(gt, pl.recip(pl.adds(pl.exp(pl.neg(gt)), 1.0)))
        a = pl.store(pl.cast(pl.mul(gate, pl.load(u, [0, 0], [BR, N])), pl.FP16), [0, 0], a)
    return swiglu


# ---- compiling, running and reporting ---------------------------------------------------------

@dataclass
class Timings:
    """Wall-clock seconds of a model run and the simulated schedule of its last call.

    Attributes:
        compile_s: `ir.compile` wall time (seconds). simulate_s: wall time of the simulated calls.
        tasks: tasks of the last call. cycles: its simulated makespan (cycles).
        calls: how many program calls `simulate_s` covers.
        extra: "compiled": the CompiledProgram of the last call (its tasks, build folder, IR).
    """

    compile_s: float = 0.0
    simulate_s: float = 0.0
    tasks: int = 0
    cycles: int = 0
    calls: int = 0
    extra: dict = field(default_factory=dict)

    def line(self) -> str:
        return (f"compile {self.compile_s:.2f} s, simulate {self.simulate_s:.2f} s ({self.calls} call(s), "
                f"{self.tasks} tasks, {self.cycles} simulated cycles in the last)")


def compile_program(program, platform: str, timings: Timings):
    """`ir.compile(program)` for the chip of `platform` ("a2a3sim" or "a5sim"), timed into `timings`.

    Pass dumps are off (the models are large; `ir.compile(..., dump_passes=True)` writes them).
    """
    t0 = time.perf_counter()
    compiled = ir.compile(program, backend_type=BACKENDS[platform], platform=platform, dump_passes=False)
    timings.compile_s += time.perf_counter() - t0
    return compiled


def run_program(compiled, args, timings: Timings, sanitize: bool = False):
    """Call `compiled(*args)` on the simulator, timed into `timings`; with `sanitize` under the
    simulator's sanitizer (uninitialised on-chip reads, overlapping live buffers, DDR accesses out of
    bounds, unordered conflicting tasks raise SanitizerError)."""
    config = RunConfig(platform=compiled.platform, sanitize=sanitize)
    t0 = time.perf_counter()
    result = compiled(*args, config=config)
    timings.simulate_s += time.perf_counter() - t0
    timings.calls += 1
    timings.tasks = len(compiled.tasks)
    run = compiled.last_run
    timings.cycles = run.makespan_cycles if run is not None else 0
    timings.extra["compiled"] = compiled
    return result


def report(name: str, got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> bool:
    """Print `PASS`/`FAIL <name>` with the largest absolute error; True when within tolerance."""
    err = (got.float() - expected.float()).abs().max().item()
    ok = got.shape == expected.shape and torch.allclose(got.float(), expected.float(), rtol=rtol, atol=atol)
    print(f"{'PASS' if ok else 'FAIL'} {name}: max abs error {err:.3g} (rtol {rtol:g}, atol {atol:g})")
    return ok
