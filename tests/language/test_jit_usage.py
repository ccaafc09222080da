"""Regressions from trying the project as a new user (issue 2 note)."""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError, RuntimeSimError

ROWS, BLK, COLS = 512, 32, 128


@pl.jit
def scale_rows(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(ROWS // BLK):
            t = pl.load(x, [i * BLK, 0], [BLK, COLS])
            y = pl.store(pl.add(pl.mul(t, 2.0), 1.0), [i * BLK, 0], y)
    return y


def test_row_block_loop_stores_straight_into_the_out_parameter():
    x, y = torch.randn(ROWS, COLS), torch.zeros(ROWS, COLS)
    scale_rows(x, y)
    torch.testing.assert_close(y, x * 2 + 1)
    text = scale_rows.compile(x, y).program.as_python()
    assert "tensor.create" not in text  # no shadow output buffer copied through Vec
    assert "[512, 128]" not in text.split("pl.tile.load(x")[0].split("def scale_rows_incore_0")[1].split(":")[-1]


def test_reading_inout_and_rewriting_out_inside_pl_at():
    @pl.jit
    def acc(a: pl.Tensor, c: pl.InOut[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(c, a)
        return c

    @pl.jit
    def twice(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)  # FP32 + FP16 promotes to FP32 (the FP16 tile is cast)
            c[:] = pl.mul(c, 2.0)
        return c

    a, c = torch.randn(16, 32), torch.randn(16, 32)
    c0 = c.clone()
    acc(a, c)
    torch.testing.assert_close(c, c0 + a)
    b, out = torch.randn(16, 32).half(), torch.zeros(16, 32)
    twice(a, b, out)
    torch.testing.assert_close(out, (a + b.float()) * 2, rtol=1e-5, atol=1e-5)


def test_out_parameter_never_written_warns_with_location():
    @pl.jit
    def add_rebind(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):  # MARK-rebind
        with pl.at(level=pl.Level.CORE_GROUP):
            c = pl.add(a, b)
        return c

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        add_rebind(torch.ones(8, 8), torch.ones(8, 8), torch.zeros(8, 8))
    msgs = [x for x in w if "never written" in str(x.message)]
    assert len(msgs) == 1
    assert "Out parameter 'c' of 'add_rebind'" in str(msgs[0].message)
    assert msgs[0].filename == __file__
    with open(__file__) as f:
        assert "MARK-rebind" in f.read().splitlines()[msgs[0].lineno - 1]


def test_out_of_bounds_region_at_run_time_is_reported_clearly():
    @pl.jit
    def oob(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(3):
                t = pl.load(x, [i * 32, 0], [32, 64])
                y = pl.store(t, [i * 32, 0], y)
        return y

    y = torch.zeros(64, 64)
    with pytest.raises(RuntimeSimError) as ei:
        oob(torch.randn(64, 64), y)
    assert "load region [64:96, 0:64] is out of bounds of the tensor of shape [64, 64]" in str(ei.value)
    assert ei.value.span.filename == __file__
    import traceback

    frames = {f.filename for f in traceback.extract_tb(ei.value.__traceback__)}
    assert all(f == __file__ or f.endswith("core/errors.py") for f in frames), frames  # no internals
    assert torch.count_nonzero(y) == 0  # a failed run never writes user tensors


def test_scalar_on_the_left_of_tensor_operators():
    @pl.jit
    def f(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = (2.0 * a) + (1.0 - a)
        return c

    a, c = torch.randn(8, 16), torch.zeros(8, 16)
    f(a, c)
    torch.testing.assert_close(c, 2.0 * a + (1.0 - a))


def test_keyword_call_and_friendly_errors():
    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)
        return c

    a, b, c = torch.randn(8, 16), torch.randn(8, 16), torch.zeros(8, 16)
    add(a=a, b=b, c=c)
    torch.testing.assert_close(c, a + b)
    with pytest.raises(TypeError, match="parameter 'a' has dtype torch.float64"):
        add(a.double(), b, c)
    with pytest.raises(TypeError, match=r"add.compile\(\*sample_args\)"):
        ir.compile(add)
    with pytest.raises(FileNotFoundError, match="use pl.parse"):
        pl.loads("# pypto.program: X\nimport pypto.language as pl\n")


def test_out_written_through_slices_does_not_warn_and_dump_passes_is_part_of_the_cache_key(tmp_path):
    @pl.jit.incore
    def copy_half(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [8, 16])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.jit
    def by_slices(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        top = pl.slice(y, [8, 16], [0, 0])
        top = copy_half(x, top)
        bot = pl.slice(y, [8, 16], [8, 0])
        bot = copy_half(x, bot)
        return y

    from pathlib import Path

    from pypto.runtime import RunConfig

    x, y = torch.randn(8, 16), torch.zeros(16, 16)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        by_slices(x, y)
    from pypto.core.diagnostics import DiagnosticWarning

    # neither W004 (never written) nor W003 (write dropped): writes through views land in y itself
    assert not [m for m in w if issubclass(m.category, DiagnosticWarning)]
    torch.testing.assert_close(y, torch.cat([x, x]))
    plain = by_slices.compile(x, y)
    dumped = by_slices.compile(x, y, config=RunConfig(dump_passes=True))
    assert plain is not dumped
    assert not (Path(plain.output_dir) / "passes_dump").exists()
    assert (Path(dumped.output_dir) / "passes_dump" / "00_frontend.py").exists()


@pl.jit.incore
def _exp_and_neg(x: pl.Tensor, a: pl.Out[pl.Tensor], b: pl.Out[pl.Tensor]) -> pl.Tuple[pl.Tensor, pl.Tensor]:
    a[:] = pl.exp(x)
    b[:] = pl.neg(x)
    return a, b


@pl.jit.inline
def _doubled(x) -> pl.Tensor:
    return pl.mul(x, 2.0)


def test_bare_tensor_return_annotations_take_the_returned_types():
    """`-> pl.Tensor` / `-> pl.Tuple[pl.Tensor, pl.Tensor]` on a @pl.jit entry, sub-function or
    inline helper: like a bare parameter, the type comes from the value (it was refused with
    'bare pl.Tensor is only allowed under @pl.jit')."""
    @pl.jit
    def both(x: pl.Tensor, a: pl.Out[pl.Tensor], b: pl.Out[pl.Tensor]) -> pl.Tuple[pl.Tensor, pl.Tensor]:
        a, b = _exp_and_neg(x, a, b)
        return a, b

    @pl.jit
    def one(x: pl.Tensor, a: pl.Out[pl.Tensor]) -> pl.Tensor:
        with pl.at(level=pl.Level.CORE_GROUP):
            a[:] = _doubled(x)
        return a

    x, a, b = torch.randn(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    assert both(x, a, b) == (a, b)
    torch.testing.assert_close(a, torch.exp(x))
    torch.testing.assert_close(b, -x)
    assert one(x, a) is a
    torch.testing.assert_close(a, 2 * x)
    with pytest.raises(ParserTypeError, match=r"bare pl.Tensor is only allowed under @pl.jit"):
        @pl.function
        def plain(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor:
            return x
