"""Programs shared by tests in several folders (imported by name: `tests/` is on sys.path)."""

GROUPED_SRC = '''
import pypto.language as pl

@pl.program
class Grouped:
    @pl.function(type=pl.FunctionType.AIC)
    def mm_aic(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
               p: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a1 = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        p = pl.store(acc, [0, 0], p)
        return p

    @pl.function(type=pl.FunctionType.AIV)
    def exp_aiv(self, p: pl.Tensor[[16, 16], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(p, [0, 0], [16, 16])
        c = pl.store(pl.exp(t), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Group)
    def mm_exp(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
               p: pl.Out[pl.Tensor[[16, 16], pl.FP32]], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        p = self.mm_aic(a, b, p)
        c = self.exp_aiv(p, c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        p = pl.create_tensor([16, 16], dtype=pl.FP32)
        c = self.mm_exp(a, b, p, c)
        return c
'''



def load_example(name: str):  # type: ignore[no-untyped-def]
    """The module of `examples/<name>.py` (with the examples folder on sys.path while it loads,
    for its `_check` helper), so tests can use an example's programs."""
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "examples"
    spec = importlib.util.spec_from_file_location(f"example_{name}", folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(folder))
    return mod
