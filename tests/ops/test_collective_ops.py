"""Type rules of the collective OpSpecs `pld.allreduce` ... `pld.all_to_all_v` (SPEC §8 "Collectives")."""

from __future__ import annotations

import pytest

from pypto.core.dtype import FP32, INDEX, INT32, DataType
from pypto.core.enums import ReduceOp
from pypto.core.errors import CompileError
from pypto.ir.expr import ConstInt, Var
from pypto.ir.op import make_call
from pypto.ir.types import DistributedTensorType, ScalarType, TensorType, TupleType
from pypto.ops import get_op

NR = Var("NR", ScalarType(INDEX))


def dims(shape: list) -> tuple:
    return tuple(NR if d == "NR" else ConstInt(d, INDEX) for d in shape)


def win(name: str, shape: list, dtype: DataType = FP32) -> Var:
    return Var(name, DistributedTensorType(dims(shape), dtype))


def plain(name: str, shape: list, dtype: DataType = FP32) -> Var:
    return Var(name, TensorType(dims(shape), dtype))


def error_of(name: str, args: list, **attrs) -> str:
    with pytest.raises(CompileError) as e:
        make_call(name, args, attrs)
    return e.value.message


def test_allreduce_returns_its_src_and_takes_an_optional_signal():
    x = win("x", [8, 64])
    assert make_call("pld.allreduce", [x, win("s", [4, 1], INT32)]).type is x.type
    assert make_call("pld.allreduce", [x]).type is x.type   # host form: the builtin allocates one
    ring = make_call("pld.allreduce", [x, win("s", [6, 4], INT32)], {"mode": "ring", "op": ReduceOp.Max})
    assert ring.attr("op") is ReduceOp.Max and ring.attr("mode") == "ring"
    spec = get_op("pld.allreduce")
    assert spec.writes == (0,) and spec.reads == (0, 1)   # the signal is only read here (peers write it)
    assert spec.optional == ("signal",) and spec.has_trait("collective")


@pytest.mark.parametrize("args, attrs, message", [
    (lambda: [plain("x", [8, 64]), win("s", [4, 1], INT32)], {},
     "argument 'src' must be a window-bound pld.DistributedTensor, got Tensor (a plain Tensor lives only"),
    (lambda: [win("x", [8, 64]), win("s", [4, 1], FP32)], {},
     "argument 'signal' must have dtype INT32 or INT64 (signal cells are integer counters), got FP32"),
    (lambda: [win("x", [8, 64]), win("s", [4, 2], INT32)], {},
     "argument 'signal' must have shape [NR, 1] (one cell per rank), got [4, 2]"),
    (lambda: [win("x", [8, 64]), win("s", [4, 1], INT32)], {"mode": "ring"},
     "argument 'signal' must have shape [2*(NR-1), NR] for mode=\"ring\" (one column per rank, NR >= 2), got [4, 1]"),
    (lambda: [win("x", [8, 64]), win("s", [4, 4], INT32)], {"mode": "ring"},
     "argument 'signal' must have shape [2*(NR-1), NR] for mode=\"ring\" ([6, 4] for NR = 4), got [4, 4]"),
    (lambda: [win("x", [8, 64]), win("s", [4, 1], INT32)], {"mode": "tree"},
     "attribute 'mode' must be one of 'mesh', 'ring', got 'tree'"),
    (lambda: [win("x", [8, 64]), win("s", [4, 1], INT32)], {"op": "sum"},
     "attribute 'op' must be one of pld.ReduceOp.Sum, Max, Min, Prod, got 'sum'"),
    (lambda: [win("x", [8, 64]), win("s", [4, 1], INT32)], {"core_num": 4},
     "attribute 'core_num' = 4: core_num > 1 (splitting one collective over several cores) is not supported"),
    (lambda: [win("x", ["NR", 64]), win("s", [4, 1], INT32)], {},
     "argument 'src' needs static dimensions (the collective is chunked at compile time), got [NR, 64]"),
])
def test_allreduce_refuses(args, attrs, message):
    assert error_of("pld.allreduce", args(), **attrs).startswith(f"pld.allreduce: {message}")


def test_ring_signal_with_a_dynamic_rank_count_is_accepted():
    steps = Var("STEPS", ScalarType(INDEX))
    sig = Var("s", DistributedTensorType((steps, NR), INT32))
    assert make_call("pld.allreduce", [win("x", [8, 64]), sig], {"mode": "ring"}).type is not None


def test_barrier_and_broadcast():
    sig = win("s", ["NR", 1], INT32)
    t = make_call("pld.barrier", [sig]).type
    assert isinstance(t, TupleType) and t.types == ()
    x = win("x", [16, 16])
    assert make_call("pld.broadcast", [x, sig], {"root": 2}).type is x.type
    assert "attribute 'root' = 3 is not a rank of the 3 the signal is sized for" in \
        error_of("pld.broadcast", [x, win("s", [3, 1], INT32)], root=3)
    assert "attribute 'root' must be an integer" in error_of("pld.broadcast", [x, sig], root=-1)


def test_allgather_shapes():
    local, sig = win("l", [4, 32]), win("s", [4, 1], INT32)
    target = win("t", [4, 4, 32])
    assert make_call("pld.allgather", [local, target, sig]).type is target.type
    assert make_call("pld.allgather", [plain("l", [4, 32]), target, sig]).type is target.type  # local may be plain
    assert "argument 'target' must have shape [NR, *local.shape] = [NR, 4, 32], got [4, 4, 16]" in \
        error_of("pld.allgather", [local, win("t", [4, 4, 16]), sig])
    assert "argument 'target' has 2 rows but the signal is sized for 4 ranks" in \
        error_of("pld.allgather", [local, win("t", [2, 4, 32]), sig])
    assert "argument 'target' must be a window-bound" in error_of("pld.allgather", [local, plain("t", [4, 4, 32]), sig])


def test_reduce_scatter_and_all_to_all():
    sig = win("s", ["NR", 1], INT32)
    t = win("t", ["NR", 128])
    assert make_call("pld.reduce_scatter", [t, sig], {"op": ReduceOp.Min}).type is t.type
    assert "argument 'target' must have a leading rank dimension" in error_of("pld.reduce_scatter", [win("t", [128]), sig])
    i = win("i", ["NR", 128])
    assert make_call("pld.all_to_all", [i, t, sig]).type is t.type
    assert "arguments 'input' and 'target' must both be [NR, ...] with the same row shape, got [NR, 64] and " \
           "[NR, 128]" in error_of("pld.all_to_all", [win("i", ["NR", 64]), t, sig])
    # every rank pulls its rows from the peers' inputs: the input must be window-bound too
    assert "argument 'input' must be a window-bound" in error_of("pld.all_to_all", [plain("i", ["NR", 128]), t, sig])


def test_all_to_all_v_counts():
    sig = win("s", ["NR", 1], INT32)
    i, t = win("i", ["NR", 100]), win("t", ["NR", 100])
    c = plain("c", ["NR"], INT32)
    assert make_call("pld.all_to_all_v", [i, t, sig, c, c]).type is t.type
    assert "argument 'send_counts' must be a 1-D integer Tensor [NR], got FP32 [NR]" in \
        error_of("pld.all_to_all_v", [i, t, sig, plain("c", ["NR"]), c])
    assert "argument 'input' must be 2-D [NR, MAX_COUNT]" in \
        error_of("pld.all_to_all_v", [win("i", ["NR", 4, 25]), win("t", ["NR", 4, 25]), sig, c, c])
