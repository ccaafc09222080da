"""HOST-level functions of distributed programs (SPEC §8; Language Guide "@pl.jit family"): the
`@pl.jit.host` and class forms, `device=r` dispatch, `x[r]`, `pl.dynamic` rank counts and host
SubWorkers, printed as DSL and re-parsed."""

import pytest

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.enums import FunctionType, Level, Role
from pypto.ir.expr import Call
from pypto.ops.distributed_host import dispatch_args, dispatch_device

NR = pl.dynamic("NR")


# ---- the Language Guide's host example, as written ----------------------------------------------
@pl.jit.inline
def reduce_step(local, peer, out): ...


@pl.jit
def chip_orch(
    inp: pl.Tensor, out: pl.Out[pl.Tensor],
    data: pl.InOut[pld.DistributedTensor], peer: pl.Scalar[pl.INT32],
):
    return reduce_step(inp, peer, out)   # auto-discovered sub-function


@pl.jit.host
def host_orch(
    inputs: pl.Tensor[[2, 1, 256], pl.FP32],
    outputs: pl.Out[pl.Tensor[[2, 1, 256], pl.FP32]],
):
    data_buf = pld.alloc_window_buffer(256 * pl.FP32.get_byte())
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, 256], dtype=pl.FP32)
        chip_orch(inputs[r], outputs[r], data, (r + 1) % pld.world_size(),
                  device=r)            # device= dispatches per-rank
    return outputs


GUIDE_EXPECTED = '''\
# pypto.program: host_orch
import pypto.language as pl
import pypto.language.distributed as pld

@pl.program
class host_orch:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(self, inp: pl.Tensor[[1, 256], pl.FP32], out: pl.Out[pl.Tensor[[1, 256], pl.FP32]], \
data: pl.InOut[pld.DistributedTensor[[1, 256], pl.FP32]], peer: pl.Scalar[pl.INT32]):
        return

    @pl.function(type=pl.FunctionType.Opaque, level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, inputs: pl.Tensor[[2, 1, 256], pl.FP32], outputs: pl.Out[pl.Tensor[[2, 1, 256], pl.FP32]]) \
-> pl.Tensor[[2, 1, 256], pl.FP32]:
        data_buf: pld.WindowBuffer = pld.alloc_window_buffer(1024)
        for r in pl.range(0, pld.world_size(), 1):
            data: pld.DistributedTensor[[1, 256], pl.FP32] = pld.window(data_buf, [1, 256], dtype=pl.FP32)
            self.chip_orch(pld.rank_view(inputs, r), pld.rank_view(outputs, r), data, (r + 1) % pld.world_size(), \
device=r)
        return outputs
'''


def test_guide_host_example_specialises_to_a_host_program():
    prog = host_orch.specialize()
    assert prog.as_python() == GUIDE_EXPECTED
    host = prog.get_function("host_orch")
    assert (host.level, host.role) == (Level.HOST, Role.Orchestrator)
    assert prog.get_function("chip_orch").func_type is FunctionType.Orchestration


def test_guide_host_example_round_trips():
    prog = host_orch.specialize()
    again = pl.parse(prog.as_python())
    ir.assert_structural_equal(prog, again)
    assert again.as_python() == GUIDE_EXPECTED
    ir.assert_structural_equal(ir.deserialize(ir.serialize(prog)), prog)


def test_dispatch_call_carries_the_rank_last():
    host = host_orch.specialize().get_function("host_orch")
    loop = host.body.stmts[1]
    call = loop.body.stmts[1].expr
    assert isinstance(call, Call) and call.op_name == "chip_orch"
    assert dispatch_device(call) is loop.loop_var
    assert len(dispatch_args(call)) == 4 and call.attr("device") is True
    x_r = dispatch_args(call)[0]
    assert x_r.op == "pld.rank_view" and [d.value for d in x_r.type.shape] == [1, 256]


# ---- the class form, a pl.dynamic rank count, a SubWorker --------------------------------------
@pl.program
class Scale:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             scale: pl.Scalar[pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.muls(x, scale)
        return y

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def done(self, ys: pl.Tensor[[NR, 16, 64], pl.FP32]):
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, xs: pl.Tensor[[NR, 16, 64], pl.FP32],
             ys: pl.Out[pl.Tensor[[NR, 16, 64], pl.FP32]]) -> pl.Tensor[[NR, 16, 64], pl.FP32]:
        for r in pl.range(NR):
            self.chip(xs[r], ys[r], pl.cast(r + 1, pl.FP32), device=r)
        self.done(ys)
        return ys


SCALE_HOST = '''\
    @pl.function(type=pl.FunctionType.Opaque, level=pl.Level.HOST, role=pl.Role.SubWorker)
    def done(self, ys: pl.Tensor[[NR, 16, 64], pl.FP32]):
        pass

    @pl.function(type=pl.FunctionType.Opaque, level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, xs: pl.Tensor[[NR, 16, 64], pl.FP32], ys: pl.Out[pl.Tensor[[NR, 16, 64], pl.FP32]]) \
-> pl.Tensor[[NR, 16, 64], pl.FP32]:
        for r in pl.range(0, NR, 1):
            self.chip(pld.rank_view(xs, r), pld.rank_view(ys, r), pl.cast(r + 1, pl.FP32), device=r)
        self.done(ys)
        return ys
'''


def test_class_form_prints_host_functions_and_round_trips():
    text = Scale.as_python()
    assert text.startswith('# pypto.program: Scale\nimport pypto.language as pl\n'
                           'import pypto.language.distributed as pld\n\nNR = pl.dynamic("NR")\n')
    assert text.endswith(SCALE_HOST)
    ir.assert_structural_equal(pl.parse(text), Scale)
    sub = Scale.get_function("done")
    assert (sub.level, sub.role) == (Level.HOST, Role.SubWorker)


def test_host_scalar_arithmetic_on_the_rank():
    @pl.jit.host
    def shift(xs: pl.Tensor[[NR, 1, 256], pl.FP32], ys: pl.Out[pl.Tensor[[NR, 1, 256], pl.FP32]]):
        n = pld.world_size()
        for r in pl.range(n):
            chip_orch(xs[r], ys[(r + 1) % n], pld.window(pld.alloc_window_buffer([1, 256], dtype=pl.FP32),
                                                          [1, 256], dtype=pl.FP32), (r + n - 1) % n, device=r)
        return ys

    text = shift.specialize().as_python()
    assert "n: pl.Scalar[pl.INT64] = pld.world_size()" in text
    assert "for r in pl.range(0, n, 1):" in text
    assert "pld.rank_view(ys, (r + 1) % n)" in text
    assert "pld.alloc_window_buffer([1, 256], dtype=pl.FP32)" in text
    assert "((r + n) - 1) % n, device=r)" in text
    ir.assert_structural_equal(pl.parse(text), shift.specialize())


def test_jit_host_rejects_level():
    with pytest.raises(TypeError, match=r"@pl.jit.host does not take level= \(HOST is implicit\)"):
        pl.jit.host(level=pl.Level.HOST)


def test_a_host_level_scope_of_a_single_chip_program_keeps_the_chip_rules(tmp_path):
    """`pl.at(level=pl.Level.HOST)` in a chip orchestration function is outlined into a HOST-level
    *chip* orchestration (type Orchestration): not a distributed host orchestrator, so the program
    compiles (and its pass dumps re-parse) as a single-chip program."""
    import torch

    from pypto.runtime.compiled import CompiledProgram

    S = [16, 32]

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[S, pl.FP32], o: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            t = pl.load(a, [0, 0], [16, 32])
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[S, pl.FP32], c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            with pl.at(level=pl.Level.HOST):
                c = self.k(a, c)
            return c

    cp = ir.compile(P, tmp_path, verification_level="ROUNDTRIP", skip_ptoas=True)
    assert isinstance(cp, CompiledProgram)
    host = [f for f in cp.program.functions if f.level is Level.HOST]
    assert len(host) == 1 and host[0].func_type is FunctionType.Orchestration
    a, c = torch.randn(16, 32), torch.zeros(16, 32)
    cp(a, c)
    assert torch.equal(a, c)
