"""Elementwise arithmetic: binary ops and their scalar forms, unary math, activations (SPEC §3).

Each table row registers the tensor and tile op of one operator (and its scalar form) through
`pypto.ops.families`. Integer division truncates toward zero (the vector unit's integer divide);
`fmod` keeps the sign of the dividend (C fmod, torch.fmod), `rem` the sign of the divisor
(Python %, torch.remainder).
"""

from __future__ import annotations

from typing import Any

import torch

from ..ir.expr import Expr
from ..ir.types import Type
from .cost import vector
from .families import VEC, binary_family, binary_rule, scalar_rule, unary_family
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import FLOAT, NUMBER, SIGNED, shape_str, shapes_equal

__all__ = ["int_operands", "divide"]


def int_operands(a: Any, b: Any) -> bool:
    """True when both operands are integer-valued (tensor dtype or Python int)."""
    def is_int(x: Any) -> bool:
        if isinstance(x, torch.Tensor):
            return not x.is_floating_point() and not x.is_complex()
        return isinstance(x, int)
    return is_int(a) and is_int(b)


def divide(a: Any, b: Any) -> Any:
    """a / b; integer operands divide truncating toward zero."""
    return torch.div(a, b, rounding_mode="trunc") if int_operands(a, b) else torch.div(a, b)


def _maximum(a: Any, b: Any) -> Any:
    return torch.maximum(a, b) if isinstance(b, torch.Tensor) else torch.clamp(a, min=b)


def _minimum(a: Any, b: Any) -> Any:
    return torch.minimum(a, b) if isinstance(b, torch.Tensor) else torch.clamp(a, max=b)


def _check_int_divisor(fn: Any) -> Any:
    def run(a: Any, b: Any) -> Any:
        if int_operands(a, b) and bool((torch.as_tensor(b) == 0).any()):
            raise ZeroDivisionError("integer division by zero")
        return fn(a, b)
    run.__name__ = getattr(fn, "__name__", "op")
    return run


#  name       scalar form, pto, scalar pto      torch semantics                 dtypes  work  what
_BINARY = [
    ("add", ("adds", "tadd", "tadds"), torch.add, NUMBER, 1.0, "a + b"),
    ("sub", ("subs", "tsub", "tsubs"), torch.sub, NUMBER, 1.0, "a - b"),
    ("mul", ("muls", "tmul", "tmuls"), torch.mul, NUMBER, 1.0, "a * b"),
    ("div", ("divs", "tdiv", "tdivs"), _check_int_divisor(divide), NUMBER, 2.0,
     "a / b (integers: truncated toward zero)"),
    ("maximum", ("maximums", "tmax", "tmaxs"), _maximum, NUMBER, 1.0, "max(a, b)"),
    ("minimum", ("minimums", "tmin", "tmins"), _minimum, NUMBER, 1.0, "min(a, b)"),
    ("fmod", ("fmods", "tfmod", "tfmods"), _check_int_divisor(torch.fmod), NUMBER, 2.0,
     "remainder of a / b with the sign of a (C fmod)"),
    ("rem", ("rems", "trem", "trems"), _check_int_divisor(torch.remainder), NUMBER, 2.0,
     "remainder of a / b with the sign of b (Python %)"),
]

#  name     torch semantics     pto        dtypes  work  what
_UNARY = [
    ("exp", torch.exp, "texp", FLOAT, 2.0, "e^x"),
    ("log", torch.log, "tlog", FLOAT, 2.0, "natural logarithm"),
    ("sqrt", torch.sqrt, "tsqrt", FLOAT, 2.0, "square root"),
    ("rsqrt", torch.rsqrt, "trsqrt", FLOAT, 2.0, "1 / sqrt(x)"),
    ("recip", torch.reciprocal, "trecip", FLOAT, 2.0, "1 / x"),
    ("sin", torch.sin, "tsin", FLOAT, 4.0, "sine (radians)"),
    ("cos", torch.cos, "tcos", FLOAT, 4.0, "cosine (radians)"),
    ("neg", torch.neg, "tneg", SIGNED, 1.0, "-x"),
    ("abs", torch.abs, "tabs", SIGNED, 1.0, "|x|"),
    ("relu", torch.relu, "trelu", SIGNED, 1.0, "max(x, 0)"),
]

# Ops with the `high_precision=` option (SPEC §13). On the chip it selects the slower, exactly
# rounded instruction sequence instead of the fast approximation; the simulator computes float
# operands in float64 and rounds once to the result dtype (torch's own kernels already round
# correctly for 16-bit floats, so for them both paths give the same numbers).
_HIGH_PRECISION = frozenset({"div", "divs", "log", "rsqrt", "recip"})


def _with_precision(fn: Any) -> Any:
    """`fn(*args, high_precision=False)`: True computes float operands in float64, rounded once."""
    def run(*args: Any, high_precision: bool = False) -> Any:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not high_precision or not any(t.is_floating_point() for t in tensors):
            return fn(*args)
        out = torch.result_type(*args) if len(args) > 1 else tensors[0].dtype
        wide = [a.to(torch.float64) if isinstance(a, torch.Tensor) else a for a in args]
        return fn(*wide).to(out)
    run.__name__ = getattr(fn, "__name__", "op")
    return run


# Ops whose tile form is a torch function taking `out=`: the simulator writes their results straight
# into the result tile (`families.out_site`); tests/runtime/test_rt_kernel_sites.py checks each gives
# the numbers of the general path bit for bit. Binary: two tiles; scalar forms: a tile and a scalar.
_OUT_FORMS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
              "minimum": torch.minimum}
_SCALAR_OUT_FORMS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}
_UNARY_OUT_FORMS = {"exp": torch.exp, "sqrt": torch.sqrt, "recip": torch.reciprocal, "neg": torch.neg,
                    "abs": torch.abs}

_PRECISION_ATTR = {"high_precision": False}
for _name, (_sname, _pto, _spto), _fn, _dc, _f, _what in _BINARY:
    _hp = _name in _HIGH_PRECISION
    binary_family(_name, _with_precision(_fn) if _hp else _fn, _pto, _dc, vector(_f), scalar=(_sname, _spto),
                  what=_what, attrs=_PRECISION_ATTR if _hp else None, out_form=_OUT_FORMS.get(_name),
                  scalar_out_form=_SCALAR_OUT_FORMS.get(_name))
for _name, _fn, _pto, _dc, _f, _what in _UNARY:
    _hp = _name in _HIGH_PRECISION
    unary_family(_name, _with_precision(_fn) if _hp else _fn, _pto, _dc, vector(_f), what=_what,
                 attrs=_PRECISION_ATTR if _hp else None, out_form=_UNARY_OUT_FORMS.get(_name))


# ---- activations with a parameter --------------------------------------------------------------

def _lrelu(x: Any, slope: Any) -> Any:
    return torch.where(x >= 0, x, x * slope)


def _prelu(x: Any, slope: Any) -> Any:
    return torch.where(x >= 0, x, x * slope)


def _prelu_rule(ns: str):
    base = binary_rule(ns, FLOAT, names=("x", "slope"), keep_lhs=True)

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        t = base(args, attrs)
        x = args[0].type
        if not shapes_equal(t.shape, x.shape):  # type: ignore[attr-defined]
            raise OpTypeError(f"argument 'slope' must broadcast to the shape of 'x' "
                              f"{shape_str(x.shape)}, not widen it")  # type: ignore[attr-defined]
        return t
    return rule


for _ns in ("tensor", "tile"):
    _tile = _ns == "tile"
    register(OpSpec(f"{_ns}.lrelu", ("x", "slope"), scalar_rule(_ns, FLOAT, names=("x", "slope")), _lrelu,
                    reads=(0, 1), traits=VEC, tile_op=None if _tile else "tile.lrelu",
                    pto="pto.tlrelu" if _tile else None, cost=vector(1.0), family="activation",
                    dtypes=FLOAT.text,
                    doc="Leaky ReLU: x where x >= 0, else x * slope, with a scalar `slope`."))
    register(OpSpec(f"{_ns}.prelu", ("x", "slope"), _prelu_rule(_ns), _prelu, reads=(0, 1), traits=VEC,
                    tile_op=None if _tile else "tile.prelu", pto="pto.tprelu" if _tile else None,
                    cost=vector(1.0), family="activation", dtypes=FLOAT.text,
                    doc="Parametric ReLU: x where x >= 0, else x * slope, with a per-element `slope` "
                        + ("tile of x's shape." if _tile else "tensor broadcast to x's shape.")))
    register_unified("lrelu", _ns, None, f"{_ns}.lrelu")
    register_unified("prelu", _ns, None, f"{_ns}.prelu")
