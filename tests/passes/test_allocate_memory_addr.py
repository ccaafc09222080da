import json
from pathlib import Path

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import MemoryCapacityError


@pl.program
class TooBig:
    @pl.function(type=pl.FunctionType.InCore)
    def big_kernel(self, a: pl.Tensor[[128, 384], pl.FP32],
                   c: pl.Out[pl.Tensor[[128, 256], pl.FP32]]) -> pl.Tensor[[128, 256], pl.FP32]:
        t0 = pl.load(a, [0, 0], [128, 128])  # 64 KiB each, all three live at once
        t1 = pl.load(a, [0, 128], [128, 128])
        t2 = pl.load(a, [0, 256], [128, 128])
        s = pl.add(pl.add(t0, t1), t2)       # the sums are computed in place
        c = pl.store(s, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 384], pl.FP32],
             c: pl.Out[pl.Tensor[[128, 256], pl.FP32]]) -> pl.Tensor[[128, 256], pl.FP32]:
        c = self.big_kernel(a, c)
        return c


def test_vec_capacity_exceeded_names_function_space_and_bytes(tmp_path):
    with pytest.raises(MemoryCapacityError) as ei:
        ir.compile(TooBig, output_dir=tmp_path / "b")
    msg = ei.value.message
    assert "'big_kernel'" in msg
    assert "Vec" in msg
    assert str(3 * 128 * 128 * 4) in msg  # bytes needed
    assert str(184 * 1024) in msg  # bytes available on Ascend910B
    # a failed compile leaves no complete-looking build
    assert not (tmp_path / "b" / "compiled_meta.json").exists()
    assert "MemoryCapacityError" in (tmp_path / "b" / "report" / "error.log").read_text()



def test_capacity_error_points_at_the_largest_tile_it_names(tmp_path):
    with pytest.raises(MemoryCapacityError) as ei:
        ir.compile(TooBig, output_dir=tmp_path / "b")
    lines = Path(__file__).read_text().splitlines()
    (t0,) = [i for i, s in enumerate(lines, start=1) if s.strip().startswith("t0 = pl.load(a, [0, 0], [128, 128])")]
    span = ei.value.span
    assert (span.filename, span.begin_line) == (str(Path(__file__).resolve()), t0)
    assert f"(largest: 't0' 65536 B (line {t0}), 't1' 65536 B (line {t0 + 1}), 't2' 65536 B (line {t0 + 2}))" \
        in ei.value.message
    assert lines[t0 - 1].strip() in str(ei.value)        # the caret is under the tile's statement

def test_same_kernel_fits_the_larger_ascend950_vec(tmp_path):
    compiled = ir.compile(TooBig, output_dir=tmp_path / "b", backend_type=BackendType.Ascend950)
    usage = json.loads((Path(compiled.output_dir) / "report" / "memory_usage.json").read_text())
    assert usage["big_kernel"]["Vec"] == {"peak": 3 * 128 * 128 * 4, "naive": 5 * 128 * 128 * 4,
                                          "capacity": 240 * 1024}


def test_addresses_are_aligned_and_disjoint(tmp_path):
    @pl.program
    class Odd:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[3, 5], pl.FP16], c: pl.Out[pl.Tensor[[3, 5], pl.FP16]]) -> pl.Tensor[[3, 5], pl.FP16]:
            t0 = pl.load(a, [0, 0], [3, 5])
            t1 = pl.add(t0, t0)
            t2 = pl.mul(t1, t0)   # t0 is still read: t1 needs a buffer of its own
            c = pl.store(t2, [0, 0], c)
            return c

    compiled = ir.compile(Odd, output_dir=tmp_path / "o")
    k = compiled.program.get_function("k")
    refs = [s.var.type.memref for s in k.body.stmts
            if isinstance(s, ir.AssignStmt) and isinstance(s.var.type, ir.TileType)]
    # each 5-element FP16 row (10 bytes) starts on the 32-byte alignment: 3 rows take 96 bytes
    assert [m.addr for m in refs[:2]] == [0, 96]
    assert all(m.size == 96 and m.addr % 32 == 0 for m in refs)
