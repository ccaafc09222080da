"""DeriveCallDirections: directions follow reads and writes; Out is never widened without need."""

import dataclasses

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.derive_call_directions import DeriveCallDirections

S = [16, 32]


def run(prog, ctx=None):
    return DeriveCallDirections().run(prog, ctx or PassContext())


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def produce(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]],
                keep: pl.InOut[pl.Tensor[S, pl.FP32]]) -> tuple[pl.Tensor[S, pl.FP32], pl.Tensor[S, pl.FP32]]:
        t = pl.load(a, [0, 0], S)
        o = pl.store(t, [0, 0], o)          # made In below (as a generated function may be): Out
        keep = pl.store(t, [0, 0], keep)    # declared InOut: stays InOut
        return o, keep

    @pl.function(type=pl.FunctionType.InCore)
    def accumulate(self, a: pl.Tensor[S, pl.FP32], acc: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        old = pl.load(acc, [0, 0], S)        # reads the incoming contents of an Out: InOut
        t = pl.load(a, [0, 0], S)
        s = pl.add(old, t)
        acc = pl.store(s, [0, 0], acc)
        return acc

    @pl.function(type=pl.FunctionType.InCore)
    def consume(self, o: pl.Tensor[S, pl.FP32], r: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t = pl.load(o, [0, 0], S)
        u = pl.add(t, t)
        r = pl.store(u, [0, 0], r)          # declared Out, only written: stays Out
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]], k: pl.InOut[pl.Tensor[S, pl.FP32]],
             acc: pl.Out[pl.Tensor[S, pl.FP32]], r: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        o1, k1 = self.produce(a, o, k)      # o (made In below): written, read later by consume -> Out
        acc1 = self.accumulate(a, acc)      # acc: its incoming contents are read -> InOut
        r1 = self.consume(o1, r)
        return r1


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def produce(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]],
                keep: pl.InOut[pl.Tensor[S, pl.FP32]]) -> tuple[pl.Tensor[S, pl.FP32], pl.Tensor[S, pl.FP32]]:
        t = pl.load(a, [0, 0], S)
        o = pl.store(t, [0, 0], o)
        keep = pl.store(t, [0, 0], keep)
        return o, keep

    @pl.function(type=pl.FunctionType.InCore)
    def accumulate(self, a: pl.Tensor[S, pl.FP32], acc: pl.InOut[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        old = pl.load(acc, [0, 0], S)
        t = pl.load(a, [0, 0], S)
        s = pl.add(old, t)
        acc = pl.store(s, [0, 0], acc)
        return acc

    @pl.function(type=pl.FunctionType.InCore)
    def consume(self, o: pl.Tensor[S, pl.FP32], r: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t = pl.load(o, [0, 0], S)
        u = pl.add(t, t)
        r = pl.store(u, [0, 0], r)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]], k: pl.InOut[pl.Tensor[S, pl.FP32]],
             acc: pl.InOut[pl.Tensor[S, pl.FP32]], r: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        o1, k1 = self.produce(a, o, k)
        acc1 = self.accumulate(a, acc)
        r1 = self.consume(o1, r)
        return r1


def _declare_in(prog, func, param):
    """`prog` with `func`'s parameter `param` declared In (the parser rejects writing an In
    parameter, but passes generate functions whose directions are derived here)."""
    f = prog.get_function(func)
    dirs = [pl.Direction.In if p.name == param else d for p, d in zip(f.params, f.param_directions)]
    nf = dataclasses.replace(f, param_directions=tuple(dirs))
    return dataclasses.replace(prog, functions=tuple(nf if g is f else g for g in prog.functions))


def test_directions_follow_reads_and_writes():
    ctx = PassContext()
    out = run(_declare_in(_declare_in(Before, "produce", "o"), "main", "o"), ctx)
    ir.assert_structural_equal(out, Expected)
    assert ctx.records["call_directions"] == {
        "produce": {"o": {"declared": "In", "derived": "Out"}},
        "accumulate": {"acc": {"declared": "Out", "derived": "InOut"}},
        "main": {"o": {"declared": "In", "derived": "Out"}, "acc": {"declared": "Out", "derived": "InOut"}},
    }
    assert run(Expected) is Expected


@pl.program
class WritesAnInput:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t = pl.load(a, [0, 0], S)
        u = pl.mul(t, 3.0)
        c = pl.store(u, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        c = self.k(a, c)
        return c


def test_a_written_parameter_declared_in_reaches_the_host(tmp_path):
    """SPEC §9: an output treated as an input leaves the host with stale contents."""
    prog = _declare_in(_declare_in(WritesAnInput, "k", "c"), "main", "c")
    compiled = ir.compile(prog, output_dir=tmp_path / "b")
    dirs = {f.name: [d.name for d in f.param_directions] for f in compiled.program.functions}
    assert dirs == {"k": ["In", "Out"], "main": ["In", "Out"]}
    a, c = torch.randn(*S), torch.zeros(*S)
    compiled(a, c)
    torch.testing.assert_close(c, a * 3.0)


def test_a_kernel_returning_some_of_its_outputs_is_an_error_at_its_return():
    """A kernel call stands for all its Out/InOut tensors in parameter order (that is how the
    runtime, the torch reference and the host code bind it): returning fewer is an error."""
    from pypto.core.errors import CompileError

    with pytest.raises(CompileError) as ei:
        ir.compile(pl.parse(_PARTIAL), dump_passes=False, skip_ptoas=True)
    assert "kernel 'k' returns (y), but a kernel call stands for all its Out/InOut tensors in parameter " \
           "order: return (y, z)" in ei.value.message
    assert ei.value.span.begin_line == 9


def test_a_kernel_returning_its_outputs_out_of_order_is_an_error():
    from pypto.core.errors import CompileError

    with pytest.raises(CompileError, match=r"returns \(z, y\).*return \(y, z\)"):
        ir.compile(pl.parse(_SWAPPED_RETURN), dump_passes=False, skip_ptoas=True)


_PARTIAL = """import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]], z: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], y)
        z = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], z)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]], z: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.k(x, y, z)
        return y
"""
_SWAPPED_RETURN = _PARTIAL.replace("        return y\n\n    @pl.function(type=pl.FunctionType.Orch",
                                   "        return z, y\n\n    @pl.function(type=pl.FunctionType.Orch").replace(
    "-> pl.Tensor[[16, 64], pl.FP32]:\n        y = pl.store",
    "-> tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:\n        y = pl.store").replace(
    "        y = self.k(x, y, z)", "        z, y = self.k(x, y, z)")


def test_a_kernel_returning_a_tile_or_an_input_is_an_error():
    from pypto.core.errors import CompileError

    tile_ret = _PARTIAL.replace("        return y\n\n    @pl.function(type=pl.FunctionType.Orch",
                                "        t = pl.load(x, [0, 0], [16, 64])\n        return t\n\n"
                                "    @pl.function(type=pl.FunctionType.Orch")
    with pytest.raises(CompileError, match=r"kernel 'k' returns tile 't'.*pl\.store"):
        ir.compile(pl.parse(tile_ret), dump_passes=False, skip_ptoas=True)
    input_ret = _PARTIAL.replace("        return y\n\n    @pl.function(type=pl.FunctionType.Orch",
                                 "        return x\n\n    @pl.function(type=pl.FunctionType.Orch")
    with pytest.raises(CompileError, match=r"kernel 'k' returns its input 'x'"):
        ir.compile(pl.parse(input_ret), dump_passes=False, skip_ptoas=True)
