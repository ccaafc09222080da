"""Roofline calibration: how close do tiled kernels come to the simulated chip's peaks?

    python benchmarks/roofline.py [--small]

Kernels over all cores of their type on Ascend910B (one block per task, `pl.parallel`):

(a) a FP16 matmul C [M, N] FP32 = A [M, K] @ B [K, N] written the plain way: one task per 128 x 128
    block of C (24 blocks, one per cube core), each looping over K in 128-steps (DDR -> Mat ->
    Left/Right -> Acc), one buffer per tile;
(a') the same with 128 x 256 blocks of C (M doubled to keep 24 blocks): twice the cube work per
    load of A, and rows of B as wide as the DDR access granule (512 B);
(c) the matmul as a kernel author tunes it (`tuned_matmul_program`): 128 x 256 blocks of C (Acc
    full), K in 256-chunks loaded into L1 with 512-byte rows and 32-steps extracted into L0, both
    loops double-buffered with `pl.pipeline(stage=2)`, and a problem large enough (384 blocks, 16
    per core) that the launch, the orchestrator's submissions and the last wave weigh little;
(b) a large FP32 elementwise add c = a + b: one task per row block (48 blocks, one per vector
    core), each looping over its block in [R, TC] tiles, compared with the chip's peak DDR
    bandwidth (`cost_model.peak_ddr_bytes_per_cycle`, the shared HBM of `bandwidth.DdrChannel`).

Every result is checked against torch first. Simulated FLOP/s and bytes/s use the simulated
makespan (orchestrator submission and task launch included) and the clock of the cost model; the
numbers are simulated time, not this machine's speed. "fraction" is simulated / peak: it can never
exceed 1 (tests/runtime/test_rt_roofline.py checks it on small shapes). The bandwidth is the HBM
traffic: the lines of the tasks' loads that the chip's L2 cache missed, and their stores
(`l2cache.L2Cache`); what the cores moved (L2 hits included) is printed next to it.

Targets of issue 14: the tuned matmul above 70 % of peak cube throughput, the elementwise op above
70 % of peak bandwidth; both are met (docs/performance.md, "Calibration"). The plain matmuls (a),
(a') are not: their loads into single buffers wait for the cube, and the cube for the loads.

Each case's build is kept in `build_output/roofline/<case>/` (`$PYPTO_PROG_BUILD_DIR` instead of
`build_output` when set; a rerun replaces it): the performance hints the compiler points to on stderr
are in its `report/perf_hints.log` (and the run's in `report/perf_hints_run.log`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import torch

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT / "src"))

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.backend.soc import BackendType, get_soc  # noqa: E402
from pypto.runtime.sim.cost_model import (  # noqa: E402
    const,
    ddr_bytes_of,
    peak_ddr_bytes_per_cycle,
    peak_flops_per_cycle,
)

SOC = get_soc(BackendType.Ascend910B)


def _blocked_matmul(kernel, m: int, n: int, k: int, tm: int, tn: int):
    """The program running `kernel` (an InCore function C[tm, tn] = A[tm, k] @ B[k, tn]) once per
    tm x tn block of C[m, n] (FP32) = A[m, k] @ B[k, n] (FP16), the blocks as parallel tasks."""

    @pl.program
    class Matmul:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[m, k], pl.FP16], b: pl.Tensor[[k, n], pl.FP16],
                 c: pl.Out[pl.Tensor[[m, n], pl.FP32]]) -> pl.Tensor[[m, n], pl.FP32]:
            for i in pl.parallel(m // tm):   # m, n used in the body: closure names of the annotations
                for j in pl.parallel(n // tn):
                    sc = pl.slice(c, [tm, tn], [i * tm, j * tn])
                    sc = kernel(pl.slice(a, [tm, k], [i * tm, 0]), pl.slice(b, [k, tn], [0, j * tn]), sc)
            return c

    return Matmul


def matmul_program(blocks_m: int, blocks_n: int, k: int, tm: int = 128, tn: int = 128, tk: int = 128):
    """C [bm*tm, bn*tn] FP32 = A [bm*tm, k] FP16 @ B [k, bn*tn] FP16, one task per tm x tn block
    of C, each looping over K in tk-steps. `k` is a multiple of `tk`."""
    m, n = blocks_m * tm, blocks_n * tn

    @pl.function(type=pl.FunctionType.InCore)
    def mm_block(a: pl.Tensor[[tm, k], pl.FP16], b: pl.Tensor[[k, tn], pl.FP16],
                 c: pl.Out[pl.Tensor[[tm, tn], pl.FP32]]) -> pl.Tensor[[tm, tn], pl.FP32]:
        a0 = pl.load(a, [0, 0], [tm, tk], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [tk, tn], target_memory=pl.Mem.Mat)
        acc0 = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
        for kk, (acc,) in pl.range(tk, k, tk, init_values=(acc0,)):
            ak = pl.load(a, [0, kk], [tm, tk], target_memory=pl.Mem.Mat)
            bk = pl.load(b, [kk, 0], [tk, tn], target_memory=pl.Mem.Mat)
            nacc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                 pl.move(bk, target_memory=pl.Mem.Right))
            out = pl.yield_(nacc)
        c = pl.store(out, [0, 0], c)
        return c

    return _blocked_matmul(mm_block, m, n, k, tm, tn)


def tuned_matmul_program(blocks_m: int, blocks_n: int, k: int, tm: int = 128, tn: int = 256, tk1: int = 256,
                         tk0: int = 32, stage: int = 2):
    """Case (c): the matmul as a kernel author tunes it. One task per tm x tn block of C (128 x 256
    FP32 fills Acc, 128 KiB), K in chunks of tk1 loaded into L1 (A 128 x 256 and B 256 x 256 FP16:
    512-byte rows, whole DDR granules) and, inside a chunk, tk0-steps extracted into L0 for the
    cube; both loops `pl.pipeline(stage=2)`: the loads of chunk i+1 (MTE2) and the extracts of step
    j+1 (MTE1) overlap the cube's work on step j. The first chunk is peeled (its first step starts
    the accumulator with `pl.matmul`) and runs as a plain loop: every pipelined loop gets its own
    copies of the L0 buffers, and Right (64 KiB) holds four 16 KiB copies, not six. `k` is a
    multiple of `tk1`, `tk1` of `tk0`."""
    m, n = blocks_m * tm, blocks_n * tn

    @pl.function(type=pl.FunctionType.InCore)
    def mm_tuned(a: pl.Tensor[[tm, k], pl.FP16], b: pl.Tensor[[k, tn], pl.FP16],
                 c: pl.Out[pl.Tensor[[tm, tn], pl.FP32]]) -> pl.Tensor[[tm, tn], pl.FP32]:
        a1 = pl.load(a, [0, 0], [tm, tk1], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [tk1, tn], target_memory=pl.Mem.Mat)
        acc0 = pl.matmul(pl.extract(a1, [0, 0], [tm, tk0], target_memory=pl.Mem.Left),
                         pl.extract(b1, [0, 0], [tk0, tn], target_memory=pl.Mem.Right))
        for k0, (acc,) in pl.range(tk0, tk1, tk0, init_values=(acc0,)):
            nacc = pl.matmul_acc(acc, pl.extract(a1, [0, k0], [tm, tk0], target_memory=pl.Mem.Left),
                                 pl.extract(b1, [k0, 0], [tk0, tn], target_memory=pl.Mem.Right))
            first = pl.yield_(nacc)
        for k1, (acc1,) in pl.pipeline(tk1, k, tk1, stage=stage, init_values=(first,)):
            ak = pl.load(a, [0, k1], [tm, tk1], target_memory=pl.Mem.Mat)
            bk = pl.load(b, [k1, 0], [tk1, tn], target_memory=pl.Mem.Mat)
            for k2, (acc2,) in pl.pipeline(0, tk1, tk0, stage=stage, init_values=(acc1,)):
                nacc2 = pl.matmul_acc(acc2, pl.extract(ak, [0, k2], [tm, tk0], target_memory=pl.Mem.Left),
                                      pl.extract(bk, [k2, 0], [tk0, tn], target_memory=pl.Mem.Right))
                inner = pl.yield_(nacc2)
            outer = pl.yield_(inner)
        c = pl.store(outer, [0, 0], c)
        return c

    return _blocked_matmul(mm_tuned, m, n, k, tm, tn)


def add_program(blocks: int, rows: int, cols: int, tile_cols: int):
    """c = a + b on [blocks*rows, cols] FP32, one task per [rows, cols] block, each looping over its
    block in [rows, tile_cols] tiles. `cols` is a multiple of `tile_cols`."""
    total = blocks * rows

    @pl.function(type=pl.FunctionType.InCore)
    def add_block(a: pl.Tensor[[rows, cols], pl.FP32], b: pl.Tensor[[rows, cols], pl.FP32],
                  c: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]) -> pl.Tensor[[rows, cols], pl.FP32]:
        for j, (cc,) in pl.range(0, cols, tile_cols, init_values=(c,)):
            ta = pl.load(a, [0, j], [rows, tile_cols])
            tb = pl.load(b, [0, j], [rows, tile_cols])
            nc = pl.store(pl.add(ta, tb), [0, j], cc)
            out = pl.yield_(nc)
        return out

    @pl.program
    class Add:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[total, cols], pl.FP32], b: pl.Tensor[[total, cols], pl.FP32],
                 c: pl.Out[pl.Tensor[[total, cols], pl.FP32]]) -> pl.Tensor[[total, cols], pl.FP32]:
            for i in pl.parallel(total // rows):   # total: a closure name of the annotations
                sc = pl.slice(c, [rows, cols], [i * rows, 0])
                sc = add_block(pl.slice(a, [rows, cols], [i * rows, 0]),
                               pl.slice(b, [rows, cols], [i * rows, 0]), sc)
            return c

    return Add


def measure(program, args: list[torch.Tensor], flops: int = 0, output_dir: str | os.PathLike | None = None
            ) -> dict[str, float]:
    """Compile and run `program` on `args` (the last one is the output); returns the simulated
    makespan (cycles), FLOP and DDR bytes per cycle, and those over the chip's peaks.

    The build goes to `output_dir` and is kept there (its report holds the performance hints the
    compiler names on stderr); with None, to a temporary folder removed afterwards, and the
    compiler's hint summary, which would name a removed file, is left out."""
    if output_dir is not None:
        compiled = ir.compile(program, output_dir=output_dir, dump_passes=False,
                              backend_type=BackendType.Ascend910B, skip_ptoas=True)
        return _measure(compiled, args, flops)
    with tempfile.TemporaryDirectory() as tmp:
        compiled = ir.compile(program, output_dir=tmp, dump_passes=False, backend_type=BackendType.Ascend910B,
                              skip_ptoas=True, quiet_hints=True)
        return _measure(compiled, args, flops)


def build_root() -> Path:
    """Where `main` keeps the cases' builds: `$PYPTO_PROG_BUILD_DIR` (else `build_output`) / roofline,
    the folder `ir.compile` builds under by default."""
    return Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output") / "roofline"


def _measure(compiled, args: list[torch.Tensor], flops: int) -> dict[str, float]:
    compiled(*args)
    rec = compiled.last_run
    cycles = rec.makespan_cycles
    moved = sum(ddr_bytes_of(t.cost) for t in rec.tasks)     # what the cores moved (L2 hits included)
    hbm = sum(t.hbm_bytes for t in rec.tasks)                # what reached HBM (L2 misses and stores)
    return {"cycles": cycles, "tasks": len(rec.tasks), "flops_per_cycle": flops / cycles,
            "bytes_per_cycle": hbm / cycles, "flops_fraction": flops / cycles / peak_flops_per_cycle(SOC),
            "bytes_fraction": hbm / cycles / peak_ddr_bytes_per_cycle(SOC),
            "moved_per_cycle": moved / cycles,
            "ddr_wait_cycles": sum(t.ddr_wait_cycles for t in rec.tasks)}


def run_matmul(blocks_m: int, blocks_n: int, k: int, tm: int = 128, tn: int = 128,
               output_dir: str | os.PathLike | None = None) -> dict[str, float]:
    """Case (a) with tm x tn blocks of C, checked against torch (`output_dir`: see `measure`)."""
    m, n = blocks_m * tm, blocks_n * tn
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    c = torch.zeros(m, n)
    res = measure(matmul_program(blocks_m, blocks_n, k, tm, tn), [a, b, c], flops=2 * m * n * k,
                  output_dir=output_dir)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
    return res


def run_tuned_matmul(blocks_m: int, blocks_n: int, k: int, stage: int = 2,
                     output_dir: str | os.PathLike | None = None) -> dict[str, float]:
    """Case (c), 128 x 256 blocks of C, checked against torch (`output_dir`: see `measure`)."""
    m, n = blocks_m * 128, blocks_n * 256
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    c = torch.zeros(m, n)
    res = measure(tuned_matmul_program(blocks_m, blocks_n, k, stage=stage), [a, b, c], flops=2 * m * n * k,
                  output_dir=output_dir)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
    return res


def run_add(blocks: int, rows: int, cols: int, tile_cols: int,
            output_dir: str | os.PathLike | None = None) -> dict[str, float]:
    """Case (b), checked against torch (`output_dir`: see `measure`)."""
    a, b = torch.randn(blocks * rows, cols), torch.randn(blocks * rows, cols)
    c = torch.zeros_like(a)
    res = measure(add_program(blocks, rows, cols, tile_cols), [a, b, c], flops=a.numel(), output_dir=output_dir)
    assert torch.equal(c, a + b)
    return res


def _report(name: str, res: dict[str, float], kind: str) -> None:
    hz = const("clock_ghz") * 1e9
    if kind == "flops":
        got, peak, frac, unit = res["flops_per_cycle"], peak_flops_per_cycle(SOC), res["flops_fraction"], "TFLOP/s"
        scale = 1e12
    else:
        got, peak, frac, unit = res["bytes_per_cycle"], peak_ddr_bytes_per_cycle(SOC), res["bytes_fraction"], "GB/s"
        scale = 1e9
    target = "met" if frac >= 0.7 else "NOT met"
    print(f"{name:<38} {res['tasks']:>5} tasks {res['cycles']:>9} cycles  simulated {got * hz / scale:8.1f} "
          f"{unit}  peak {peak * hz / scale:8.1f} {unit}  fraction {frac:6.1%}  (target 70 %: {target})")
    hz_gb = hz / 1e9
    print(f"{'':<38} HBM traffic {res['bytes_per_cycle'] * hz_gb:7.1f} GB/s = {res['bytes_fraction']:6.1%} of the "
          f"chip's bandwidth (the cores moved {res['moved_per_cycle'] * hz_gb:7.1f} GB/s, L2 hits included); "
          f"DDR waits: {res['ddr_wait_cycles']} task-cycles")


def main() -> None:
    """Run both cases and print them next to the peaks."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="smaller shapes (a quick look)")
    opts = ap.parse_args()
    k, cols = (512, 2048) if opts.small else (4096, 8192)
    tm_blocks, tn_blocks = (6, 4) if opts.small else (24, 16)
    out = build_root()
    print(f"Ascend910B model: {SOC.num_aic} cube + {SOC.num_aiv} vector cores at {const('clock_ghz')} GHz "
          f"(cost model, estimates); builds kept in {os.fspath(out)}/<case>")
    _report(f"(a) FP16 matmul 768x512x{k}, 128x128", run_matmul(6, 4, k, output_dir=out / "a_matmul_128x128"),
            "flops")
    _report(f"(a') FP16 matmul 1536x512x{k}, 128x256",
            run_matmul(12, 2, k, tn=256, output_dir=out / "a2_matmul_128x256"), "flops")
    kt = max(k, 2048)   # the tuned kernel's first 256-chunk runs unpipelined: give it a longer K
    _report(f"(c) tuned {tm_blocks * 128}x{tn_blocks * 256}x{kt}, 128x256",
            run_tuned_matmul(tm_blocks, tn_blocks, kt, output_dir=out / "c_tuned_matmul"), "flops")
    _report(f"(b) FP32 add 3072x{cols}", run_add(48, 64, cols, 128, output_dir=out / "b_add"), "bytes")

if __name__ == "__main__":
    main()
