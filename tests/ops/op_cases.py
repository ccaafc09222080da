"""One example call per registered op, written in the DSL (used by the round-trip and consistency
tests). Every call sees the parameters of `PARAMS` and the tiles bound by `PRELUDE`; the tests
check that CASES covers exactly the registered ops, so a new op needs a case here.
"""

from __future__ import annotations

PARAMS = ("a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32], "
          "ai: pl.Tensor[[16, 32], pl.INT32], bi: pl.Tensor[[16, 32], pl.INT32], "
          "col: pl.Tensor[[16, 1], pl.FP32], row: pl.Tensor[[1, 32], pl.FP32], "
          "ridx: pl.Tensor[[16, 1], pl.INT32], h: pl.Tensor[[32, 32], pl.FP16], "
          "bias: pl.Tensor[[1, 32], pl.FP32], hrow: pl.Tensor[[1, 32], pl.FP16], "
          "s: pl.Scalar[pl.FP32], n: pl.Scalar[pl.INT32], o: pl.InOut[pl.Tensor[[16, 32], pl.FP32]], "
          "dw: pld.DistributedTensor[[16, 32], pl.FP32], sg: pld.DistributedTensor[[4, 1], pl.INT32], "
          "dx: pl.InOut[pld.DistributedTensor[[16, 32], pl.FP32]], "
          "dg: pl.InOut[pld.DistributedTensor[[4, 16, 32], pl.FP32]], "
          "dv: pl.InOut[pld.DistributedTensor[[4, 32], pl.FP32]], dvi: pld.DistributedTensor[[4, 32], pl.FP32], "
          "cnt: pl.Tensor[[4], pl.INT32]")

PRELUDE = """
ta = pl.load(a, [0, 0], [16, 32])
tb = pl.load(b, [0, 0], [16, 32])
ti = pl.load(ai, [0, 0], [16, 32])
tj = pl.load(bi, [0, 0], [16, 32])
tcol = pl.load(col, [0, 0], [16, 1])
trow = pl.load(row, [0, 0], [1, 32])
tridx = pl.load(ridx, [0, 0], [16, 1])
tmp = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)
mask = pl.tile.cmp(ta, tb, cmp_type="lt")
tmask = pl.tensor.cmp(a, b, cmp_type="lt")
hm = pl.load(h, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
hl = pl.move(hm, target_memory=pl.Mem.Left)
hr = pl.move(hm, target_memory=pl.Mem.Right)
acc = pl.tile.matmul(hl, hr)
hrm = pl.load(hrow, [0, 0], [1, 32], target_memory=pl.Mem.Mat)
hrl = pl.move(hrm, target_memory=pl.Mem.Left)
bm = pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat)
bb = pl.move(bm, target_memory=pl.Mem.Bias)
pairs = pl.tile.sort32(ta, ti)
tpairs = pl.tensor.sort32(a, ai)
popped = pl.system.tpop_from_aic([16, 32], dtype=pl.FP32)
arr = pl.array.create(8, pl.INT32)
ctx = pld.get_comm_ctx(dw)
"""

CASES: dict[str, str] = {}


def _both(name: str, tensor_call: str, tile_call: str) -> None:
    CASES[f"tensor.{name}"] = tensor_call
    CASES[f"tile.{name}"] = tile_call


for _op, _s in [("add", "adds"), ("sub", "subs"), ("mul", "muls"), ("div", "divs"), ("maximum", "maximums"),
                ("minimum", "minimums"), ("fmod", "fmods"), ("rem", "rems")]:
    _both(_op, f"pl.tensor.{_op}(a, b)", f"pl.tile.{_op}(ta, tb)")
    _both(_s, f"pl.tensor.{_s}(a, s)", f"pl.tile.{_s}(ta, 2.0)")
for _op, _s in [("and_", "ands"), ("or_", "ors"), ("xor", "xors"), ("shl", "shls"), ("shr", "shrs")]:
    _ir = _op.rstrip("_")
    CASES[f"tensor.{_ir}"] = f"pl.tensor.{_op}(ai, bi)"
    CASES[f"tile.{_ir}"] = f"pl.tile.{_op}(ti, tj)"
    _both(_s, f"pl.tensor.{_s}(ai, n)", f"pl.tile.{_s}(ti, 3)")
CASES["tensor.not"] = "pl.tensor.not_(ai)"
CASES["tile.not"] = "pl.tile.not_(ti)"
for _op in ("exp", "log", "sqrt", "rsqrt", "recip", "sin", "cos", "neg", "abs", "relu"):
    _both(_op, f"pl.tensor.{_op}(a)", f"pl.tile.{_op}(ta)")
_both("lrelu", "pl.tensor.lrelu(a, 0.1)", "pl.tile.lrelu(ta, s)")
_both("prelu", "pl.tensor.prelu(a, row)", "pl.tile.prelu(ta, tb)")
_both("cmp", "pl.tensor.cmp(a, b, cmp_type=\"ge\")", "pl.tile.cmp(ta, tb, cmp_type=\"ne\")")
_both("cmps", "pl.tensor.cmps(a, s, cmp_type=\"gt\")", "pl.tile.cmps(ta, 0.5, cmp_type=\"le\")")
_both("sel", "pl.tensor.sel(tmask, a, b)", "pl.tile.sel(mask, ta, tb)")
_both("sels", "pl.tensor.sels(a, b, n)", "pl.tile.sels(ta, tb, 1)")
for _side in ("row", "col"):
    for _r in ("sum", "max", "min", "prod", "argmax", "argmin"):
        _both(f"{_side}_{_r}", f"pl.tensor.{_side}_{_r}(a)", f"pl.tile.{_side}_{_r}(ta, tmp)")
    _vt, _v = ("col", "tcol") if _side == "row" else ("row", "trow")
    _both(f"{_side}_expand", f"pl.tensor.{_side}_expand(a, {_vt})", f"pl.tile.{_side}_expand(ta, {_v})")
    for _e in ("add", "sub", "mul", "div", "max", "min", "expdif"):
        _both(f"{_side}_expand_{_e}", f"pl.tensor.{_side}_expand_{_e}(a, {_vt})",
              f"pl.tile.{_side}_expand_{_e}(ta, {_v})")
_both("expands", "pl.tensor.expands(a, s)", "pl.tile.expands(ta, 1.5)")
_both("cast", "pl.tensor.cast(a, pl.BF16)", "pl.tile.cast(ta, pl.INT32, mode=\"floor\")")
_both("create", "pl.tensor.create([8, 16], dtype=pl.FP16)",
      "pl.tile.create([8, 16], dtype=pl.FP16, target_memory=pl.Mem.Vec)")
_both("full", "pl.tensor.full([4, 8], s, dtype=pl.FP32)", "pl.tile.full([4, 8], 2.5, dtype=pl.FP16)")
_both("ci", "pl.tensor.ci(n, [2, 16], dtype=pl.INT32, descending=True)", "pl.tile.ci(3, [1, 32], dtype=pl.INT16)")
_both("tri", "pl.tensor.tri([8, 8], -1, dtype=pl.FP32, upper=True)", "pl.tile.tri([16, 16], n, dtype=pl.INT32)")
CASES["tile.load"] = "pl.tile.load(a, [0, 16], [16, 16], valid_shape=[12, 16], target_memory=pl.Mem.Mat)"
CASES["tile.store"] = "pl.tile.store(ta, [0, 0], o)"
CASES["tile.move"] = "pl.tile.move(hm, target_memory=pl.Mem.Right)"
_both("read", "pl.tensor.read(a, [1, 2])", "pl.tile.read(ta, [3, n])")
_both("write", "pl.tensor.write(o, [1, 2], s)", "pl.tile.write(ti, [0, 0], n)")
CASES["tensor.dim"] = "pl.tensor.dim(a, axis=1)"
CASES["tensor.dump_tag"] = "pl.tensor.dump_tag(a)"
_both("reshape", "pl.tensor.reshape(a, [32, 16])", "pl.tile.reshape(ta, [8, 64])")
_both("view", "pl.tensor.view(a, [512])", "pl.tile.view(ta, [32, 16])")
_both("reinterpret_view", "pl.tensor.reinterpret_view(a, pl.INT32)", "pl.tile.reinterpret_view(ta, pl.FP16)")
_both("transpose", "pl.tensor.transpose(a, axis1=0, axis2=1)", "pl.tile.transpose(ta, axis1=1, axis2=0)")
_both("transpose_view", "pl.tensor.transpose_view(a)", "pl.tile.transpose_view(ta)")
_both("slice", "pl.tensor.slice(a, [8, 32], [8, 0])", "pl.tile.slice(ta, [8, 16], [8, 16], valid_shape=[4, 16])")
_both("assemble", "pl.tensor.assemble(o, pl.tensor.slice(a, [8, 32], [0, 0]), [8, 0])",
      "pl.tile.assemble(tb, tcol, [0, 31])")
_both("concat", "pl.tensor.concat(a, b, axis=0)", "pl.tile.concat(ta, tb, axis=-1)")
_both("set_validshape", "pl.tensor.set_validshape(a, [n, 32])", "pl.tile.set_validshape(ta, [10, 32])")
_both("fillpad", "pl.tensor.fillpad(a, pad_value=pl.PadValue.min)", "pl.tile.fillpad(ta, pad_value=pl.PadValue.max)")
CASES["tile.extract"] = "pl.tile.extract(hm, [0, 16], [32, 16], target_memory=pl.Mem.Left)"
_both("matmul", "pl.tensor.matmul(h, h, out_dtype=pl.FP16, a_trans=False, b_trans=True)",
      "pl.tile.matmul(hl, hr, b_trans=True)")
CASES["tile.matmul_acc"] = "pl.tile.matmul_acc(acc, hl, hr)"
CASES["tensor.matmul_acc"] = "pl.tensor.matmul_acc(pl.tensor.matmul(h, h), h, h, b_trans=True)"
_both("matmul_bias", "pl.tensor.matmul_bias(h, h, bias)", "pl.tile.matmul_bias(hl, hr, bb)")
_both("gemv", "pl.tensor.gemv(hrow, h)", "pl.tile.gemv(hrl, hr)")
_bl, _br = "pl.tile.reshape(hl, [2, 16, 32])", "pl.tile.reshape(hr, [2, 16, 32])"
CASES["tile.batch_matmul"] = f"pl.tile.batch_matmul({_bl}, {_br}, b_trans=True)"
CASES["tile.batch_matmul_acc"] = f"pl.tile.batch_matmul_acc(pl.tile.batch_matmul({_bl}, {_br}, b_trans=True), {_bl}, {_br}, b_trans=True)"
CASES["tensor.batch_matmul"] = "pl.tensor.batch_matmul(pl.tensor.reshape(h, [2, 16, 32]), pl.tensor.reshape(h, [2, 32, 16]))"
CASES["tile.gemv_acc"] = "pl.tile.gemv_acc(pl.tile.gemv(hrl, hr), hrl, hr)"
_both("gemv_bias", "pl.tensor.gemv_bias(hrow, h, bias)", "pl.tile.gemv_bias(hrl, hr, bb)")
_both("gather", "pl.tensor.gather(a, ai)", "pl.tile.gather(ta, ti)")
_both("gather_row", "pl.tensor.gather_row(a, ridx)", "pl.tile.gather_row(ta, tridx)")
_both("scatter", "pl.tensor.scatter(o, ai, b)", "pl.tile.scatter(ta, ti, tb)")
_both("scatter_update", "pl.tensor.scatter_update(o, ridx, b)", "pl.tile.scatter_update(ta, tridx, tb)")
_both("sort32", "pl.tensor.sort32(a, ai)", "pl.tile.sort32(ta, ti)")
_both("mrgsort", "pl.tensor.mrgsort(tpairs, block_len=32)", "pl.tile.mrgsort(pairs, block_len=16)")
for _b in ("get_block_idx", "get_block_num", "get_subblock_idx"):
    CASES[f"tile.{_b}"] = f"pl.tile.{_b}()"
CASES.update({
    "system.sync_src": "pl.system.sync_src(set_pipe=\"MTE2\", wait_pipe=\"V\", event_id=3)",
    "system.sync_dst": "pl.system.sync_dst(set_pipe=\"MTE2\", wait_pipe=\"V\", event_id=3)",
    "system.bar_v": "pl.system.bar_v()",
    "system.bar_m": "pl.system.bar_m()",
    "system.bar_all": "pl.system.bar_all()",
    "system.tpush_to_aiv": "pl.system.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
    "system.tpush_to_aic": "pl.system.tpush_to_aic(ta, split=pl.SplitMode.NONE)",
    "system.tpop_from_aic": "pl.system.tpop_from_aic([8, 32], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)",
    "system.tpop_from_aiv": "pl.system.tpop_from_aiv([16, 32], dtype=pl.FP16)",
    "system.tfree_to_aic": "pl.system.tfree_to_aic(popped)",
    "system.tfree_to_aiv": "pl.system.tfree_to_aiv(hm)",
    "array.create": "pl.array.create(4, pl.INT64)",
    "array.get_element": "pl.array.get_element(arr, n)",
    "array.update_element": "pl.array.update_element(arr, 3, n)",
    "system.syncall": "pl.system.syncall()",
    "system.cacheinvalid": "pl.system.cacheinvalid(a)",
    "system.fence": "pl.system.fence()",
    "system.sync_set": "pl.system.sync_set(set_pipe=\"MTE3\", event_id=12)",
    "system.available_aiv_count": "pl.system.available_aiv_count()",
    "system.available_cluster_count": "pl.system.available_cluster_count()",
    # distributed primitives (pypto.ops.distributed, SPEC §8)
    "pld.get_comm_ctx": "pld.get_comm_ctx(sg)",
    "pld.rank": "pld.rank(ctx)",
    "pld.nranks": "pld.nranks(ctx)",
    "pld.system.notify": "pld.system.notify(sg, n, [2, 0], -1, op=pld.NotifyOp.Set)",
    "pld.system.wait": "pld.system.wait(sg, [n, 0], 3, cmp=pld.WaitCmp.Ge)",
    "pld.system.defer_wait": "pld.system.defer_wait(sg, [1, 0], n)",
    "pld.system.fence": "pld.system.fence()",
    "pld.tile.remote_load": "pld.tile.remote_load(dw, n, [0, 16], [16, 16], valid_shape=[12, 16])",
    "pld.tile.remote_store": "pld.tile.remote_store(ta, dw, 1, [0, 0], atomic=pld.AtomicType.Add)",
    "pld.tensor.remote_store": "pld.tensor.remote_store(a, dw, n, [0, 0])",
    "pld.tensor.put": "pld.tensor.put(dw, n, b, [0, 0], [8, 0], [8, 32], chunk_rows=4, chunk_cols=32, pipeline=True)",
    "pld.tensor.get": "pld.tensor.get(o, 0, dw, atomic=pld.AtomicType.Add, chunk_rows=8)",
    # host-level ops (pypto.ops.distributed_host): legal only in a HOST orchestrator (HOST_PRELUDE)
    "pld.world_size": "pld.world_size()",
    "pld.alloc_window_buffer": "pld.alloc_window_buffer([16, 32], dtype=pl.FP32)",
    "pld.window": "pld.window(buf, [4, 8], dtype=pl.INT32)",
    "pld.rank_view": "pld.rank_view(wt, n)",
    # collectives (pypto.ops.distributed_collectives, SPEC §8)
    "pld.allreduce": "pld.allreduce(dx, sg, op=pld.ReduceOp.Max, mode=\"mesh\")",
    "pld.barrier": "pld.barrier(sg)",
    "pld.broadcast": "pld.broadcast(dx, sg, root=3)",
    "pld.allgather": "pld.allgather(dw, dg, sg)",
    "pld.reduce_scatter": "pld.reduce_scatter(dg, sg, op=pld.ReduceOp.Prod)",
    "pld.all_to_all": "pld.all_to_all(dvi, dv, sg)",
    "pld.all_to_all_v": "pld.all_to_all_v(dvi, dv, sg, cnt, cnt)",
})


_VALUED = ("tpop", "available_")  # system ops with a result


HOST_PRELUDE = "buf = pld.alloc_window_buffer(4096)"
HOST_OPS = ("pld.world_size(", "pld.alloc_window_buffer(", "pld.window(", "pld.rank_view(")


def _host_function_text(call: str) -> str:
    """A HOST orchestrator whose body is HOST_PRELUDE plus `r = <call>` (SPEC §8 host ops)."""
    body = "\n".join("    " + line for line in (HOST_PRELUDE + "\n" + f"r = {call}").splitlines())
    return ("import pypto.language as pl\nimport pypto.language.distributed as pld\n\n\n"
            "@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)\n"
            f"def f(wt: pl.Tensor[[4, 16, 32], pl.FP32], n: pl.Scalar[pl.INT64]):\n{body}\n")


def function_text(call: str) -> str:
    """A complete `@pl.function` whose body is PRELUDE plus `r = <call>` (or `<call>` alone for ops
    without a value)."""
    if call.startswith(HOST_OPS):
        return _host_function_text(call)
    no_value = (call.startswith(("pl.system.", "pld.system.")) and not any(w in call for w in _VALUED)) or \
        call.startswith(("pl.tensor.dump_tag", "pld.tile.remote_store", "pld.tensor.remote_store", "pld.tensor.put",
                         "pld.barrier"))
    stmt = call if no_value else f"r = {call}"
    body = "\n".join("    " + line for line in (PRELUDE.strip() + "\n" + stmt).splitlines())
    return f"import pypto.language as pl\nimport pypto.language.distributed as pld\n\n\n@pl.function\ndef f({PARAMS}):\n{body}\n"
