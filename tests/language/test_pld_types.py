"""The `pld` language layer (SPEC §8): annotations and IR types, the op namespaces and short forms,
printing / parsing / serialization of kernels using every distributed op, and the located errors
of the op type rules and of the level checks."""

import pytest

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.core.dtype import FP32, INDEX, INT32, INT64
from pypto.core.enums import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.core.errors import InvalidOperationError, ParserTypeError
from pypto.ir.expr import ConstInt
from pypto.ir.types import CommCtxType, DistributedTensorType, ScalarType, TensorType

HEAD = "import pypto.language as pl\nimport pypto.language.distributed as pld\n\n\n"
SIG = "pld.DistributedTensor[[4, 1], pl.INT32]"
DATA = "pld.DistributedTensor[[16, 32], pl.FP32]"


def kernel(body: str, params: str = "") -> str:
    """An InCore function `k` (line 7 is its first body line) with windows `data`, `sig`, plain
    tensors `x`, `o` and an INT32 scalar `n`."""
    ps = (f"x: pl.Tensor[[16, 32], pl.FP32], data: {DATA}, sig: {SIG}, n: pl.Scalar[pl.INT32], "
          f"o: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]{params}")
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"{HEAD}@pl.function(type=pl.FunctionType.InCore)\ndef k({ps}):\n{lines}\n"


def shape(*dims):
    return tuple(ConstInt(d, INDEX) for d in dims)


# ---- enums and types ---------------------------------------------------------------------------

def test_enums_print_as_their_pld_spelling():
    assert [repr(m) for m in NotifyOp] == ["pld.NotifyOp.AtomicAdd", "pld.NotifyOp.Set"]
    assert [repr(m) for m in WaitCmp] == ["pld.WaitCmp.Eq", "pld.WaitCmp.Ge"]
    assert [repr(m) for m in AtomicType] == ["pld.AtomicType.None_", "pld.AtomicType.Add"]
    assert [m.name for m in ReduceOp] == ["Sum", "Max", "Min", "Prod"]
    assert pld.NotifyOp is NotifyOp and pld.ReduceOp is ReduceOp
    with pytest.raises(AttributeError, match="did you mean pld.WaitCmp.Ge"):
        _ = pld.WaitCmp.GE


def test_distributed_tensor_type_prints_and_differs_from_a_tensor_type():
    t = DistributedTensorType(shape(1, 256), FP32)
    assert t.as_python() == "pld.DistributedTensor[[1, 256], pl.FP32]"
    assert isinstance(t, TensorType)
    assert not ir.structural_equal(t, TensorType(shape(1, 256), FP32))
    assert ir.structural_equal(t, DistributedTensorType(shape(1, 256), FP32))
    assert ir.structural_hash(t) != ir.structural_hash(TensorType(shape(1, 256), FP32))
    back = ir.deserialize(ir.serialize(t))
    assert type(back) is DistributedTensorType and ir.structural_equal(back, t)
    c = CommCtxType()
    assert c.as_python() == "pld.CommCtx" and isinstance(c, ScalarType) and c.dtype is INT64
    assert type(ir.deserialize(ir.serialize(c))) is CommCtxType


def test_annotations_give_the_ir_types_also_under_directions():
    fn = pl.parse(kernel("ctx: pld.CommCtx = pld.get_comm_ctx(data)",
                         f", w: pl.Out[{DATA}], io: pl.InOut[pld.DistributedTensor[[8], pl.INT64]]"))
    types = {p.name: p.type for p in fn.params}
    assert type(types["data"]) is DistributedTensorType and type(types["x"]) is TensorType
    assert type(types["w"]) is DistributedTensorType and types["io"].dtype is INT64
    dirs = dict(zip((p.name for p in fn.params), fn.param_directions))
    assert dirs["w"] is pl.Direction.Out and dirs["io"] is pl.Direction.InOut
    assert type(fn.body.stmts[0].var.type) is CommCtxType


def test_bare_distributed_tensor_needs_a_shape_outside_jit():
    with pytest.raises(ParserTypeError, match="bare pld.DistributedTensor needs a shape and dtype") as info:
        pl.parse(f"{HEAD}@pl.function(type=pl.FunctionType.InCore)\ndef k(d: pld.DistributedTensor):\n    pass\n")
    assert info.value.span.begin_line == 6
    assert repr(pld.DistributedTensor) == "pld.DistributedTensor"
    bad = pld.DistributedTensor[[4], "FP33"]
    assert bad.message == "pld.DistributedTensor expects a data type such as pl.FP32, got 'FP33'"


def test_namespaces_and_short_forms():
    assert repr(pld.system.notify) == "pld.system.notify" and pld.notify is not None
    assert pld.notify.name == "pld.system.notify" and pld.wait.name == "pld.system.wait"
    assert pld.remote_load.name == "pld.tile.remote_load" and pld.put.name == "pld.tensor.put"
    assert pld.get.name == "pld.tensor.get" and pld.tile.remote_store.name == "pld.tile.remote_store"
    assert pld.tensor.remote_store.name == "pld.tensor.remote_store"
    assert {"get_comm_ctx", "rank", "nranks"} <= set(pld.__all__)
    assert not hasattr(pl.system, "notify") and not hasattr(pl, "remote_store")   # pl stays pl's
    with pytest.raises(RuntimeError, match=r"pld.remote_store\(...\) can only be used inside"):
        pld.remote_store(1, 2)


def test_remote_store_short_form_picks_the_tile_or_tensor_op():
    fn = pl.parse(kernel("t = pl.load(x, [0, 0], [16, 32])\npld.remote_store(t, data, n, [0, 0])\n"
                         "pld.remote_store(x, data, n, [0, 0], atomic=pld.AtomicType.Add)"))
    ops = [s.expr.op for s in fn.body.stmts[1:]]
    assert ops == ["pld.tile.remote_store", "pld.tensor.remote_store"]
    with pytest.raises(ParserTypeError, match="pld.remote_store expects a Tile or Tensor as first argument, "
                                              "got Scalar") as info:
        pl.parse(kernel("pld.remote_store(n, data, n, [0, 0])"))
    assert info.value.span.begin_line == 7


# ---- printing and round trip -------------------------------------------------------------------

EVERY_OP = """
ctx = pld.get_comm_ctx(data)
me = pld.rank(ctx)
nr = pld.nranks(ctx)
t = pl.load(x, [0, 0], [16, 32])
pld.system.notify(sig, (me + 1) % nr, [me, 0], -1, op=pld.NotifyOp.Set)
pld.system.wait(sig, [0, 0], nr, cmp=pld.WaitCmp.Ge)
pld.system.defer_wait(sig, [1, 0], 2)
pld.system.fence()
r = pld.tile.remote_load(data, n, [0, 16], [16, 16], valid_shape=[12, 16])
pld.tile.remote_store(t, data, n, [0, 0], atomic=pld.AtomicType.Add)
pld.tensor.remote_store(x, data, n, [0, 0])
pld.tensor.put(data, n, x, [0, 0], [8, 0], [8, 32], chunk_rows=4, chunk_cols=32, pipeline=True)
pld.tensor.put(data, n, x)
o = pld.tensor.get(o, n, data, chunk_rows=8)
"""


def test_a_kernel_using_every_op_prints_reparses_and_serializes():
    fn = pl.parse(kernel(EVERY_OP))
    text = fn.as_python()
    assert "import pypto.language.distributed as pld" in text
    for needle in ("data: pld.DistributedTensor[[16, 32], pl.FP32]", "ctx: pld.CommCtx = pld.get_comm_ctx(data)",
                   "me: pl.Scalar[pl.INT32] = pld.rank(ctx)",
                   "pld.system.notify(sig, (me + 1) % nr, [me, 0], -1, op=pld.NotifyOp.Set)",
                   "pld.system.wait(sig, [0, 0], nr, cmp=pld.WaitCmp.Ge)",
                   "r: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[12, 16]",
                   "pld.tile.remote_store(t, data, n, [0, 0], atomic=pld.AtomicType.Add)",
                   "pld.tensor.remote_store(x, data, n, [0, 0], atomic=pld.AtomicType.None_)",
                   "pld.tensor.put(data, n, x, [0, 0], [8, 0], [8, 32], atomic=pld.AtomicType.None_, chunk_rows=4, "
                   "chunk_cols=32, pipeline=True)",
                   "pld.tensor.put(data, n, x, atomic=pld.AtomicType.None_)",
                   "pld.tensor.get(o, n, data, atomic=pld.AtomicType.None_, chunk_rows=8)"):
        assert needle in text, needle
    again = pl.parse(text)
    ir.assert_structural_equal(fn, again)
    assert again.as_python() == text
    ir.assert_structural_equal(ir.deserialize(ir.serialize(fn)), fn)


def test_a_program_without_pld_prints_no_pld_import():
    fn = pl.parse(kernel("t = pl.load(x, [0, 0], [16, 32])"))
    # the parameters are window-bound, so the import is needed; a pl-only function has none
    assert "import pypto.language.distributed as pld" in fn.as_python()
    plain = pl.parse(f"{HEAD}@pl.function(type=pl.FunctionType.InCore)\ndef k(x: pl.Tensor[[4], pl.FP32]):\n"
                     "    t = pl.load(x, [0], [4])\n")
    assert "pld" not in plain.as_python()


def test_result_types():
    fn = pl.parse(kernel(EVERY_OP))
    types = {s.var.name: s.var.type for s in fn.body.stmts if hasattr(s, "var")}
    assert type(types["ctx"]) is CommCtxType
    assert types["me"].dtype is INT32 and types["nr"].dtype is INT32
    assert types["r"].memory_space is pl.Mem.Vec
    assert type(types["o"]) is TensorType


def test_store_into_a_window_keeps_it_window_bound():
    fn = pl.parse(f"{HEAD}@pl.function(type=pl.FunctionType.InCore)\n"
                  f"def k(x: pl.Tensor[[4, 1], pl.INT32], sig: pl.InOut[{SIG}]) -> {SIG}:\n"
                  "    t = pl.load(x, [0, 0], [4, 1])\n    sig = pl.store(t, [0, 0], sig)\n"
                  "    pld.notify(sig, 0, [0, 0], 1)\n    return sig\n")
    assert type(fn.body.stmts[1].var.type) is DistributedTensorType


# ---- type-rule errors --------------------------------------------------------------------------

ERRORS = [
    ("pld.notify(x, n, [0, 0], 1)", "pld.system.notify: argument 'target' must be a window-bound "
     "pld.DistributedTensor (a pld.DistributedTensor parameter, bound on the host with pld.window), got a "
     "plain pl.Tensor [16, 32]: other ranks cannot address it"),
    ("pld.notify(sig, n, [0], 1)", "pld.system.notify: argument 'offsets' has 1 entry but 'target' has rank 2 "
     "(shape [4, 1]): give one offset per dimension"),
    ("pld.notify(sig, n, [4, 0], 1)", "pld.system.notify: region at offset 4 of size 1 exceeds dimension 4"),
    ("pld.notify(data, n, [0, 0], 1)", "pld.system.notify: argument 'target' is a signal: it must have dtype "
     "INT32 or INT64, got FP32"),
    ("pld.notify(sig, 1.5, [0, 0], 1)", "pld.system.notify: argument 'peer' must be an integer scalar, got FP32"),
    ("pld.notify(sig, n, [0, 0], 1, op=pld.WaitCmp.Eq)", "pld.system.notify: attribute 'op' must be one of "
     "pld.NotifyOp.AtomicAdd, pld.NotifyOp.Set, got pld.WaitCmp.Eq"),
    ("pld.wait(o, [0, 0], 1)", "pld.system.wait: argument 'signal' must be a window-bound pld.DistributedTensor"),
    ("pld.wait(sig, [0, 0, 0], 1)", "pld.system.wait: argument 'offsets' has 3 entries but 'signal' has rank 2"),
    ("pld.wait(sig, [0, 0], 1.0)", "pld.system.wait: argument 'expected' must be an integer scalar, got FP32"),
    ("pld.remote_load(x, n, [0, 0], [16, 32])", "pld.tile.remote_load: argument 'target' must be a window-bound"),
    ("pld.remote_load(data, n, [0, 0], [16, 32, 1])", "pld.tile.remote_load: argument 'shape' has 3 entries but "
     "'target' has rank 2"),
    ("pld.remote_load(data, n, [8, 0], [16, 32])", "pld.tile.remote_load: region at offset 8 of size 16 exceeds "
     "dimension 16"),
    ("t = pl.load(x, [0, 0], [16, 32])\npld.tile.remote_store(t, o, n, [0, 0])",
     "pld.tile.remote_store: argument 'target' must be a window-bound pld.DistributedTensor"),
    ("pld.tile.remote_store(x, data, n, [0, 0])", "pld.tile.remote_store: argument 'tile' must be a Tile"),
    ("pld.tensor.remote_store(sig, data, n, [0, 0])", "pld.tensor.remote_store: argument 'src' has dtype INT32 "
     "but 'target' has FP32; cast it first"),
    ("pld.put(data, n, x, [0, 0])", "pld.tensor.put: a region transfer needs all three of dst_offsets, "
     "src_offsets and shape; missing src_offsets, shape"),
    ("pld.put(data, n, x, [0, 0], [0, 0], [8, 32], pipeline=True)", "pld.tensor.put: pipeline=True "
     "double-buffers chunks: it needs chunk_rows > 0 and chunk_cols > 0, got chunk_rows=0, chunk_cols=0"),
    ("pld.put(data, n, x, chunk_rows=-1)", "pld.tensor.put: attribute 'chunk_rows' must be a non-negative integer"),
    ("pld.put(o, n, x)", "pld.tensor.put: argument 'dst' must be a window-bound pld.DistributedTensor"),
    ("o = pld.get(o, n, x)", "pld.tensor.get: argument 'src' must be a window-bound pld.DistributedTensor"),
    ("o = pld.get(o, n, sig)", "pld.tensor.get: arguments 'dst' and 'src' must have the same dtype, got FP32 and "
     "INT32"),
    ("pld.put(data, n, x, [0, 0], [0], [8, 32])", "pld.tensor.put: argument 'src_offsets' has 1 entry but 'src' "
     "has rank 2"),
    ("pld.rank(n)", "pld.rank: argument 'ctx' must be a pld.CommCtx (from pld.get_comm_ctx), got Scalar"),
    ("c = pld.get_comm_ctx(x)", "pld.get_comm_ctx: argument 'dt' must be a window-bound pld.DistributedTensor"),
]


@pytest.mark.parametrize("body,message", ERRORS, ids=[e[0].split("(")[0] + str(i) for i, e in enumerate(ERRORS)])
def test_type_rule_errors_are_located(body, message):
    with pytest.raises(ParserTypeError) as info:
        pl.parse(kernel(body), filename="user_kernel.py")
    err = info.value
    assert err.message.startswith(message), err.message
    assert err.span.filename == "user_kernel.py" and err.span.begin_line == 6 + len(body.splitlines())


# ---- levels ------------------------------------------------------------------------------------

def test_a_kernel_op_in_a_host_function_is_a_located_error():
    src = (f"{HEAD}@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)\ndef h(sig: {SIG}):\n"
           "    pld.system.notify(sig, 0, [0, 0], 1)\n")
    with pytest.raises(InvalidOperationError, match=r"'pld.system.notify' cannot run in HOST function 'h': it runs "
                                                    r"on a chip \(on the cores, inside a kernel\)") as info:
        pl.parse(src)
    assert info.value.span.begin_line == 7


def test_get_comm_ctx_is_allowed_in_a_host_function():
    fn = pl.parse(f"{HEAD}@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)\ndef h(sig: {SIG}):\n"
                  "    ctx = pld.get_comm_ctx(sig)\n")
    assert fn.body.stmts[0].value.op == "pld.get_comm_ctx"


def test_a_kernel_op_in_an_orchestration_function_is_a_located_error():
    src = (f"{HEAD}@pl.function(type=pl.FunctionType.Orchestration)\ndef o(sig: {SIG}):\n"
           "    ctx = pld.get_comm_ctx(sig)\n")
    with pytest.raises(InvalidOperationError, match="Misplaced pld op 'pld.get_comm_ctx' in Orchestration") as info:
        pl.parse(src)
    assert info.value.span.begin_line == 7


def test_a_host_only_op_outside_the_host_is_a_located_error(monkeypatch):
    """The level check reads the trait "host_only" (the host ops of SPEC §8 carry it)."""
    from dataclasses import replace

    from pypto.ops import registry

    spec = registry.get_op("pld.get_comm_ctx")
    monkeypatch.setitem(registry._REGISTRY, "pld.get_comm_ctx",
                        replace(spec, traits=spec.traits | {"host_only"}))
    with pytest.raises(InvalidOperationError, match=r"'pld.get_comm_ctx' is a host op: only a HOST orchestrator "
                                                    r"\(@pl.jit.host") as info:
        pl.parse(kernel("c = pld.get_comm_ctx(sig)"))
    assert info.value.span.begin_line == 7
