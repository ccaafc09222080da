"""report/perf_hints.log (User Manual: "check report/perf_hints.log first"): PH001 narrow DDR rows
against the backend's recommended bytes, PH002 L0 tiles off the 16-row fractal, PH003 Out
parameters never written; and `python -m pypto.tools.perf_hints BUILD_DIR`."""

import json
import re
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.tools import perf_hints as ph

HERE = Path(__file__).resolve()


def _line_of(needle: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), start=1) if needle in line)


@pl.program
class Narrow:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for j in pl.range(0, 64, 32):
            t = pl.load(x, [0, j], [64, 32])   # rows of 32 x FP32 = 128 B
            y = pl.store(pl.exp(t), [0, j], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        y = self.k(x, y)
        return y


def _hints(out: Path) -> list[str]:
    return [line for line in (out / "report" / "perf_hints.log").read_text().splitlines()
            if not line.startswith("#")]


def test_ph001_narrow_rows_depend_on_the_backend(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="pypto.diagnostics"):
        ir.compile(Narrow, output_dir=tmp_path / "a2", backend_type=BackendType.Ascend910B)
    # one summary line on stderr (SPEC §12), the hints are in the log
    assert [r.getMessage() for r in caplog.records if r.name == "pypto.diagnostics"] == [
        f"2 performance hint(s) for program 'Narrow' (PH001 at {HERE.name}:{_line_of('t = pl.load(x, [0, j], [64, 32])')}, "
        f"PH001 at {HERE.name}:{_line_of('y = pl.store(pl.exp(t), [0, j], y)')}): "
        f"see {tmp_path / 'a2' / 'report' / 'perf_hints.log'}"]
    hints = _hints(tmp_path / "a2")
    assert len(hints) == 2 and all(h.startswith("PH001 ") for h in hints)
    load_line = _line_of("t = pl.load(x, [0, j], [64, 32])")
    assert re.match(rf"PH001 {re.escape(str(HERE))}:{load_line}:\d+: in 'k': 'tile.load' moves tile rows of "
                    r"128 B \(32 x FP32\), below the 512 B innermost size Ascend910B recommends \(DDR is "
                    r"accessed in 512 B units\); make the innermost tile dimension at least 128 elements", hints[0])
    assert "'tile.store'" in hints[1]
    # Ascend950 accesses DDR in 128 B units: 128 B rows are fine there
    caplog.clear()
    ir.compile(Narrow, output_dir=tmp_path / "a5", backend_type=BackendType.Ascend950)
    assert _hints(tmp_path / "a5") == ["no performance hints"]
    assert not [r for r in caplog.records if r.name == "pypto.diagnostics"]


@pl.program
class NarrowTensor:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 256], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.exp(x[:, 0:64])   # rows of 64 x FP32 = 256 B: a slice of x, all of y
        return y


def test_ph001_at_tensor_level_advises_the_tensor_or_the_slice(tmp_path, capsys):
    """The transfers of a tensor-level region are made by the compiler: PH001 advises a wider
    tensor (a store of whole rows of y) or a wider slice (the load of x[:, 0:64]), not a wider
    tile; the command line, reading the finished build, words them the same."""
    ir.compile(NarrowTensor, output_dir=tmp_path / "b", backend_type=BackendType.Ascend910B)
    line = _line_of("y[:] = pl.exp(x[:, 0:64])")
    head = ("in 'main_incore_0': '{op}' moves tile rows of 256 B (64 x FP32), below the 512 B innermost "
            "size Ascend910B recommends (DDR is accessed in 512 B units); the compiler made this transfer "
            "from tensor-level code, ")
    assert _hints(tmp_path / "b") == [
        f"PH001 {HERE}:{line}:20: " + head.format(op="tile.load") + "with rows of a slice of the tensor: slice "
        "at least 128 elements along its innermost dimension (when the compiler chose the slice, a block of "
        "the region, PH008 says what to change)",
        f"PH001 {HERE}:{line}:13: " + head.format(op="tile.store") + "with whole rows of the tensor: give the "
        "tensor an innermost dimension of at least 128 elements (a layout with a longer last dimension, e.g. "
        "the transposed tensor)"]
    assert ph.main([str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == (tmp_path / "b" / "report" / "perf_hints.log").read_text()
    kept = json.loads((tmp_path / "b" / "compiled_meta.json").read_text())["tensor_transfers"]
    assert [row[:3] for row in kept] == [[str(HERE), line, 13], [str(HERE), line, 20]]
    assert ph.transfers_from_json(None) == set()   # a build from before: tile-level wording


@pl.program
class SmallMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[8, 128], pl.FP16], b: pl.Tensor[[128, 256], pl.FP16],
           c: pl.Out[pl.Tensor[[8, 256], pl.FP32]]) -> pl.Tensor[[8, 256], pl.FP32]:
        a1 = pl.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        a0 = pl.move(a1, target_memory=pl.Mem.Left)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        acc = pl.matmul(a0, b0)
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[8, 128], pl.FP16], b: pl.Tensor[[128, 256], pl.FP16],
             c: pl.Out[pl.Tensor[[8, 256], pl.FP32]]) -> pl.Tensor[[8, 256], pl.FP32]:
        c = self.mm(a, b, c)
        return c


def test_ph002_l0_tiles_off_the_fractal(tmp_path):
    compiled = ir.compile(SmallMatmul, output_dir=tmp_path / "b")
    a, b, c = torch.randn(8, 128).half(), torch.randn(128, 256).half(), torch.zeros(8, 256)
    compiled(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    hints = [h for h in _hints(tmp_path / "b") if h.startswith("PH002")]
    assert len(hints) == 2   # a0 (Left, 8 x 128) and acc (Acc, 8 x 256); b0 (128 x 256) is aligned
    assert re.match(rf"PH002 {re.escape(str(HERE))}:{_line_of('a0 = pl.move(a1')}:\d+: in 'mm': tile 'a0' in "
                    r"Left \(L0A\) is 8 x 128, not aligned to the 16-row fractal; the cube unit works on whole "
                    r"16 x 16 boxes, so pad it to 16 x 128", hints[0])
    assert "tile 'acc' in Acc (L0C) is 8 x 256" in hints[1]


def test_ph003_out_parameter_never_written(tmp_path):
    @pl.program
    class Forgot:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 128], pl.FP32], y: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
              z: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> tuple[pl.Tensor[[16, 128], pl.FP32],
                                                                 pl.Tensor[[16, 128], pl.FP32]]:
            t = pl.load(x, [0, 0], [16, 128])
            y = pl.store(t, [0, 0], y)
            return y, z

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 128], pl.FP32], y: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
                 z: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            y, z = self.k(x, y, z)
            return y

    with pytest.warns(UserWarning, match="'z'"):
        ir.compile(Forgot, output_dir=tmp_path / "b")
    hints = _hints(tmp_path / "b")
    ph3 = [h for h in hints if h.startswith("PH003")]
    assert len(ph3) == 1
    assert re.match(rf"PH003 {re.escape(str(HERE))}:\d+:\d+: in 'k': Out parameter 'z' is never written: the "
                    r"caller's tensor keeps its old contents", ph3[0])
    assert not any("'y'" in h for h in ph3)


def test_log_header_and_cli(tmp_path, capsys):
    ir.compile(Narrow, output_dir=tmp_path / "b", disabled_diagnostics={"PH002"})
    log = (tmp_path / "b" / "report" / "perf_hints.log").read_text()
    assert log.splitlines()[2] == "# diagnostic_phase='all', disabled_diagnostics=['PH002']"
    assert log.splitlines()[0] == "# Performance hints for program 'Narrow' on Ascend910B"
    assert all(code in log.splitlines()[1] for code in ("PH001", "PH002", "PH003"))
    assert ph.main([str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == log
    assert ph.main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_examples_without_problems_have_no_hints(tmp_path, examples_dir):
    import softmax

    ir.compile(softmax.RowSoftmax, output_dir=tmp_path / "b")
    assert _hints(tmp_path / "b") == ["no performance hints"]


@pl.jit
def _tensor_exp(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):   # PH008 names this line
        y[:] = pl.exp(x)
    return y


@pl.jit
def _tensor_argmax(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):   # PH008 names this line too
        y[:] = pl.row_argmax(pl.exp(x))
    return y


def _ph008(kernel, x, platform="a2a3sim", y=None):
    from pypto.runtime import RunConfig

    y = torch.empty_like(x) if y is None else y
    out = kernel.compile(x, y, config=RunConfig(platform=platform))
    return [h for h in _hints(Path(str(out))) if h.startswith("PH008")]


def test_ph008_a_region_tiled_into_rows_narrower_than_the_ddr_granule():
    # [20000, 7] FP32 does not fit Vec; blocks of whole rows (4 of 5000): 7 x 4 B = 28 B < 512 B (910B)
    (hint,) = _ph008(_tensor_exp, torch.randn(20000, 7))
    line = _line_of("PH008 names this line")
    assert re.match(rf"PH008 {re.escape(str(HERE))}:{line}:\d+: in '_tensor_exp_incore_0': the tensor-level region "
                    r"is tiled into blocks of 5000 x 7 FP32: rows of 28 B, below the 512 B DDR access granule of "
                    r"Ascend910B, so each block row moves a whole granule; the tensors' rows hold only 7 elements; "
                    r"a layout with a longer innermost dimension \(e.g. the transposed tensor\) moves fewer "
                    r"granules$", hint)
    # 950 accesses DDR in 128 B granules: 40 x 4 B = 160 B rows are fine there, not on 910B
    assert _ph008(_tensor_exp, torch.randn(20000, 40), "a5sim") == []
    assert len(_ph008(_tensor_exp, torch.randn(20000, 40))) == 1


def test_ph008_a_region_where_only_short_blocks_fit():
    # argmax rows of 20000 FP32 (80000 B; positions do not combine across column blocks, so rows stay
    # whole): x and the reduction's scratch tile per row -> one row per block fits Vec (184 KiB)
    (hint,) = _ph008(_tensor_argmax, torch.randn(16, 20000), y=torch.empty(16, 1, dtype=torch.int32))
    line = _line_of("PH008 names this line too")
    assert re.match(rf"PH008 {re.escape(str(HERE))}:{line}:\d+: in '_tensor_argmax_incore_0': the tensor-level "
                    r"region is tiled into blocks of 1 x 20000 FP32: only 1 row\(s\) of 20000 elements fit one "
                    r"core's Vec \(188416 B\) with the chain's live values", hint)


def test_ph008_not_for_good_blocks():
    assert _ph008(_tensor_exp, torch.randn(1024, 1024)) == []      # 16 x 1024 FP32 blocks
