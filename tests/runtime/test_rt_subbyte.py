"""Sub-byte and boolean data types end to end on the simulator (SPEC §2.1; docs/language.md
"Sub-byte and boolean data types"): shapes count logical elements, only memory is packed."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core import dtype as D
from pypto.core import packed
from pypto.core.errors import ArgumentTypeError, ArgumentValueError, CompileError, ParserTypeError
from pypto.ir.expr import ConstInt
from pypto.ir.types import TileType
from pypto.passes.tile_layout import tile_bytes


def run(src: str, *args, backend=BackendType.Ascend950):
    compiled = ir.compile(pl.parse(src), dump_passes=False, skip_ptoas=True, backend_type=backend)
    return compiled(*args)


def fp4_host(values: torch.Tensor) -> torch.Tensor:
    return packed.encode(values, D.FP4).view(torch.float4_e2m1fn_x2)


def fp4_values(shape, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return packed.quantize(torch.randn(shape, generator=g) * 3, D.FP4)


FP4_LOAD = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 128], pl.FP4], y: pl.Out[pl.Tensor[[16, 64], pl.BF16]]) -> pl.Tensor[[16, 64], pl.BF16]:
        t = pl.load(x, [0, 32], [16, 64])
        y = pl.store(pl.cast(t, pl.BF16), [0, 0], y)
        return y
"""


def test_fp4_load_counts_logical_elements():
    v = fp4_values((16, 128))
    x = fp4_host(v)
    assert tuple(x.shape) == (16, 64)   # host storage: two values per float4_e2m1fn_x2 element
    y = torch.zeros(16, 64, dtype=torch.bfloat16)
    run(FP4_LOAD, x, y)
    assert torch.equal(y.float(), v[:, 32:96])


def test_an_fp4_tensor_given_at_its_logical_shape_is_refused_with_the_convention():
    x = torch.zeros(16, 128, dtype=torch.float4_e2m1fn_x2)
    with pytest.raises(ArgumentValueError) as ei:
        run(FP4_LOAD, x, torch.zeros(16, 64, dtype=torch.bfloat16))
    msg = str(ei.value)
    assert "argument 'x' of 'k' has shape [16, 128] (logical shape [16, 256]" in msg
    assert "stored as [.., n/2]" in msg and "expected [16, 128]" in msg


BF16_TO_FP4 = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.BF16], y: pl.Out[pl.Tensor[[16, 64], pl.FP4]]) -> pl.Tensor[[16, 64], pl.FP4]:
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(pl.cast(t, pl.FP4), [0, 0], y)
        return y
"""


def test_bf16_to_fp4_cast_rounds_to_nearest_even():
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(1)) * 4).bfloat16()
    x[0, :4] = torch.tensor([0.25, 0.75, 2.5, 100.0])   # ties go to the even mantissa; 100 saturates
    y = torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2)
    run(BF16_TO_FP4, x, y)
    got = packed.decode(y, D.FP4)
    assert torch.equal(got, packed.quantize(x.float(), D.FP4))
    assert got[0, :4].tolist() == [0.0, 1.0, 2.0, 6.0]


def test_fp4_casts_are_refused_on_ascend910b():
    with pytest.raises(CompileError, match="Ascend910B cannot convert BF16 to FP4: Ascend910B has no "
                                           r"conversion instruction to FP4 \(Ascend950 has one\)"):
        run(BF16_TO_FP4, torch.zeros(16, 64, dtype=torch.bfloat16),
            torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2), backend=BackendType.Ascend910B)


MATMUL = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.DT], b: pl.Tensor[[64, 32], pl.DT], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        la = pl.move(ta, target_memory=pl.Mem.Left)
        rb = pl.move(tb, target_memory=pl.Mem.Right)
        y = pl.store(pl.matmul(la, rb), [0, 0], y)
        return y
"""


@pytest.mark.parametrize("dt", [D.FP4, D.FP8E4M3FN, D.FP8E5M2])
def test_low_precision_matmul_inputs_on_ascend950(dt):
    if dt is D.FP4:
        av, bv = fp4_values((32, 64), 2), fp4_values((64, 32), 3)
        a, b = fp4_host(av), fp4_host(bv)
    else:
        a, b = torch.randn(32, 64).to(dt.to_torch()), torch.randn(64, 32).to(dt.to_torch())
        av, bv = a.float(), b.float()
    y = torch.zeros(32, 32)
    run(MATMUL.replace("pl.DT", f"pl.{dt.name}"), a, b, y)
    torch.testing.assert_close(y, av @ bv, rtol=1e-5, atol=1e-5)


def test_fp4_matmul_is_refused_on_ascend910b():
    with pytest.raises(CompileError, match=r"tile.matmul: the cube unit of Ascend910B cannot multiply FP4 "
                                           r"operands \('lhs'\); it multiplies INT8, FP16, FP32, BF16"):
        ir.compile(pl.parse(MATMUL.replace("pl.DT", "pl.FP4")), dump_passes=False, skip_ptoas=True,
                   backend_type=BackendType.Ascend910B)


BOOL_SEL = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, m: pl.Tensor[[16, 64], pl.BOOL], a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[16, 64], pl.FP32]], z: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        mt = pl.load(m, [0, 0], [16, 64])
        at = pl.load(a, [0, 0], [16, 64])
        bt = pl.load(b, [0, 0], [16, 64])
        y = pl.store(pl.sel(mt, at, bt), [0, 0], y)
        nz = pl.cmps(at, 0.0, cmp_type="ne")
        z = pl.store(pl.sel(nz, bt, at), [0, 0], z)
        return y, z
"""


@pytest.mark.parametrize("backend", list(BackendType), ids=lambda b: b.name)
def test_a_bool_mask_from_the_host_selects(backend):
    g = torch.Generator().manual_seed(4)
    m = torch.rand(16, 64, generator=g) > 0.5
    a, b = torch.randn(16, 64, generator=g), torch.randn(16, 64, generator=g)
    a[0, :8] = 0.0
    y, z = torch.zeros(16, 64), torch.zeros(16, 64)
    run(BOOL_SEL, m, a, b, y, z, backend=backend)
    assert torch.equal(y, torch.where(m, a, b))
    assert torch.equal(z, torch.where(a != 0, b, a))


def test_memory_planning_sizes_bool_tiles_one_byte_per_element():
    shape = (ConstInt(16), ConstInt(64))
    assert tile_bytes(TileType(shape, D.BOOL)) == 1024
    assert tile_bytes(TileType(shape, D.FP4)) == 512


INT4_ROUND_TRIP = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP16], y: pl.Out[pl.Tensor[[16, 64], pl.FP16]]) -> pl.Tensor[[16, 64], pl.FP16]:
        t = pl.load(x, [0, 0], [16, 64])
        q = pl.cast(t, pl.INT4, mode="round")
        y = pl.store(pl.cast(q, pl.FP16), [0, 0], y)
        return y
"""


@pytest.mark.parametrize("backend", list(BackendType), ids=lambda b: b.name)
def test_int4_tiles_round_and_saturate(backend):
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(5)) * 6).half()
    x[0, :4] = torch.tensor([2.5, -20.0, 7.4, -8.6])
    y = torch.zeros(16, 64, dtype=torch.float16)
    run(INT4_ROUND_TRIP, x, y, backend=backend)
    assert torch.equal(y, torch.round(x.float()).clamp(-8, 7).half())
    assert y[0, :4].tolist() == [2.0, -8.0, 7.0, -8.0]


@pytest.mark.parametrize("dt,hint", [
    ("INT4", "torch has no usable 4-bit integer dtype; pass INT8 (or FP16) and convert inside the kernel "
             "with pl.cast(t, pl.INT4)"),
    ("HF8", "torch has no such dtype, so the simulator cannot hold or compute its values"),
])
def test_host_tensors_of_types_torch_lacks_are_refused_clearly(dt, hint):
    src = FP4_LOAD.replace("pl.FP4", f"pl.{dt}").replace("[16, 128]", "[16, 64]").replace("[0, 32]", "[0, 0]")
    src = src.replace("pl.cast(t, pl.BF16)", "pl.cast(pl.cast(t, pl.FP32), pl.BF16)") if dt == "HF8" else src
    with pytest.raises(ArgumentTypeError) as ei:
        run(src, torch.zeros(16, 64, dtype=torch.int8), torch.zeros(16, 64, dtype=torch.bfloat16))
    assert f"argument 'x' of 'k' is declared {dt}, which cannot be passed from the host: {hint}" in str(ei.value)


@pl.jit
def dequantize(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.cast(a, pl.BF16)
    return c


@pl.jit
def quantize_fp4(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.cast(a, pl.FP4)
    return c


def test_jit_takes_the_logical_shape_of_a_packed_host_tensor():
    from pypto.runtime import RunConfig

    v = fp4_values((16, 64), 6)
    c = torch.zeros(16, 64, dtype=torch.bfloat16)
    dequantize(fp4_host(v), c, config=RunConfig(platform="a5sim"))
    assert torch.equal(c.float(), v)
    x = torch.randn(16, 64).bfloat16()
    q = torch.zeros(16, 32, dtype=torch.float4_e2m1fn_x2)
    quantize_fp4(x, q, config=RunConfig(platform="a5sim"))
    assert torch.equal(packed.decode(q, D.FP4), packed.quantize(x.float(), D.FP4))


@pytest.mark.parametrize("dtype", [D.FP4, torch.float4_e2m1fn_x2, D.INT4])
def test_packed_tensors_cannot_be_resident(dtype):
    from pypto.runtime import ChipWorker

    with ChipWorker() as w, pytest.raises(ArgumentTypeError, match="tensors cannot be resident"):
        w.alloc_tensor((16, 64), dtype)


PIPE_TEXT = """
import pypto.language as pl

@pl.program
class Hand:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, w: pl.Tensor[[64, 16], pl.FP4]):
        w1 = pl.load(w, [0, 0], [64, 16], target_memory=pl.Mem.Mat)
        w0 = pl.move(w1, target_memory=pl.Mem.Right)
        x = pl.system.tpop_from_aiv([16, 64], dtype=pl.FP4)
        acc = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), w0)
        pl.system.tfree_to_aiv(x)
        pl.system.tpush_to_aiv(acc)
        return

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[16, 64], pl.BF16],
            y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        q = pl.cast(t, pl.FP4)
        pl.system.tpush_to_aic(q)
        got = pl.system.tpop_from_aic([16, 16], dtype=pl.FP32)
        y = pl.store(got, [0, 0], y)
        pl.system.tfree_to_aic(got)
        return y

    @pl.function(type=pl.FunctionType.Group)
    def both(self, w: pl.Tensor[[64, 16], pl.FP4], x: pl.Tensor[[16, 64], pl.BF16],
             y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        self.cube(w)
        y = self.vec(x, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[64, 16], pl.FP4], x: pl.Tensor[[16, 64], pl.BF16],
             y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        y = self.both(w, x, y)
        return y
"""


def test_an_fp4_tile_crosses_the_pipe_from_vector_to_cube_core(tmp_path):
    """The vector core quantizes to FP4 and pushes the tile; the cube core multiplies it (its ring
    slots are sized in FP4 bytes, and the simulator moves the tile as its bytes)."""
    from pypto.debug import torch_codegen

    prog = pl.parse(PIPE_TEXT, filename="hand.py")
    cp = ir.compile(prog, output_dir=tmp_path / "hand", backend_type=BackendType.Ascend950, platform="a5sim",
                    dump_passes=False, skip_ptoas=True)
    wv = fp4_values((64, 16), 7)
    w = fp4_host(wv)
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(8)) * 2).bfloat16()
    y = torch.zeros(16, 16)
    cp(w, x, y)
    torch.testing.assert_close(y, packed.quantize(x.float(), D.FP4) @ wv, rtol=1e-5, atol=1e-5)
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    y2 = torch.zeros(16, 16)
    ns["run"](w.clone(), x, y2)
    assert torch.equal(y2, y)


CREATED_TEXT = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.BF16], y: pl.Out[pl.Tensor[[16, 64], pl.FP4]]) -> pl.Tensor[[16, 64], pl.FP4]:
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(pl.cast(t, pl.FP4), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.BF16]) -> pl.Tensor[[16, 64], pl.FP4]:
        q = pl.create_tensor([16, 64], dtype=pl.FP4)
        q = self.k(x, q)
        return q
"""


def test_a_created_fp4_tensor_is_returned_in_host_storage(tmp_path):
    cp = ir.compile(pl.parse(CREATED_TEXT), backend_type=BackendType.Ascend950, dump_passes=False,
                    skip_ptoas=True, output_dir=str(tmp_path))
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(9)) * 2).bfloat16()
    q = cp(x)
    assert q.dtype is torch.float4_e2m1fn_x2 and tuple(q.shape) == (16, 32)
    assert torch.equal(packed.decode(q, D.FP4), packed.quantize(x.float(), D.FP4))


REINTERPRET = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, m: pl.Tensor[[16, 64], pl.BOOL], y: pl.Out[pl.Tensor[[16, 64], pl.UINT8]]) -> pl.Tensor[[16, 64], pl.UINT8]:
        t = pl.load(m, [0, 0], [16, 64])
        y = pl.store(pl.tile.reinterpret_view(t, pl.UINT8), [0, 0], y)
        return y
"""


def test_a_bool_tile_reinterprets_as_its_bytes():
    m = torch.rand(16, 64, generator=torch.Generator().manual_seed(10)) > 0.5
    y = torch.zeros(16, 64, dtype=torch.uint8)
    run(REINTERPRET, m, y, backend=BackendType.Ascend910B)
    assert torch.equal(y, m.to(torch.uint8))
    with pytest.raises(ParserTypeError, match=r"reinterpret_view needs byte-sized element types; x is "
                                                 r"FP4 \(4 bits in memory\)"):
        pl.parse(REINTERPRET.replace("pl.BOOL", "pl.FP4"))
