"""The builtin host-collective chip programs (`pypto.runtime.dist.builtin`, SPEC §8): their shape
(entry `main`, kernel `collective`, parameter directions), names, the implicit allreduce signal and
the errors for bad requests. Running them: test_coll_world.py and test_coll_host.py."""

from __future__ import annotations

import pytest

from pypto.core.dtype import FP32, INDEX, INT32
from pypto.core.enums import FunctionType, ParamDirection, ReduceOp
from pypto.core.errors import CompileError
from pypto.ir.expr import Call, ConstInt, Var
from pypto.ir.types import DistributedTensorType, ScalarType, TensorType
from pypto.runtime.dist.builtin import (
    ENTRY,
    KERNEL,
    builtin_name,
    builtin_program,
    implicit_signal,
    signal_shape,
)


def win(*shape, dtype=FP32):
    return DistributedTensorType(tuple(ConstInt(d, INDEX) if isinstance(d, int) else d for d in shape), dtype)


def test_an_allreduce_program_is_an_entry_calling_one_kernel_with_the_collective():
    prog = builtin_program("pld.allreduce", [win(8, 64), win(4, 1, dtype=INT32)], {"op": ReduceOp.Max})
    entry, kernel = prog.get_function(ENTRY), prog.get_function(KERNEL)
    assert entry.func_type is FunctionType.Orchestration and kernel.func_type is FunctionType.InCore
    assert [p.name for p in kernel.params] == ["src", "signal"]
    assert kernel.param_directions == (ParamDirection.InOut, ParamDirection.In)   # the signal is only read
    (stmt, _ret) = kernel.body.stmts
    assert isinstance(stmt.expr, Call) and stmt.expr.op == "pld.allreduce"
    assert stmt.expr.attr("op") is ReduceOp.Max and stmt.expr.attr("mode") == "mesh"
    assert prog.name.startswith("pld_allreduce_max_mesh_1_")


def test_names_differ_by_attributes_and_operand_types_and_agree_otherwise():
    a = builtin_program("allreduce", [win(8, 64)], {"mode": "ring"}).name
    assert a == builtin_program("pld.allreduce", [win(8, 64)], {"mode": "ring", "op": ReduceOp.Sum}).name
    assert a != builtin_program("allreduce", [win(8, 65)], {"mode": "ring"}).name
    assert a != builtin_program("allreduce", [win(8, 64)], {"mode": "mesh"}).name
    assert builtin_name("pld.barrier") == "pld_barrier"
    assert a.isidentifier()


def test_a_host_allreduce_without_a_signal_gets_a_dynamic_one():
    assert implicit_signal("pld.allreduce", [win(8, 64)])
    assert not implicit_signal("pld.allreduce", [win(8, 64), win(4, 1, dtype=INT32)])
    assert not implicit_signal("pld.barrier", [win(4, 1, dtype=INT32)])
    for mode, dims in (("mesh", ["NR", 1]), ("ring", ["RING_STEPS", "NR"])):
        kernel = builtin_program("allreduce", [win(8, 64)], {"mode": mode}).get_function(KERNEL)
        sig = kernel.params[-1].type
        assert isinstance(sig, DistributedTensorType) and sig.dtype is INT32
        assert [d.name if isinstance(d, Var) else d.value for d in sig.shape] == dims
    assert signal_shape("pld.allreduce", {"mode": "ring"}, 4) == [6, 4]
    assert signal_shape("allreduce", {}, 4) == [4, 1]
    assert signal_shape("pld.broadcast", {"root": 1}, 3) == [3, 1]


def test_host_computed_dimensions_become_dynamic_ones():
    ws = Call("pld.world_size", (), (), ScalarType(INDEX))
    kernel = builtin_program("pld.barrier", [win(ws, 1, dtype=INT32)], {}).get_function(KERNEL)
    (dim0, dim1) = kernel.params[0].type.shape
    assert isinstance(dim0, Var) and dim0.name == "signal_dim0" and dim1.value == 1


def test_allgather_reads_local_and_writes_target():
    prog = builtin_program("allgather", [TensorType((ConstInt(4, INDEX),), FP32), win(3, 4), win(3, 1, dtype=INT32)],
                           {})
    kernel = prog.get_function(KERNEL)
    assert kernel.param_directions == (ParamDirection.In, ParamDirection.InOut, ParamDirection.In)
    assert len(kernel.return_types) == 1


@pytest.mark.parametrize("name, types, message", [
    ("pld.allsum", [win(8, 64)], "no builtin collective named 'pld.allsum'; the collectives are pld.allreduce"),
    ("pld.broadcast", [win(8, 64)], "pld.broadcast takes 2 operands (target, signal), got 1"),
    ("pld.allreduce", [win(8, 64), win(4, 2, dtype=INT32)],
     "pld.allreduce: argument 'signal' must have shape [NR, 1] (one cell per rank), got [4, 2]"),
])
def test_bad_requests_are_compile_errors(name, types, message):
    with pytest.raises(CompileError) as e:
        builtin_program(name, types, {})
    assert e.value.message.startswith(message)
