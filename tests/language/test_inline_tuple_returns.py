"""Inline helpers that return several values (`o1, o2 = helper(...)`), in kernels and in
orchestration functions, for `@pl.jit.inline`, `@pl.inline` and class-form `FunctionType.Inline`
helpers (SPEC §9; the tuple is taken apart by Simplify, SPEC §5)."""

import torch

import pypto.language as pl
from pypto import ir

T = pl.Tensor[[8, 64], pl.FP32]


def _inputs():
    torch.manual_seed(0)
    return torch.randn(8, 64), torch.randn(8, 64), torch.zeros(8, 64), torch.zeros(8, 64)


@pl.jit.inline
def jit_two(a, b, o1, o2):
    o1 = pl.store(pl.add(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], o1)
    o2 = pl.store(pl.load(b, [0, 0], [8, 64]), [0, 0], o2)
    return o1, o2


@pl.jit.incore
def jit_k(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    o1, o2 = jit_two(a, b, o1, o2)
    return o1, o2


@pl.jit
def jit_f(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    o1, o2 = jit_k(a, b, o1, o2)
    return o1


def test_jit_inline_tuple_return_in_a_kernel():
    a, b, o1, o2 = _inputs()
    jit_f(a, b, o1, o2)
    torch.testing.assert_close(o1, a + 1)
    torch.testing.assert_close(o2, b)


@pl.jit.incore
def jit_plus(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = pl.store(pl.add(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], o)
    return o


@pl.jit.incore
def jit_times(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = pl.store(pl.mul(pl.load(a, [0, 0], [8, 64]), 2.0), [0, 0], o)
    return o


@pl.jit.inline
def jit_both(a, b, o1, o2):
    o1 = jit_plus(a, o1)
    o2 = jit_times(b, o2)
    return o1, o2


@pl.jit
def jit_orch(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    o1, o2 = jit_both(a, b, o1, o2)
    return o1


def test_jit_inline_tuple_return_in_orchestration():
    a, b, o1, o2 = _inputs()
    jit_orch(a, b, o1, o2)
    torch.testing.assert_close(o1, a + 1)
    torch.testing.assert_close(o2, b * 2)


@pl.inline
def two(a: T, b: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
    o1 = pl.store(pl.add(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], o1)
    o2 = pl.store(pl.exp(pl.load(b, [0, 0], [8, 64])), [0, 0], o2)
    return o1, o2


@pl.program
class DecoratorInline:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: T, b: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
        o1, o2 = two(a, b, o1, o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, b: T, o1: pl.Out[T], o2: pl.Out[T]):
        o1, o2 = self.k(a, b, o1, o2)


@pl.program
class ClassInline:
    @pl.function(type=pl.FunctionType.Inline)
    def two(self, a: T, b: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
        o1 = pl.store(pl.add(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], o1)
        o2 = pl.store(pl.exp(pl.load(b, [0, 0], [8, 64])), [0, 0], o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: T, b: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
        o1, o2 = self.two(a, b, o1, o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.InCore)
    def plus(self, a: T, o: pl.Out[T]) -> T:
        o = pl.store(pl.add(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Inline)
    def twice(self, a: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
        o1 = self.plus(a, o1)
        o2 = self.plus(o1, o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, b: T, o1: pl.Out[T], o2: pl.Out[T], o3: pl.Out[T], o4: pl.Out[T]):
        o1, o2 = self.k(a, b, o1, o2)
        o3, o4 = self.twice(a, o3, o4)  # an inline helper returning a tuple in orchestration


def test_pl_inline_tuple_return_in_a_kernel():
    a, b, o1, o2 = _inputs()
    ir.compile(DecoratorInline, dump_passes=False)(a, b, o1, o2)
    torch.testing.assert_close(o1, a + 1)
    torch.testing.assert_close(o2, torch.exp(b))


def test_class_form_inline_tuple_return_in_kernel_and_orchestration():
    a, b, o1, o2 = _inputs()
    o3, o4 = torch.zeros(8, 64), torch.zeros(8, 64)
    ir.compile(ClassInline, dump_passes=False)(a, b, o1, o2, o3, o4)
    torch.testing.assert_close(o1, a + 1)
    torch.testing.assert_close(o2, torch.exp(b))
    torch.testing.assert_close(o3, a + 1)
    torch.testing.assert_close(o4, a + 2)
