"""Helpers of generated PyTorch scripts for the distributed ops `pld.*` (SPEC §8), pasted into a
script after `torch_prelude` when its program uses any `pld.*` op.

A `pld.*` op talks to other ranks, which a single script cannot be: these helpers reach them through
the `Comm` of the running rank (`pypto.ops.dist_comm`, installed with `comm_context` by the
multi-rank runtime or by a test). Run outside a distributed run (no Comm installed, or PyPTO not
importable), they raise NotImplementedError naming the op. Conventions as in `torch_prelude`
(`_region`, `_lead` come from there); enum attributes arrive by name ("AtomicAdd", "Ge", "Add").
"""

import torch


def _comm(op):
    """The running rank's Comm, or NotImplementedError saying why the script cannot run `op`."""
    try:
        from pypto.ops.dist_comm import active_comm
    except ImportError:
        active_comm = None
    comm = active_comm() if active_comm is not None else None
    if comm is None:
        raise NotImplementedError(f"'{op}' talks to other ranks: run this script inside a distributed run "
                                  f"(a Comm installed with pypto.ops.dist_comm.comm_context)")
    return comm


def _cell(t, offsets):
    return t[_region(offsets, tuple(1 for _ in offsets))]  # noqa: F821  (torch_prelude)


def _notify(target, peer, offsets, value, op):
    _comm("pld.system.notify").notify(_cell(target, offsets), int(peer), int(value),
                                      "add" if op == "AtomicAdd" else "set")


def _wait(signal, offsets, expected, cmp, op="pld.system.wait"):
    _comm(op).wait(_cell(signal, offsets), int(expected), "eq" if cmp == "Eq" else "ge")


def _remote_load(target, peer, offsets, shape, valid_shape=None):
    box = tuple(shape) if valid_shape is None else tuple(valid_shape)
    data = _comm("pld.tile.remote_load").remote_read(target[_region(offsets, box)], int(peer))  # noqa: F821
    if valid_shape is None:
        return data
    out = torch.zeros(tuple(shape), dtype=target.dtype)
    out[_lead(box)] = data  # noqa: F821
    return out


def _remote_store(src, target, peer, offsets, atomic, valid=None, op="pld.tile.remote_store"):
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(src.shape)
    _comm(op).remote_write(target[_region(offsets, vs)], int(peer), src[_lead(vs)], atomic == "Add")  # noqa: F821


def _xfer(dst, src, dst_offsets, src_offsets, shape):
    if shape is None:
        return dst, src
    return dst[_region(dst_offsets, shape)], src[_region(src_offsets, shape)]  # noqa: F821


def _put(dst, peer, src, dst_offsets, src_offsets, shape, atomic):
    d, s = _xfer(dst, src, dst_offsets, src_offsets, shape)
    _comm("pld.tensor.put").remote_write(d, int(peer), s, atomic == "Add")


def _get(dst, peer, src, dst_offsets, src_offsets, shape, atomic):
    d, s = _xfer(dst, src, dst_offsets, src_offsets, shape)
    data = _comm("pld.tensor.get").remote_read(s, int(peer))
    if atomic == "Add":
        d.add_(data)
    else:
        d.copy_(data)
    return dst


def _collective(name, *args, **attrs):
    """The `pld.*` collective `name`: the op registry's reference semantics
    (`pypto.ops.distributed_collectives`) through the same Comm; enum attributes arrive by name ("Sum")."""
    _comm(name)
    from pypto.core.enums import ReduceOp
    from pypto.ops import get_op

    if isinstance(attrs.get("op"), str):
        attrs["op"] = ReduceOp[attrs["op"]]
    return get_op(name).compute(*args, **attrs)
