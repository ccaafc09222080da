"""Bitwise and shift ops on integer tensors/tiles, with scalar forms (SPEC §3).

IR names are `tensor.and`, `tile.or`, `tile.not`, ...; in Python the keyword names carry a trailing
underscore (`pl.and_`, `pl.tile.or_`, `pl.tensor.not_`), which is also how the printer spells them.
Shifts keep the lhs dtype; `shr` of a signed type is arithmetic (the sign bit is replicated).
"""

from __future__ import annotations

import torch

from .cost import vector
from .families import binary_family, unary_family
from .typing_rules import INT

__all__: list[str] = []

#  name   scalar name/pto      torch semantics               pto     keep lhs dtype  what
_BITWISE = [
    ("and", ("ands", "tands"), torch.bitwise_and, "tand", False, "bitwise a & b"),
    ("or", ("ors", "tors"), torch.bitwise_or, "tor", False, "bitwise a | b"),
    ("xor", ("xors", "txors"), torch.bitwise_xor, "txor", False, "bitwise a ^ b"),
    ("shl", ("shls", "tshls"), torch.bitwise_left_shift, "tshl", True, "a << b (bits)"),
    ("shr", ("shrs", "tshrs"), torch.bitwise_right_shift, "tshr", True,
     "a >> b (bits; arithmetic for signed types)"),
]

for _name, _scalar, _fn, _pto, _keep, _what in _BITWISE:
    binary_family(_name, _fn, _pto, INT, vector(1.0), scalar=_scalar, family="bitwise",
                  keep_lhs=_keep, int_scalar=True, what=_what)
unary_family("not", torch.bitwise_not, "tnot", INT, vector(1.0), family="bitwise", what="bitwise ~x")
