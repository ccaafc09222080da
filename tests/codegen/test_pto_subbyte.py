"""PTO codegen of packed FP4 (docs/language.md "Sub-byte and boolean data types"): the language
counts logical elements, the PTOAS element `f4E2M1x2` is a pair, so innermost sizes, offsets and
tile columns are halved in the .pto text; BOOL tiles keep their logical shape."""

from pathlib import Path

from pto_check import check_pto

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType

FP4 = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 128], pl.FP4], m: pl.Tensor[[16, 64], pl.BOOL],
          y: pl.Out[pl.Tensor[[16, 64], pl.BF16]]) -> pl.Tensor[[16, 64], pl.BF16]:
        t = pl.load(x, [0, 32], [16, 64])
        mt = pl.load(m, [0, 0], [16, 64])
        b = pl.cast(t, pl.BF16)
        y = pl.store(pl.sel(mt, b, b), [0, 0], y)
        return y
"""


def test_fp4_sizes_are_in_pairs_and_bool_buffers_are_one_byte_per_element(tmp_path):
    ir.compile(pl.parse(FP4), dump_passes=False, skip_ptoas=True, backend_type=BackendType.Ascend950,
               output_dir=str(tmp_path))
    text = next(Path(tmp_path).rglob("*.pto")).read_text()
    pto = check_pto(text)
    assert "shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf4E2M1x2>" in text
    assert "offsets = [%c0, %c16], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf4E2M1x2> -> " \
           "!pto.partition_tensor_view<16x32xf4E2M1x2>" in text
    fp4 = [a for a in pto.allocs if "dtype=f4E2M1x2" in a[2]]
    assert len(fp4) == 1 and "rows=16, cols=32," in fp4[0][2]
    assert "valid_row = %c16 valid_col = %c32 : !pto.tile_buf<loc=vec, dtype=f4E2M1x2" in text
    mask = next(a for a in pto.allocs if "dtype=i1" in a[2])
    assert "rows=16, cols=64," in mask[2]
