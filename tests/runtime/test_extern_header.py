"""The shipped `pypto_kernel.h` on the simulator (SPEC §10; docs/tools.md "External C++ kernels"):
every documented tile helper against torch, the tensor descriptor (dtypes, views, ranks), block
ids, scalar arguments and the helpers' error reporting. Kernels are built with the host C++
compiler (skipped where there is none) and run through `ExternalExecutor` directly."""

from __future__ import annotations

import math
import textwrap

import pytest
import torch

import pypto.language as pl
from pypto.core.errors import RuntimeSimError
from pypto.ops.block import block_context
from pypto.runtime.extern import ExternalExecutor, find_compiler
from pypto.runtime.sim.cost_model import const

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no host C++ compiler")

R, C = 8, 16

# op codes of the test kernel: binary, scalar, unary, reductions, broadcasts, matmul
_KERNEL = r"""
#include "pypto_kernel.h"
// args: a [R, C], b [R, C], v [R, 1], u [1, C], out [R, C], red [R, 1], op (int), s (float)
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *a = pypto_arg_tensor(args[0]), *b = pypto_arg_tensor(args[1]);
    const pypto_tensor *v = pypto_arg_tensor(args[2]), *u = pypto_arg_tensor(args[3]);
    const pypto_tensor *out = pypto_arg_tensor(args[4]), *red = pypto_arg_tensor(args[5]);
    const int64_t op = pypto_arg_int(args[6]);
    const float s = (float)pypto_arg_float(args[7]);
    PYPTO_TILE(ta, @R@, @C@);
    PYPTO_TILE(tb, @R@, @C@);
    PYPTO_TILE(tv, @R@, 1);
    PYPTO_TILE(tu, 1, @C@);
    PYPTO_TILE(t, @R@, @C@);
    pypto_load(&ta, a, 0, 0);
    pypto_load(&tb, b, 0, 0);
    pypto_load(&tv, v, 0, 0);
    pypto_load(&tu, u, 0, 0);
    switch (op) {
        case 0: pypto_add(&t, &ta, &tb); break;
        case 1: pypto_sub(&t, &ta, &tb); break;
        case 2: pypto_mul(&t, &ta, &tb); break;
        case 3: pypto_div(&t, &ta, &tb); break;
        case 4: pypto_max(&t, &ta, &tb); break;
        case 5: pypto_min(&t, &ta, &tb); break;
        case 10: pypto_adds(&t, &ta, s); break;
        case 11: pypto_subs(&t, &ta, s); break;
        case 12: pypto_muls(&t, &ta, s); break;
        case 13: pypto_divs(&t, &ta, s); break;
        case 14: pypto_maxs(&t, &ta, s); break;
        case 15: pypto_mins(&t, &ta, s); break;
        case 20: pypto_exp(&t, &ta); break;
        case 21: pypto_sqrt(&t, &tb); break;
        case 22: pypto_rsqrt(&t, &tb); break;
        case 23: pypto_log(&t, &tb); break;
        case 24: pypto_abs(&t, &ta); break;
        case 25: pypto_neg(&t, &ta); break;
        case 26: pypto_recip(&t, &tb); break;
        case 30: pypto_row_expand_add(&t, &ta, &tv); break;
        case 31: pypto_row_expand_sub(&t, &ta, &tv); break;
        case 32: pypto_row_expand_mul(&t, &ta, &tv); break;
        case 33: pypto_row_expand_div(&t, &ta, &tv); break;
        case 34: pypto_col_expand_add(&t, &ta, &tu); break;
        case 35: pypto_col_expand_sub(&t, &ta, &tu); break;
        case 36: pypto_col_expand_mul(&t, &ta, &tu); break;
        case 37: pypto_col_expand_div(&t, &ta, &tu); break;
        case 40: pypto_copy(&t, &ta); pypto_fill(&ta, 0.0f); break;
        case 41: pypto_fill(&t, s); break;
    }
    pypto_store(out, 0, 0, &t);
    PYPTO_TILE(r, @R@, 1);
    if (op == 50) pypto_row_sum(&r, &ta);
    else if (op == 51) pypto_row_max(&r, &ta);
    else if (op == 52) pypto_row_min(&r, &ta);
    else pypto_fill(&r, 0.0f);
    pypto_store(red, 0, 0, &r);
}
""".replace("@R@", str(R)).replace("@C@", str(C))


def _declare(path, ret_params: str, **kw):
    """An external AIV kernel over `path`, with the parameters `ret_params` (Python source)."""
    ns = {"pl": pl}
    src = textwrap.dedent(f"""
        def k({ret_params}):
            ...
    """)
    code = compile(src, str(path.with_suffix(".py")), "exec")
    path.with_suffix(".py").write_text(src)
    exec(code, ns)  # noqa: S102
    return pl.function(type=pl.FunctionType.AIV, external_source=str(path), **kw)(ns["k"])


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    d = tmp_path_factory.mktemp("header")
    src = d / "ops.cpp"
    src.write_text(_KERNEL)
    params = (f"a: pl.Tensor[[{R}, {C}], pl.FP32], b: pl.Tensor[[{R}, {C}], pl.FP32], "
              f"v: pl.Tensor[[{R}, 1], pl.FP32], u: pl.Tensor[[1, {C}], pl.FP32], "
              f"out: pl.Out[pl.Tensor[[{R}, {C}], pl.FP32]], red: pl.Out[pl.Tensor[[{R}, 1], pl.FP32]], "
              f"op: pl.Scalar[pl.INT64], s: pl.Scalar[pl.FP32]")
    return ExternalExecutor(_declare(src, params))


def _inputs():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(R, C, generator=g)
    b = torch.rand(R, C, generator=g) + 0.5
    v = torch.rand(R, 1, generator=g) + 0.5
    u = torch.rand(1, C, generator=g) + 0.5
    return a, b, v, u


_EXPECT = {
    0: lambda a, b, v, u, s: a + b, 1: lambda a, b, v, u, s: a - b, 2: lambda a, b, v, u, s: a * b,
    3: lambda a, b, v, u, s: a / b, 4: lambda a, b, v, u, s: torch.maximum(a, b),
    5: lambda a, b, v, u, s: torch.minimum(a, b),
    10: lambda a, b, v, u, s: a + s, 11: lambda a, b, v, u, s: a - s, 12: lambda a, b, v, u, s: a * s,
    13: lambda a, b, v, u, s: a / s, 14: lambda a, b, v, u, s: a.clamp(min=s),
    15: lambda a, b, v, u, s: a.clamp(max=s),
    20: lambda a, b, v, u, s: a.exp(), 21: lambda a, b, v, u, s: b.sqrt(), 22: lambda a, b, v, u, s: b.rsqrt(),
    23: lambda a, b, v, u, s: b.log(), 24: lambda a, b, v, u, s: a.abs(), 25: lambda a, b, v, u, s: -a,
    26: lambda a, b, v, u, s: 1 / b,
    30: lambda a, b, v, u, s: a + v, 31: lambda a, b, v, u, s: a - v, 32: lambda a, b, v, u, s: a * v,
    33: lambda a, b, v, u, s: a / v, 34: lambda a, b, v, u, s: a + u, 35: lambda a, b, v, u, s: a - u,
    36: lambda a, b, v, u, s: a * u, 37: lambda a, b, v, u, s: a / u,
    40: lambda a, b, v, u, s: a, 41: lambda a, b, v, u, s: torch.full_like(a, s),
}


@pytest.mark.parametrize("op", sorted(_EXPECT))
def test_elementwise_and_broadcast_helpers_match_torch(kernel, op):
    a, b, v, u = _inputs()
    out, red = torch.zeros(R, C), torch.zeros(R, 1)
    kernel.run([a, b, v, u, out, red, op, 0.75])
    torch.testing.assert_close(out, _EXPECT[op](a, b, v, u, 0.75), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,ref", [(50, lambda a: a.sum(1, keepdim=True)),
                                    (51, lambda a: a.amax(1, keepdim=True)),
                                    (52, lambda a: a.amin(1, keepdim=True))])
def test_row_reductions_match_torch(kernel, op, ref):
    a, b, v, u = _inputs()
    out, red = torch.zeros(R, C), torch.zeros(R, 1)
    kernel.run([a, b, v, u, out, red, op, 0.0])
    torch.testing.assert_close(red, ref(a), rtol=1e-5, atol=1e-5)


def test_inputs_are_not_written(kernel):
    a, b, v, u = _inputs()
    a0 = a.clone()
    kernel.run([a, b, v, u, torch.zeros(R, C), torch.zeros(R, 1), 40, 0.0])  # fills its tile of a
    assert torch.equal(a, a0)


_MATMUL = r"""
#include "pypto_kernel.h"
// c = a @ b, then c += a @ b when args[3] is 1; tiles are loaded in two K halves to test _acc
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *a = pypto_arg_tensor(args[0]), *b = pypto_arg_tensor(args[1]);
    const pypto_tensor *c = pypto_arg_tensor(args[2]);
    const int64_t M = pypto_rows(a), K = pypto_cols(a), N = pypto_cols(b), h = K / 2;
    float abuf[64 * 64], bbuf[64 * 64], cbuf[64 * 64];
    pypto_tile ta = pypto_tile_make(abuf, 64 * 64, M, h), tb = pypto_tile_make(bbuf, 64 * 64, h, N);
    pypto_tile tc = pypto_tile_make(cbuf, 64 * 64, M, N);
    pypto_load(&ta, a, 0, 0);
    pypto_load(&tb, b, 0, 0);
    pypto_matmul(&tc, &ta, &tb);
    pypto_load(&ta, a, 0, h);
    pypto_load(&tb, b, h, 0);
    pypto_matmul_acc(&tc, &ta, &tb);
    pypto_store(c, 0, 0, &tc);
}
"""


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
def test_matmul_and_storage_dtypes(tmp_path, dtype, tol):
    """fp32 / fp16 / bf16 storage: loads convert to fp32, matmul accumulates in fp32, stores round
    to the tensor's dtype (compared with torch computing in fp32 and rounding once)."""
    src = tmp_path / "mm.cpp"
    src.write_text(_MATMUL)
    name = {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16"}[dtype]
    ex = ExternalExecutor(_declare(src, f"a: pl.Tensor[[32, 48], pl.{name}], b: pl.Tensor[[48, 16], "
                                                 f"pl.{name}], c: pl.Out[pl.Tensor[[32, 16], pl.{name}]]"))
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(32, 48, generator=g).to(dtype), torch.randn(48, 16, generator=g).to(dtype)
    c = torch.zeros(32, 16, dtype=dtype)
    ex.run([a, b, c])
    torch.testing.assert_close(c.float(), (a.float() @ b.float()).to(dtype).float(), rtol=tol, atol=tol)


_ROUND = r"""
#include "pypto_kernel.h"
// out = in, element by element through float32: the storage conversions of the header
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *x = pypto_arg_tensor(args[0]), *y = pypto_arg_tensor(args[1]);
    const pypto_tensor *z = pypto_arg_tensor(args[2]);
    PYPTO_TILE(t, 1, 4096);
    pypto_tile_reshape(&t, pypto_rows(x), pypto_cols(x));
    pypto_load(&t, x, 0, 0);
    pypto_store(y, 0, 0, &t);
    pypto_store(z, 0, 0, &t);
}
"""


def test_fp16_and_bf16_conversions_round_like_torch(tmp_path):
    """fp32 -> fp16 / bf16 rounds to nearest even, with subnormals, overflow to inf and NaN."""
    src = tmp_path / "round.cpp"
    src.write_text(_ROUND)
    ex = ExternalExecutor(_declare(src, "x: pl.Tensor[[1, 4096], pl.FP32], "
                                                "y: pl.Out[pl.Tensor[[1, 4096], pl.FP16]], "
                                                "z: pl.Out[pl.Tensor[[1, 4096], pl.BF16]]"))
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(2048, generator=g) * 1000, torch.randn(1024, generator=g) * 1e-6,
                   torch.tensor([65504.0, 65519.0, 65520.0, 1e9, -1e9, float("inf"), float("nan"), 0.0,
                                 -0.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 1.0009765625, 1 + 2 ** -11]),
                   torch.randn(1024 - 14, generator=g)]).reshape(1, 4096)
    y, z = torch.zeros(1, 4096, dtype=torch.float16), torch.zeros(1, 4096, dtype=torch.bfloat16)
    ex.run([x, y, z])
    torch.testing.assert_close(y.float(), x.half().float(), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(z.float(), x.bfloat16().float(), equal_nan=True, rtol=0, atol=0)


def test_views_ranks_and_block_ids(tmp_path):
    """Descriptors carry strides: a transposed / sliced view and a rank-3 tensor load correctly;
    the block and sub-block ids come from the launch."""
    src = tmp_path / "views.cpp"
    src.write_text(r"""
#include "pypto_kernel.h"
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *x = pypto_arg_tensor(args[0]), *y = pypto_arg_tensor(args[1]);
    const pypto_tensor *ids = pypto_arg_tensor(args[2]);
    PYPTO_TILE(t, 12, 4);
    pypto_load(&t, x, 0, 0);            // rank 3 [3, 4, 4] seen as 12 x 4
    pypto_muls(&t, &t, 10.0f);
    pypto_store(y, 0, 0, &t);           // a strided view
    PYPTO_TILE(b, 1, 4);
    b.data[0] = (float)pypto_block_idx(); b.data[1] = (float)pypto_block_num();
    b.data[2] = (float)pypto_subblock_idx(); b.data[3] = (float)pypto_subblock_num();
    pypto_store(ids, 0, 0, &b);
}
""")
    ex = ExternalExecutor(_declare(src, "x: pl.Tensor[[3, 4, 4], pl.FP32], y: pl.Out[pl.Tensor[[12, 4], "
                                            "pl.FP32]], ids: pl.Out[pl.Tensor[[1, 4], pl.FP32]]"))
    x = torch.arange(48.0).reshape(3, 4, 4)
    big = torch.zeros(4, 24)
    y = big[:, 2:14].t()  # [12, 4], strides (1, 24)
    ids = torch.zeros(1, 4)
    with block_context(2, 5, 1, 2):
        ex.run([x, y, ids])
    torch.testing.assert_close(y, x.reshape(12, 4) * 10)
    assert big[:, :2].abs().sum() == 0 and big[:, 14:].abs().sum() == 0
    assert ids.tolist() == [[2.0, 5.0, 1.0, 2.0]]
    ex.run([x, y, ids], block=(3, 4))
    assert ids.tolist() == [[3.0, 4.0, 0.0, 1.0]]


def test_helper_errors_are_raised_with_the_kernel_name(tmp_path):
    src = tmp_path / "oob.cpp"
    src.write_text(r"""
#include "pypto_kernel.h"
extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor *x = pypto_arg_tensor(args[0]);
    PYPTO_TILE(t, 16, 16);
    pypto_load(&t, x, 4, 0);   // rows 4..20 of an 8-row tensor
    pypto_store(x, 0, 0, &t);  // skipped: an error was recorded
}
""")
    ex = ExternalExecutor(_declare(src, "x: pl.InOut[pl.Tensor[[8, 16], pl.FP32]]"))
    x = torch.ones(8, 16)
    with pytest.raises(RuntimeSimError, match=r"external kernel 'k' .*oob\.cpp.*pypto_load: box \[4:20, 0:16\] "
                                              r"is outside the 8 x 16 tensor"):
        ex.run([x])
    assert torch.equal(x, torch.ones(8, 16))
    with pytest.raises(RuntimeSimError, match="argument 'x' is torch.float16"):
        ex.run([torch.ones(8, 16, dtype=torch.float16)])


def test_default_and_declared_cost(tmp_path):
    src = tmp_path / "noop.cpp"
    src.write_text('#include "pypto_kernel.h"\nextern "C" void kernel_entry(int64_t* args) {}\n')
    params = "x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]], n: pl.Scalar[pl.INT64]"
    x, y = torch.zeros(64, 64), torch.zeros(64, 64)
    launch = int(const("task_launch"))
    issue = int(const("mte_issue"))
    default = ExternalExecutor(_declare(src, params)).run([x, y, 3])
    nbytes = 64 * 64 * 4
    assert default.cycles == launch + 2 * issue + math.ceil(nbytes / const("mte2_bytes_per_cycle")) + \
        math.ceil(nbytes / const("mte3_bytes_per_cycle"))
    assert set(default.pipe_cycles) == {"mte2", "mte3"}
    assert ExternalExecutor(_declare(src, params, cost=500)).run([x, y, 3]).cycles == launch + 500
    formula = ExternalExecutor(_declare(src, params, cost="x.shape[0] * n + block_num"))
    assert formula.run([x, y, 3]).cycles == launch + 64 * 3 + 1
    assert formula.run([x, y, 3], block=(0, 4)).cycles == launch + 64 * 3 + 4
    call = ExternalExecutor(_declare(src, params, cost=lambda x, y, n: x.numel() / 8))
    assert call.run([x, y, 3]).cycles == launch + 512
    bad = ExternalExecutor(_declare(src, params, cost=lambda x, y, n: -1))
    with pytest.raises(RuntimeSimError, match="cost of external kernel 'k' gave -1"):
        bad.run([x, y, 3])


def test_integer_storage_truncates_and_saturates(tmp_path):
    """Stores into integer tensors truncate toward zero and saturate (NaN -> 0); loads are exact."""
    src = tmp_path / "ints.cpp"
    src.write_text(_ROUND.replace("pypto_store(z, 0, 0, &t);", "pypto_store(z, 0, 0, &t);\n"
                                  "    pypto_load(&t, z, 0, 0);\n    pypto_store(y, 0, 0, &t);"))
    ex = ExternalExecutor(_declare(src, "x: pl.Tensor[[1, 8], pl.FP32], y: pl.Out[pl.Tensor[[1, 8], pl.INT32]], "
                                        "z: pl.Out[pl.Tensor[[1, 8], pl.INT8]]"))
    x = torch.tensor([[1.9, -1.9, 127.5, 128.0, -300.0, float("nan"), 0.4, -0.4]])
    y, z = torch.zeros(1, 8, dtype=torch.int32), torch.zeros(1, 8, dtype=torch.int8)
    ex.run([x, y, z])
    assert z.tolist() == [[1, -1, 127, 127, -128, 0, 0, 0]]
    assert y.tolist() == z.int().tolist()  # read back from the int8 tensor
