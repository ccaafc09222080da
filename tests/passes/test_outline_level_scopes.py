"""OutlineHierarchyScopes and OutlineClusterScopes: `pl.at` scopes above the core level become
Orchestration functions of that level (SPEC §2.2, §5)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.outline_cluster_scopes import OutlineClusterScopes
from pypto.passes.outline_hierarchy_scopes import OutlineHierarchyScopes

S = [16, 64]


@pl.program
class ChipScope:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        n = 2.0
        with pl.at(level=pl.Level.CHIP):
            t = pl.create_tensor(S, dtype=pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP):
                s = pl.mul(a, n)
                t1 = pl.assemble(t, s, [0, 0])
            with pl.at(level=pl.Level.CORE_GROUP):
                m = pl.mul(t1, a)
                c1 = pl.assemble(c, m, [0, 0])
        return c1


@pl.program
class ChipScopeExpected:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main_chip_0(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]],
                    n: pl.Scalar[pl.FP32]) -> pl.Tensor[S, pl.FP32]:
        t = pl.create_tensor(S, dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.mul(a, n)
            t1 = pl.assemble(t, s, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            m = pl.mul(t1, a)
            c1 = pl.assemble(c, m, [0, 0])
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        n = 2.0
        c1 = self.main_chip_0(a, c, n)
        return c1


def test_chip_scope_becomes_a_chip_level_orchestration():
    ctx = PassContext()
    ir.assert_structural_equal(OutlineHierarchyScopes().run(ChipScope, ctx), ChipScopeExpected)
    assert OutlineClusterScopes().run(ChipScope, ctx) is ChipScope  # not a cluster level


def test_outlined_levels_compile_and_run(tmp_path):
    a = torch.randn(*S)
    for backend, platform in ((BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")):
        compiled = ir.compile(ChipScope, output_dir=tmp_path / backend.name, backend_type=backend,
                              platform=platform, verification_level=ir.VerificationLevel.ROUNDTRIP)
        kinds = {f.name: (f.func_type, f.level) for f in compiled.program.functions}
        assert kinds["main_chip_0"] == (pl.FunctionType.Orchestration, pl.Level.CHIP)
        assert kinds["main_chip_0_incore_0"][0] is pl.FunctionType.InCore
        c = torch.zeros(*S)
        compiled(a, c)
        torch.testing.assert_close(c, (a * 2.0) * a)


@pl.program
class ClusterScope:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t = pl.load(a, [0, 0], S)
        o = pl.store(t, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]],
             d: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        with pl.at(level=pl.Level.CLUSTER_0):
            c1 = self.k(a, c)
            with pl.at(level=pl.Level.HOST):   # another family: stays for OutlineHierarchyScopes
                d1 = self.k(c1, d)
        return d1


@pl.program
class ClusterScopeExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t = pl.load(a, [0, 0], S)
        o = pl.store(t, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CLUSTER_0, role=pl.Role.Orchestrator)
    def main_cluster_0_0(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]],
                         d: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        c1 = self.k(a, c)
        with pl.at(level=pl.Level.HOST):
            d1 = self.k(c1, d)
        return d1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]],
             d: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        d1 = self.main_cluster_0_0(a, c, d)
        return d1


def test_cluster_scope_becomes_a_cluster_level_orchestration():
    out = OutlineClusterScopes().run(ClusterScope, PassContext())
    ir.assert_structural_equal(out, ClusterScopeExpected)
    both = OutlineHierarchyScopes().run(out, PassContext())
    host = both.get_function("main_cluster_0_0_host_0")
    assert host.level is pl.Level.HOST and [p.name for p in host.params] == ["d", "c1"]
    assert [d.name for d in host.param_directions] == ["Out", "In"]  # caller parameters first


def test_programs_without_such_scopes_are_unchanged():
    ctx = PassContext()
    assert OutlineHierarchyScopes().run(ClusterScopeExpected, ctx) is not ClusterScopeExpected
    assert OutlineClusterScopes().run(ClusterScopeExpected, ctx) is ClusterScopeExpected
    assert OutlineHierarchyScopes().run(ChipScopeExpected, ctx) is ChipScopeExpected


def test_a_chip_level_region_is_orchestration_code():
    """The body of pl.at(level=CHIP) becomes a CHIP-level Orchestration function: it may submit tasks
    (pl.submit was refused as 'inside a pl.at region'), and compute outside a core-level pl.at is the
    parser's 'Misplaced tensor op' error at the user's line (it was a CodegenError after the passes)."""
    from pypto.core.errors import InvalidOperationError
    from pypto.runtime import RunConfig

    @pl.jit.incore
    def scale(a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        o[:] = pl.mul(a, 2.0)
        return o

    @pl.jit
    def submits(a: pl.Tensor, b: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CHIP):
            b, t0 = pl.submit(scale, a, b)
            with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):
                c[:] = pl.add(b, 1.0)
        return c

    a, b, c = torch.randn(64, 128), torch.empty(64, 128), torch.empty(64, 128)
    submits(a, b, c, config=RunConfig(sanitize=True))
    assert torch.equal(c, a * 2.0 + 1.0)

    @pl.jit
    def computes(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CHIP):
            c[:] = pl.add(a, a)  # MARK-chip-compute
        return c

    with pytest.raises(InvalidOperationError) as e:
        computes(a, c)
    assert e.value.message == "Misplaced tensor op 'tensor.add' in Orchestration function (should be inside InCore block)"
    assert "MARK-chip-compute" in open(__file__).read().splitlines()[e.value.span.begin_line - 1]
