"""The PyTorch reference script of a program with packed FP4 and BOOL tensors takes the same host
tensors as the compiled program and computes the same numbers (docs/language.md "Sub-byte and
boolean data types")."""

import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core import dtype as D
from pypto.core import packed
from pypto.debug import torch_codegen

TEXT = """
import pypto.language as pl

@pl.program
class P:
    @pl.function
    def main(self, a: pl.Tensor[[16, 64], pl.FP4], m: pl.Tensor[[16, 64], pl.BOOL],
             c: pl.Out[pl.Tensor[[16, 64], pl.FP32]], q: pl.Out[pl.Tensor[[16, 64], pl.FP4]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            f = pl.cast(a, pl.FP32)
            c[:] = pl.sel(m, f, pl.mul(f, 1.3))
            q[:] = pl.cast(pl.cast(pl.mul(f, 1.3), pl.BF16), pl.FP4)
        return c, q
"""


def test_reference_script_matches_the_simulator_with_fp4_and_bool():
    prog = pl.parse(TEXT)
    g = torch.Generator().manual_seed(0)
    v = packed.quantize(torch.randn(16, 64, generator=g) * 3, D.FP4)
    a = packed.encode(v, D.FP4).view(torch.float4_e2m1fn_x2)
    m = torch.rand(16, 64, generator=g) > 0.5
    c, q = torch.zeros(16, 64), torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2)
    ir.compile(prog, dump_passes=False, skip_ptoas=True, backend_type=BackendType.Ascend950)(a, m, c, q)
    assert torch.equal(c, torch.where(m, v, v * 1.3))
    want_q = packed.quantize((v * 1.3).bfloat16().float(), D.FP4)
    assert torch.equal(packed.decode(q, D.FP4), want_q)

    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    c2, q2 = torch.zeros(16, 64), torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2)
    ns["run"](a.clone(), m, c2, q2)
    assert torch.equal(c2, c)
    assert torch.equal(q2.view(torch.uint8), q.view(torch.uint8))


def test_the_reference_script_runs_standalone_on_packed_inputs(capsys):
    ns: dict = {"__name__": "__main__"}
    exec(compile(torch_codegen(pl.parse(TEXT)), "<reference>", "exec"), ns)  # noqa: S102
    out = capsys.readouterr().out
    assert "output 2: shape (16, 64) dtype torch.float32" in out
    assert "output 3: shape (16, 64) dtype torch.float32" in out   # the FP4 output, unpacked


QUANT = """
import pypto.language as pl

@pl.program
class Q:
    @pl.function
    def main(self, a: pl.Tensor[[16, 64], pl.FP4], q: pl.Out[pl.Tensor[[16, 64], pl.FP4]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            f = pl.cast(a, pl.FP32)
            q[:] = pl.cast(pl.cast(pl.mul(f, 1.3), pl.BF16), pl.FP4)
        return q
"""


def test_validate_ir_compares_packed_outputs_by_value(tmp_path):
    prog = pl.parse(QUANT)
    cp = ir.compile(prog, dump_passes=True, skip_ptoas=True, backend_type=BackendType.Ascend950,
                    output_dir=str(tmp_path))
    g = torch.Generator().manual_seed(1)
    v = packed.quantize(torch.randn(16, 64, generator=g) * 3, D.FP4)
    a = packed.encode(v, D.FP4).view(torch.float4_e2m1fn_x2)
    q = torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2)
    good = packed.encode(packed.quantize((v * 1.3).bfloat16().float(), D.FP4), D.FP4).view(q.dtype)
    assert cp.validate_ir([a, q], [good]).first_divergent is None
    bad = packed.encode(packed.quantize(v, D.FP4), D.FP4).view(q.dtype)
    assert cp.validate_ir([a, q], [bad]).first_divergent == "frontend"
