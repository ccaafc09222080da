"""Per-op PyTorch expression templates used by `torch_codegen` (data, one row per op).

A template is a `str.format` pattern producing one Python expression:

- `{0}`, `{1}`, ... are the call's positional arguments (rendered as Python expressions; a missing
  optional argument renders as `None`);
- `{<attr>}` is an attribute (the call's value or the OpSpec default; dtypes render as `torch.*`
  dtypes, enums as their name in quotes);
- `{valid}` is the tuple of valid shapes of the OpSpec's `valid_args` (None where fully valid).

- `{where}` is the call's source location as a string literal (None when unknown), for messages.

Helpers named `_x` are defined in `torch_prelude`, which every script embeds, or — for the
cross-core pipe ops, whose templates are built from `pypto.ops.system.PIPE_ROLES` — in
`torch_cluster`, which scripts of mixed kernels embed. A pipe op that may have to wait (a push into
a full ring, a pop from an empty one) is a `yield from` expression: the kernel containing it becomes
a Python generator that the script's Group runner interleaves with its cluster peers.

A key without a namespace (`add`) serves both `tensor.add` and `tile.add`; a full name
(`tile.create`) overrides it. Every registered op has a template (tests/debug checks the registry
against this table); an op listed in `UNSUPPORTED` instead raises `NotImplementedError` with its
reason, and an op in neither table raises `NotImplementedError` naming it.
"""

from __future__ import annotations

from ..ops.system import PIPE_ROLES

__all__ = ["TEMPLATES", "UNSUPPORTED", "template_for", "waits"]

_RED = {f"{side}_{k}": f"_reduce({k!r}, {{0}}, {axis}, {{valid}})"
        for side, axis in (("row", -1), ("col", -2))
        for k in ("sum", "max", "min", "prod", "argmax", "argmin")}

_EXPAND = {f"{side}_expand{suffix}": tmpl
           for side in ("row", "col")
           for suffix, tmpl in (("", "{1}.expand({0}.shape).clone()"), ("_add", "torch.add({0}, {1})"),
                                ("_sub", "torch.sub({0}, {1})"), ("_mul", "torch.mul({0}, {1})"),
                                ("_div", "_div({0}, {1})"), ("_max", "torch.maximum({0}, {1})"),
                                ("_min", "torch.minimum({0}, {1})"), ("_expdif", "torch.exp({0} - {1})"))}

#  pipe op kind  template (its direction comes from PIPE_ROLES); push / pop may wait
_PIPE = {
    "push": "(yield from _tpush({direction!r}, {{0}}, {{split}}, {{where}}))",
    "pop": "(yield from _tpop({direction!r}, {{0}}, {{dtype}}, {{split}}, {{where}}))",
    "free": "_tfree({direction!r}, {{where}})",
}

#  op (leaf or full name)  template
TEMPLATES: dict[str, str] = {
    # elementwise, binary and scalar forms
    "add": "torch.add({0}, {1})", "adds": "torch.add({0}, {1})",
    "sub": "torch.sub({0}, {1})", "subs": "torch.sub({0}, {1})",
    "mul": "torch.mul({0}, {1})", "muls": "torch.mul({0}, {1})",
    "div": "_precise(_div, {0}, {1}, high_precision={high_precision})",
    "divs": "_precise(_div, {0}, {1}, high_precision={high_precision})",
    "maximum": "_maximum({0}, {1})", "maximums": "_maximum({0}, {1})",
    "minimum": "_minimum({0}, {1})", "minimums": "_minimum({0}, {1})",
    "fmod": "torch.fmod({0}, {1})", "fmods": "torch.fmod({0}, {1})",
    "rem": "torch.remainder({0}, {1})", "rems": "torch.remainder({0}, {1})",
    # unary and activations
    "exp": "torch.exp({0})", "log": "_precise(torch.log, {0}, high_precision={high_precision})", "sqrt": "torch.sqrt({0})",
    "rsqrt": "_precise(torch.rsqrt, {0}, high_precision={high_precision})",
    "recip": "_precise(torch.reciprocal, {0}, high_precision={high_precision})", "sin": "torch.sin({0})",
    "cos": "torch.cos({0})", "neg": "torch.neg({0})", "abs": "torch.abs({0})", "relu": "torch.relu({0})",
    "lrelu": "torch.where({0} >= 0, {0}, {0} * {1})", "prelu": "torch.where({0} >= 0, {0}, {0} * {1})",
    # bitwise
    "and": "torch.bitwise_and({0}, {1})", "ands": "torch.bitwise_and({0}, {1})",
    "or": "torch.bitwise_or({0}, {1})", "ors": "torch.bitwise_or({0}, {1})",
    "xor": "torch.bitwise_xor({0}, {1})", "xors": "torch.bitwise_xor({0}, {1})",
    "shl": "torch.bitwise_left_shift({0}, {1})", "shls": "torch.bitwise_left_shift({0}, {1})",
    "shr": "torch.bitwise_right_shift({0}, {1})", "shrs": "torch.bitwise_right_shift({0}, {1})",
    "not": "torch.bitwise_not({0})",
    # cast, compare, select
    "cast": "_cast({0}, {target_type}, {mode})",
    "cmp": "_cmp({0}, {1}, {cmp_type})", "cmps": "_cmp({0}, {1}, {cmp_type})",
    "sel": "torch.where({0} != 0, {1}, {2})", "sels": "({0} if {2} else {1}).clone()",
    # reductions and broadcasts
    **_RED, **_EXPAND,
    "expands": "torch.full_like({0}, {1})",
    # creation
    "create": "torch.zeros({0}, dtype={dtype})",
    "full": "torch.full({0}, {1}, dtype={dtype})",
    "ci": "_ci({0}, {1}, {dtype}, {descending})",
    "tri": "_tri({0}, {1}, {dtype}, {upper})",
    # memory
    "tile.load": "_load({0}, {1}, {2}, {3})",
    "tile.store": "_store({0}, {1}, {2}, {valid})",
    "tile.move": "{0}.clone()",
    "read": "_read({0}, {1})", "write": "_write({0}, {1}, {2})",
    "tensor.dim": "{0}.shape[{axis}]",
    "tensor.dump_tag": "None",   # a DFX directive: no data effect
    # matmul
    "matmul": "_mm({0}, {1}, {out_dtype}, {a_trans}, {b_trans}, {valid})",
    "tile.matmul": "_mm({0}, {1}, None, False, False, {valid})",
    "matmul_acc": "_mm_acc({0}, {1}, {2}, {a_trans}, {b_trans}, {valid})",
    "matmul_bias": "_mm_bias({0}, {1}, {2}, {a_trans}, {b_trans}, {valid})",
    "gemv": "_mm({0}, {1}, None, False, False, {valid})",
    "batch_matmul": "_bmm({0}, {1}, {out_dtype}, {a_trans}, {b_trans})",
    "tile.batch_matmul": "_bmm({0}, {1}, None, {a_trans}, {b_trans})",
    "batch_matmul_acc": "{0} + _bmm({1}, {2}, None, {a_trans}, {b_trans}).to({0}.dtype)",
    "gemv_acc": "_mm_acc({0}, {1}, {2}, False, False, {valid})",
    "gemv_bias": "_mm_bias({0}, {1}, {2}, False, False, {valid})",
    # shape and views
    "reshape": "{0}.reshape({1})", "view": "{0}.reshape({1})",
    "transpose": "{0}.transpose({axis1}, {axis2}).contiguous()",
    "transpose_view": "{0}.transpose(-1, -2)",
    "slice": "_slice({0}, {1}, {2}, {3}, {pad_value})",
    "reinterpret_view": "{0}.view({dtype})",
    "assemble": "_assemble({0}, {1}, {2}, {valid})",
    "concat": "torch.cat([{0}, {1}], dim={axis})",
    "set_validshape": "{0}",
    "fillpad": "_fillpad({0}, {pad_value}, {valid})",
    "tile.extract": "_slice({0}, {2}, {1}).clone()",
    # gather, scatter and sort (indices are INT32 values; out of range raises, like the simulator)
    "gather": "torch.gather({0}, -1, {1}.long())",
    "gather_row": "{0}[{1}[:, 0].long()]",
    "scatter": "{0}.clone().scatter_(-1, {1}.long(), {2})",
    "scatter_update": "_scatter_update({0}, {1}, {2})",
    "sort32": "_sort32({0}, {1})",
    "mrgsort": "_mrgsort({0}, {block_len})",
    # block identity (block 0 of 1; a Group call sets the vector subblock) and synchronisation (no data effect)
    "get_block_idx": "BLOCK['block_idx']", "get_block_num": "BLOCK['block_num']",
    "get_subblock_idx": "BLOCK['subblock_idx']",
    "system.sync_src": "None", "system.sync_dst": "None", "system.bar_v": "None",
    "system.bar_m": "None", "system.bar_all": "None",
    # small on-core integer arrays (pypto.ops.array): 1-D int tensors, updated out of place
    "array.create": "torch.zeros({extent}, dtype={dtype})", "array.get_element": "int({0}[{1}])",
    "array.update_element": "{0}.index_put((torch.tensor([{1}]),), torch.tensor({2}, dtype={0}.dtype))",
    # chip-wide system ops (pypto.ops.chip): no data effect; core counts of the chip in CHIP
    "system.syncall": "None", "system.cacheinvalid": "None", "system.fence": "None", "system.sync_set": "None",
    "system.available_aiv_count": "CHIP['aiv_count']", "system.available_cluster_count": "CHIP['cluster_count']",
    # distributed primitives (pypto.ops.distributed; helpers in torch_dist, through the rank's Comm)
    "pld.get_comm_ctx": "0", "pld.rank": "_comm('pld.rank').rank", "pld.nranks": "_comm('pld.nranks').nranks",
    "pld.system.notify": "_notify({0}, {1}, {2}, {3}, {op})",
    "pld.system.wait": "_wait({0}, {1}, {2}, {cmp})",
    "pld.system.defer_wait": "_wait({0}, {1}, {2}, 'Ge', 'pld.system.defer_wait')",
    "pld.system.fence": "_comm('pld.system.fence').fence()",
    "pld.tile.remote_load": "_remote_load({0}, {1}, {2}, {3}, {4})",
    "pld.tile.remote_store": "_remote_store({0}, {1}, {2}, {3}, {atomic}, {valid})",
    "pld.tensor.remote_store": "_remote_store({0}, {1}, {2}, {3}, {atomic}, None, 'pld.tensor.remote_store')",
    "pld.tensor.put": "_put({0}, {1}, {2}, {3}, {4}, {5}, {atomic})",
    "pld.tensor.get": "_get({0}, {1}, {2}, {3}, {4}, {5}, {atomic})",
    # collectives (pypto.ops.distributed_collectives): the registry's reference semantics, same Comm
    "pld.allreduce": "_collective('pld.allreduce', {0}, {1}, op={op}, mode={mode}, core_num={core_num})",
    "pld.barrier": "_collective('pld.barrier', {0})",
    "pld.broadcast": "_collective('pld.broadcast', {0}, {1}, root={root})",
    "pld.allgather": "_collective('pld.allgather', {0}, {1}, {2})",
    "pld.reduce_scatter": "_collective('pld.reduce_scatter', {0}, {1}, op={op})",
    "pld.all_to_all": "_collective('pld.all_to_all', {0}, {1}, {2})",
    "pld.all_to_all_v": "_collective('pld.all_to_all_v', {0}, {1}, {2}, {3}, {4})",
    # cross-core pipes of mixed kernels (torch_cluster)
    **{name: _PIPE[role.kind].format(direction=role.direction) for name, role in PIPE_ROLES.items()},
}

#  op  why the script cannot express it (raised as NotImplementedError); empty: every op has a template
UNSUPPORTED: dict[str, str] = {}


def template_for(op_name: str) -> str | None:
    """The template of IR op `op_name` (full name first, then its leaf), or None."""
    t = TEMPLATES.get(op_name)
    if t is None and "." in op_name:
        ns, leaf = op_name.split(".", 1)
        if ns in ("tensor", "tile"):
            t = TEMPLATES.get(leaf)
    return t


def waits(op_name: str) -> bool:
    """Whether the template of `op_name` may pause its kernel (a `yield`: a pipe push or pop)."""
    t = template_for(op_name)
    return t is not None and "yield" in t
