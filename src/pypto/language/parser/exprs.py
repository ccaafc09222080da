"""Expression handlers of the parser: one method per Python AST expression kind (STYLE rule 8).

Values produced while parsing are either IR `Expr`s or compile-time Python objects (op references,
DSL builtins, enums, dtypes, plain numbers from globals). `to_expr` turns the latter into IR
constants where an IR value is needed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ... import ops as _ops
from ...core.dtype import BOOL, FP32, INDEX, TASK_ID, DataType, promote
from ...core.enums import ParamDirection
from ...core.errors import (
    InvalidOperationError,
    ParserSyntaxError,
    ParserTypeError,
    UndefinedVariableError,
)
from ...core.span import Span
from ...ir.expr import (
    COMPARE_OPS,
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    MakeTuple,
    TupleGetItem,
    UnaryExpr,
    Var,
)
from ...ir.types import DistributedTensorType, ScalarType, TensorType, TileType, TupleType
from .. import dsl
from ..op_wrappers import OpRef, UnifiedOp, resolve_unified
from ..typing import DynVar
from .call_binding import positional_call
from .deps import parse_deps, reject_deps
from .host import function_call, is_host_orchestrator, rank_subscript
from .source import MISSING
from .tasks import parse_submit, reject_task_id

__all__ = ["ExprParser", "make_op_call"]

_BINOP_NAMES = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
                ast.FloorDiv: "floordiv", ast.Mod: "floormod", ast.Pow: "pow", ast.BitAnd: "bit_and",
                ast.BitOr: "bit_or", ast.BitXor: "bit_xor", ast.LShift: "shl", ast.RShift: "shr"}
# Python operator on tensors/tiles -> unified op name (Language Guide "Python Operators").
_SHAPED_BINOPS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div"}


def make_op_call(op_name: str, args: list[Expr], attrs: dict[str, Any], span: Span,
                 advice: Callable[[], str] | None = None) -> Call:
    """Build a `Call` of a registered op, running its type rule.

    Raises:
        ParserTypeError: when the rule rejects the arguments ("<op>: <reason> (<advice>)"); when
            `advice()` returns text, that text follows the reason instead of the rule's advice.
    """
    spec = _ops.get_op(op_name)
    full_attrs = dict(spec.attrs)
    full_attrs.update(attrs)
    try:
        rt = spec.infer(args, full_attrs)
    except _ops.OpTypeError as e:
        better = advice() if advice is not None else ""
        raise ParserTypeError(f"{op_name}: {e.reason}{better}" if better else f"{op_name}: {e}", span) from None
    return Call(op_name, tuple(args), tuple(full_attrs.items()), rt, span=span)


def _is_literal_const(e: Expr) -> bool:
    return (isinstance(e, ConstInt) and e.dtype is INDEX) or (isinstance(e, ConstFloat) and e.dtype is FP32)


def scalar_binary(op: str, lhs: Expr, rhs: Expr, span: Span) -> Expr:
    """A scalar BinaryExpr with the result dtype rule of the DSL.

    Comparisons and and/or give BOOL; a literal adopts the other operand's dtype when both are of
    the same class (int/float); `/` on integers gives FP32; otherwise dtypes promote.
    """
    lt, rt = lhs.type, rhs.type
    if not (isinstance(lt, ScalarType) and isinstance(rt, ScalarType)):
        raise ParserTypeError(f"operator '{op}' needs scalar operands", span)
    if lt.dtype is TASK_ID or rt.dtype is TASK_ID:
        name = next(getattr(v, "name", "a TaskId") for v in (lhs, rhs) if v.type.dtype is TASK_ID)  # type: ignore[attr-defined]
        raise ParserTypeError(f"'{name}' is a pl.TaskId, which only orders tasks (deps=[{name}]); it "
                              f"cannot be used as an operand of '{op}'", span)
    if op in COMPARE_OPS or op in ("and", "or"):
        return BinaryExpr(op, lhs, rhs, BOOL, span=span)
    a, b = lt.dtype, rt.dtype
    if _is_literal_const(rhs) and not _is_literal_const(lhs) and a.is_float() == b.is_float():
        dt = a
    elif _is_literal_const(lhs) and not _is_literal_const(rhs) and a.is_float() == b.is_float():
        dt = b
    else:
        dt = promote(a, b)
    if op == "truediv" and not dt.is_float():
        dt = FP32
    return BinaryExpr(op, lhs, rhs, dt, span=span)


class ExprParser:
    """Mixin: expression parsing. Needs `self.info`, `self.ns`, `self.env`, `self.error(...)`."""

    # ---- entry points --------------------------------------------------------------------
    def parse_value(self, node: ast.expr) -> Any:
        """Parse to an IR Expr or a compile-time Python object."""
        handler = getattr(self, f"expr_{type(node).__name__}", None)
        if handler is None:
            raise ParserSyntaxError(f"unsupported expression '{type(node).__name__}' in a kernel body",
                                    self.span(node))
        return handler(node)

    def parse_expr(self, node: ast.expr) -> Expr:
        return self.to_expr(self.parse_value(node), node)

    def to_expr(self, v: Any, node: ast.AST) -> Expr:
        if isinstance(v, Expr):
            return v
        span = self.span(node)
        if isinstance(v, bool):
            return ConstBool(v, span=span)
        if isinstance(v, int):
            return ConstInt(v, INDEX, span=span)
        if isinstance(v, float):
            return ConstFloat(v, FP32, span=span)
        if isinstance(v, DynVar):
            return v.var
        if isinstance(v, (list, tuple)):
            return MakeTuple(tuple(self.to_expr(x, node) for x in v), span=span)
        raise ParserTypeError(f"expected a value, got {_describe(v)}", span)

    # ---- leaves --------------------------------------------------------------------------
    def expr_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise ParserSyntaxError(f"unsupported constant {node.value!r}", self.span(node))

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        stale = self.loop_local.get(node.id)
        if stale is not None:
            from .loop_names import stale_name_error

            raise stale_name_error(self, node.id, stale, self.span(node))
        v = self.ns.lookup(node.id)
        if v is MISSING:
            import difflib

            values = {**self.ns.globals, **self.ns.closure}
            known = [*self.env, *(n for n, v in values.items()  # constants, not modules/functions
                                  if not n.startswith("_") and not callable(v) and not hasattr(v, "__path__")
                                  and not hasattr(v, "__file__"))]
            close = difflib.get_close_matches(node.id, known, n=1, cutoff=0.75)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise UndefinedVariableError(f"Undefined variable '{node.id}'{hint}", self.span(node))
        if isinstance(v, DynVar):
            return v.var  # a pl.dynamic dimension is an INDEX scalar in expressions (M // 16, ...)
        return v

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "self" and "self" not in self.env \
                and self.program is not None:
            if not self.program.has_function(node.attr):
                raise UndefinedVariableError(f"Undefined function 'self.{node.attr}' in program "
                                             f"'{self.program.name}'", self.span(node))
            return GlobalVar(node.attr, span=self.span(node))
        from .hints import attribute_hint, ir_attribute_error

        base = self.parse_value(node.value)
        if isinstance(base, Expr):
            raise ir_attribute_error(ast.unparse(node.value), node.attr, base, self.span(node))
        try:
            return getattr(base, node.attr)
        except AttributeError as e:
            hint = attribute_hint(base, ast.unparse(node.value), node.attr, e)
            raise UndefinedVariableError(f"Undefined name '{ast.unparse(node)}'{hint}", self.span(node)) from None

    def expr_List(self, node: ast.List) -> list:
        return [self.parse_value(e) for e in node.elts]

    def expr_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.parse_value(e) for e in node.elts)

    # ---- operators -----------------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINOP_NAMES.get(type(node.op))
        if op is None:
            raise ParserSyntaxError(f"unsupported operator {type(node.op).__name__}", self.span(node))
        lhs, rhs = self.parse_value(node.left), self.parse_value(node.right)
        if not isinstance(lhs, Expr) and not isinstance(rhs, Expr) and not _run_time_only(op, lhs, rhs):
            return _fold(op, lhs, rhs, self.span(node))  # compile-time arithmetic on constants
        lhs, rhs = self.to_expr(lhs, node.left), self.to_expr(rhs, node.right)
        if isinstance(lhs.type, (TensorType, TileType)):
            if op not in _SHAPED_BINOPS:
                raise ParserTypeError(f"operator '{type(node.op).__name__}' is not defined on "
                                      f"tensors/tiles", self.span(node))
            return self.call_unified(_SHAPED_BINOPS[op], [lhs, rhs], {}, node)
        if isinstance(rhs.type, (TensorType, TileType)):
            if op in ("add", "mul"):  # commutative: s + t == t + s
                return self.call_unified(_SHAPED_BINOPS[op], [rhs, lhs], {}, node)
            if op == "sub":  # s - t == (-t) + s, exact in IEEE arithmetic
                return self.call_unified("add", [self.call_unified("neg", [rhs], {}, node), lhs], {}, node)
            raise ParserTypeError("a scalar divided by a tensor/tile is not an op; write "
                                  "pl.mul(pl.recip(t), s)", self.span(node))
        return scalar_binary(op, lhs, rhs, self.span(node))

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.parse_value(node.operand)
        if not isinstance(v, Expr):
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.UAdd):
                return v
        e = self.to_expr(v, node.operand)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(e.type, (TensorType, TileType)) and isinstance(node.op, ast.USub):
            return self.call_unified("neg", [e], {}, node)
        if not isinstance(e.type, ScalarType):
            raise ParserTypeError("unary operator needs a scalar operand", self.span(node))
        name = {ast.USub: "neg", ast.Not: "not", ast.Invert: "bit_not"}[type(node.op)]
        dt = BOOL if name == "not" else e.type.dtype
        return UnaryExpr(name, e, dt, span=self.span(node))

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.parse_value(node.value)
        if not isinstance(base, Expr):
            try:
                return base[self.parse_value(node.slice)]
            except Exception as e:  # compile-time indexing of a Python object
                raise ParserTypeError(f"cannot index {_describe(base)}: {e}", self.span(node)) from None
        t = base.type
        if isinstance(t, TupleType):
            idx = self.parse_value(node.slice)
            if not isinstance(idx, int) or not 0 <= idx < len(t.types):
                raise ParserTypeError(f"tuple index must be a constant in [0, {len(t.types)})",
                                      self.span(node))
            return TupleGetItem(base, idx, span=self.span(node))
        if isinstance(t, TensorType) and is_host_orchestrator(self.level, self.role, self.func_type):
            return rank_subscript(self, base, node)  # x[r] of a world-shaped tensor (SPEC §8)
        if isinstance(t, TensorType):
            offsets, sizes, is_slice = self.subscript_region(base, node.slice)
            if not is_slice:  # A[i, j] reads one element (Language Guide "subscript syntax")
                return self.call_unified("read", [base, MakeTuple(offsets)], {}, node)
            return make_op_call("tensor.slice", [base, MakeTuple(sizes), MakeTuple(offsets)], {},
                                self.span(node))
        if isinstance(t, TileType):
            offsets, sizes, is_slice = self.subscript_region(base, node.slice)
            if not is_slice:
                return self.call_unified("read", [base, MakeTuple(offsets)], {}, node)
            return self.call_op("tile.slice", [base, MakeTuple(sizes), MakeTuple(offsets)], {}, node)
        raise ParserTypeError(f"cannot subscript a value of type {type(t).__name__}", self.span(node))

    def subscript_region(self, base: Expr, sl: ast.expr) -> tuple[tuple[Expr, ...], tuple[Expr, ...], bool]:
        """Offsets and sizes of `base[<sl>]`; `is_slice` is False for pure element indexing."""
        shape = base.type.shape  # type: ignore[attr-defined]
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if len(items) > len(shape):
            raise ParserTypeError(f"too many indices: {len(items)} for a {len(shape)}-D value", self.span(sl))
        items += [ast.Slice(None, None, None)] * (len(shape) - len(items))
        offsets, sizes, any_slice = [], [], False
        for it, dim in zip(items, shape):
            if isinstance(it, ast.Slice):
                any_slice = True
                if it.step is not None:
                    raise ParserSyntaxError("slice steps are not supported", self.span(it))
                lo = _from_end(self.parse_expr(it.lower), dim, self.span(it.lower)) if it.lower is not None \
                    else ConstInt(0, INDEX)
                hi = _from_end(self.parse_expr(it.upper), dim, self.span(it.upper)) if it.upper is not None \
                    else dim
                offsets.append(lo)
                if not isinstance(dim, ConstInt) and (it.upper is None or hi is dim):
                    raise ParserTypeError(_dynamic_slice_message(base, shape, len(sizes)), self.span(it))
                sizes.append(_const_sub(hi, lo, self.span(it)))
            else:
                offsets.append(_from_end(self.parse_expr(it), dim, self.span(it)))
                sizes.append(ConstInt(1, INDEX))
        return tuple(offsets), tuple(sizes), any_slice

    # ---- calls ---------------------------------------------------------------------------
    def expr_Call(self, node: ast.Call) -> Any:
        callee = self.parse_value(node.func)
        if isinstance(callee, (OpRef, UnifiedOp)):
            reject_deps(self, node, f"op call '{ast.unparse(node.func)}'")
            args = [self.parse_value(a) for a in node.args]
            kwargs = {k.arg: self.parse_value(k.value) for k in node.keywords}
            if isinstance(callee, OpRef):
                return self.call_op(callee.name, args, kwargs, node)
            return self.call_unified(callee.name, args, kwargs, node)
        if isinstance(callee, dsl.DSLBuiltin):
            return self.call_builtin(callee, node)
        if isinstance(callee, GlobalVar):
            return self.call_function(callee, node)
        from ...ir.function import Function

        if isinstance(callee, Function):
            from .entry import call_external

            return call_external(self, callee, node)
        hook = getattr(callee, "__pypto_call__", None)
        if hook is not None:  # @pl.function / @pl.inline / @pl.jit.* objects
            return hook(self, node)
        if callable(callee) and not isinstance(callee, Expr):
            return self.call_python(callee, node)
        raise ParserTypeError(f"'{ast.unparse(node.func)}' is not callable in a kernel body", self.span(node))

    def call_python(self, fn: Any, node: ast.Call) -> Any:
        """Compile-time call of a plain Python function on constant arguments (e.g. `len`, `min`)."""
        from .hints import python_helper_hint

        args = [self.parse_value(a) for a in node.args]
        kwargs = {k.arg: self.parse_value(k.value) for k in node.keywords}
        name = ast.unparse(node.func)
        if any(isinstance(a, Expr) for a in [*args, *kwargs.values()]):
            raise ParserTypeError(f"'{name}' is a Python function, not a PyPTO op or kernel; it cannot take "
                                  f"IR values{python_helper_hint(fn, name)}", self.span(node))
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise ParserTypeError(f"compile-time call '{name}' failed: {e}{python_helper_hint(fn, name)}",
                                  self.span(node)) from None

    def op_args(self, op_name: str, args: list[Any], kwargs: dict[str, Any],
                node: ast.AST) -> tuple[list[Expr], dict[str, Any]]:
        """Split call arguments into IR operands (the op's params) and attributes."""
        spec = _ops.get_op(op_name)
        n = len(spec.params)
        attr_names = list(spec.attrs)
        unknown = [k for k in kwargs if k not in spec.params and k not in spec.attrs]
        if unknown:  # reported first: a misspelt keyword explains a surplus positional too
            accepted = ", ".join([*spec.params, *attr_names]) or "none"
            raise ParserTypeError(f"{op_name}: unexpected keyword argument '{unknown[0]}'; accepted "
                                  f"keywords: {accepted}", self.span(node))
        operands: list[Any] = list(args[:n])
        extra = args[n:]
        if len(extra) > len(attr_names):
            most = n + len(attr_names)
            raise ParserTypeError(f"{op_name}: takes at most {most} positional argument"
                                  f"{'' if most == 1 else 's'}, got {len(args)}", self.span(node))
        attrs = dict(zip(attr_names, extra))
        given = [*spec.params[:len(operands)], *attrs]
        twice = [k for k in kwargs if k in given]
        if twice:
            raise ParserTypeError(f"{op_name}: got multiple values for argument '{twice[0]}'", self.span(node))
        for k, v in kwargs.items():
            if k in spec.params:
                i = spec.params.index(k)
                while len(operands) <= i:
                    operands.append(MISSING)
                operands[i] = v
            else:
                attrs[k] = v
        n_required = n - len(spec.optional)  # trailing OpSpec.optional params may be omitted (or None)
        operands = [MISSING if i >= n_required and o is None else o for i, o in enumerate(operands)]
        while len(operands) > n_required and operands[-1] is MISSING:
            operands.pop()
        reject_task_id(self, [*operands, *attrs.values()], node, f"an operand of {op_name}")
        if len(operands) < n_required or any(o is MISSING for o in operands):
            missing = [p for i, p in enumerate(spec.params) if i >= len(operands) or operands[i] is MISSING]
            raise ParserTypeError(f"{op_name}: missing argument '{missing[0]}'", self.span(node))
        for k, v in attrs.items():
            if isinstance(v, Expr):
                raise ParserTypeError(f"{op_name}: attribute '{k}' must be a compile-time constant",
                                      self.span(node))
            if isinstance(v, list):
                attrs[k] = tuple(v)
        return [self.to_expr(o, node) for o in operands], attrs

    def call_op(self, op_name: str, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Call:
        """Build the Call of `op_name`: placement, then the op's type rule, then the write check.
        The type rule runs before the write check: an operand of the wrong kind (e.g. a plain Tensor
        given to `pld.allreduce`, which needs a window-bound one) is the real error; telling the user
        to make it writable first would only lead to the type error next."""
        operands, attrs = self.op_args(op_name, args, kwargs, node)
        self.check_op_placement(op_name, node)
        spec = _ops.get_op(op_name)
        call = make_op_call(op_name, operands, attrs, self.span(node),
                            (lambda: self.created_tensor_hint(operands)) if spec.namespace == "tile" else None)
        for w in spec.writes:
            if w < len(operands) and isinstance(operands[w].type, TensorType):
                self.check_writable(operands[w], f"{op_name} writes it", node)
        return call

    def created_tensor_hint(self, operands: list[Expr]) -> str:
        """For a tile op given a Tensor that a creation op without a Tile argument built (`pl.full`,
        `pl.create_tensor`, `pl.ci`, `pl.tri`: these make DDR tensors): the tile-level spelling."""
        for e in operands:
            made = self.created_tensors.get(e) if isinstance(e, Var) else (
                e.op if isinstance(e, Call) and isinstance(e.op, str) else None)
            spec = _ops.get_op(made) if made and _ops.has_op(made) else None
            if spec is None or spec.family != "creation" or not spec.tile_op:
                continue
            name = f"'{e.name}'" if isinstance(e, Var) else "that argument"
            spelt = " / ".join(f"pl.{n}" for n in _ops.unified_names_of(made)) or spec.dsl_name
            tile = next((f"pl.{n}" for n in _ops.unified_names_of(spec.tile_op) if n.endswith("tile")),
                        _ops.get_op(spec.tile_op).dsl_name)
            return (f"; {name} is a Tensor: {spelt}(...) with no Tile argument builds a DDR tensor "
                    f"({spec.dsl_name}); in a tile-level kernel write {tile}(...) to build a tile")
        return ""

    def check_writable(self, e: Expr, how: str, node: ast.AST) -> None:
        """Writing an In parameter (directly or through a loop-carried value) is an error."""
        root = self.param_root.get(e) if isinstance(e, Var) else None
        if root is not None and self.param_dirs.get(root) is ParamDirection.In:
            raise InvalidOperationError(
                f"cannot write input parameter '{root.name}' ({how}); declare it "
                f"pl.Out[...] or pl.InOut[...] to write it", self.span(node))

    def call_unified(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Call:
        first_args = [self.to_expr(a, node) if not isinstance(a, (DataType, str)) else None
                      for a in args[:2]]
        types = [a.type if a is not None else None for a in first_args]
        if name == "cast" and isinstance(types[0], ScalarType):
            return self.scalar_cast(first_args[0], args, kwargs, node)  # type: ignore[arg-type]
        try:
            op_name = resolve_unified(name, types)  # type: ignore[arg-type]
        except ValueError as e:
            raise ParserTypeError(str(e), self.span(node)) from None
        return self.call_op(op_name, args, kwargs, node)

    def scalar_cast(self, x: Expr, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Expr:
        """`pl.cast(scalar, dtype)`: a scalar conversion (IR UnaryExpr "cast"), not a tile op."""
        dt = args[1] if len(args) > 1 else kwargs.get("target_type")
        if not isinstance(dt, DataType):
            raise ParserTypeError("pl.cast of a scalar needs a data type, e.g. pl.cast(i, pl.FP32)",
                                  self.span(node))
        return UnaryExpr("cast", x, dt, span=self.span(node))

    def check_op_placement(self, op_name: str, node: ast.AST) -> None:
        """Orchestration functions may only create/view tensors and dispatch; compute needs pl.at.
        A HOST orchestrator (`@pl.jit.host`, level=HOST) may call only ops with the trait "host" (they
        have a Python form in the host driver); an op with the trait "host_only" is refused everywhere
        else (SPEC §8; parser/host.py has the other host-level rules)."""
        from ...core.enums import FunctionType

        spec = _ops.get_op(op_name)
        if is_host_orchestrator(self.level, self.role, self.func_type):  # host code has a Python form only for these
            if not spec.has_trait("host"):
                raise InvalidOperationError(
                    f"'{spec.dsl_name}' cannot run in HOST function '{self.fdef.name}': it runs on a chip"
                    f"{' (on the cores, inside a kernel)' if spec.has_trait('distributed') else ''}; "
                    f"call it from a kernel that a chip orchestration function dispatches with device=r",
                    self.span(node))
            return
        if spec.has_trait("host_only"):
            raise InvalidOperationError(
                f"'{spec.dsl_name}' is a host op: only a HOST orchestrator (@pl.jit.host, or "
                f"@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)) may call it", self.span(node))
        if self.incore_depth > 0 and spec.has_trait("orchestration") and spec.tile_op is None \
                and not spec.lowering:  # no kernel form (pl.dump_tag, pl.tensor.write): as codegen says
            raise InvalidOperationError(
                f"'{spec.dsl_name}' runs only in orchestration functions (host code), not inside a kernel "
                f"(a pl.at region or an InCore function); call it where the tensor is passed to the kernel",
                self.span(node))
        if self.func_type is FunctionType.Orchestration and self.incore_depth == 0:
            if not spec.has_trait("orchestration"):
                raise InvalidOperationError(
                    f"Misplaced {spec.namespace} op '{op_name}' in Orchestration function "
                    f"(should be inside InCore block)", self.span(node))

    def call_builtin(self, b: dsl.DSLBuiltin, node: ast.Call) -> Any:
        span = self.span(node)
        if b.name == "const":
            if len(node.args) != 2:
                raise ParserTypeError("pl.const takes (value, dtype)", span)
            value, dt = self.parse_value(node.args[0]), self.parse_value(node.args[1])
            if not isinstance(dt, DataType):
                raise ParserTypeError("pl.const: second argument must be a data type", span)
            if not isinstance(value, (bool, int, float)):
                raise ParserTypeError(f"pl.const: the value must be a Python number known at parse time, "
                                      f"got {type(value).__name__}", span)
            if not dt.is_float() and dt is not BOOL and value != int(value):
                raise ParserTypeError(f"pl.const: {value!r} is not an integer, as {dt.name} needs", span)
            if dt.is_float():
                return ConstFloat(float(value), dt, span=span)
            if dt is BOOL:
                return ConstBool(bool(value), span=span)
            return ConstInt(int(value), dt, span=span)
        if b.name in ("submit", "spmd_submit"):
            return parse_submit(self, node, b.name == "spmd_submit")
        if b.name in ("min", "max"):
            a, c = (self.parse_expr(x) for x in node.args)
            return scalar_binary(b.name, a, c, span)
        raise ParserSyntaxError(f"pl.{b.name}(...) cannot be used as a value here", span)

    def call_function(self, gv: GlobalVar, node: ast.Call) -> Call:
        """A call of program function `gv`, its arguments bound like Python's (`call_binding`);
        `deps=[...]` (`parser/deps.py`) and a host's `device=` are the other keywords."""
        params, _dirs, rets = self.program.signature(gv.name)
        node = positional_call(node, [p.name for p in params], gv.name, self.span(node))
        args = [self.parse_expr(a) for a in node.args]
        deps: tuple[Expr, ...] = ()
        device = None
        for k in node.keywords:
            if k.arg == "device":  # host dispatch to one rank (SPEC §8; parser/host.py)
                device = k
                continue
            if k.arg != "deps":
                raise ParserTypeError(f"'{gv.name}' got an unexpected keyword argument '{k.arg}' (its parameters: "
                                      f"{', '.join(p.name for p in params)}; a call also takes deps=[...])",
                                      self.span(node))
            deps = parse_deps(self, k.value, node)
        if len(args) != len(params):
            raise ParserTypeError(f"function '{gv.name}' takes {len(params)} arguments, got {len(args)}",
                                  self.span(node))
        reject_task_id(self, args, node, f"an argument of '{gv.name}'")
        for a, d, p in zip(args, _dirs, params):
            if isinstance(p.type, DistributedTensorType):   # SPEC §8: remote targets need a window
                from ...ops.distributed import unbound_window_message

                msg = unbound_window_message(p.name, gv.name, a.type)
                if msg is not None:
                    raise ParserTypeError(msg, self.span(node))
            if _conflicting(p.type, a.type):
                from .stmts import type_text

                raise ParserTypeError(f"argument '{p.name}' of '{gv.name}' expects {type_text(p.type)}, got "
                                      f"{type_text(a.type)}", self.span(node))
            if d is not ParamDirection.In:
                self.check_writable(a, f"it is passed as {d.name} parameter '{p.name}' of '{gv.name}'", node)
        call_args, attrs = function_call(self, gv, args, device, node)
        rt = rets[0] if len(rets) == 1 else TupleType(tuple(rets))
        return Call(gv, call_args, attrs, rt, deps, span=self.span(node))


def _conflicting(param: Any, arg: Any) -> bool:
    """An argument that can never bind to a program function's parameter: a tensor for a scalar (or
    the reverse), or tensors / tiles of another dtype, rank or static size (a dynamic dimension
    binds any size). Left unchecked, the kernel met the wrong tensor at run time."""
    if isinstance(param, ScalarType) or isinstance(arg, ScalarType):
        return isinstance(param, (TensorType, TileType)) or isinstance(arg, (TensorType, TileType))
    if not (isinstance(param, TensorType) and isinstance(arg, TensorType)
            or isinstance(param, TileType) and isinstance(arg, TileType)):
        return False
    return (param.dtype is not arg.dtype or len(param.shape) != len(arg.shape)
            or any(isinstance(p, ConstInt) and isinstance(a, ConstInt) and p.value != a.value
                   for p, a in zip(param.shape, arg.shape)))


def _linear(e: Expr) -> tuple[dict[int, int], int, dict[int, Expr]]:
    """`e` as sum(coeff * atom) + const over integer index expressions. Atoms are keyed by their
    structural hash (so `i * 16` written twice is one atom); non-linear parts are atoms."""
    from ...ir.structural import structural_hash

    if isinstance(e, ConstInt):
        return {}, e.value, {}
    if isinstance(e, BinaryExpr) and e.op in ("add", "sub", "mul"):
        lc, lk, la = _linear(e.lhs)
        rc, rk, ra = _linear(e.rhs)
        if e.op in ("add", "sub"):
            sign = 1 if e.op == "add" else -1
            coeffs = dict(lc)
            for k, c in rc.items():
                coeffs[k] = coeffs.get(k, 0) + sign * c
            return coeffs, lk + sign * rk, {**la, **ra}
        if not lc or not rc:  # (linear) * constant
            (vc, vk, va), k = ((lc, lk, la), rk) if not rc else ((rc, rk, ra), lk)
            return {a: c * k for a, c in vc.items()}, vk * k, va
    key = structural_hash(e)
    return {key: 1}, 0, {key: e}


def _from_end(e: Expr, dim: Expr, span: Span) -> Expr:
    """A subscript index or slice bound as Python means it: a negative constant counts from the
    end of its dimension (`A[-16:, :]` is the last 16 rows, `A[i, -1]` the last column)."""
    if not (isinstance(e, ConstInt) and e.value < 0):
        return e
    if isinstance(dim, ConstInt):
        return ConstInt(dim.value + e.value, e.dtype, span=span)
    name = getattr(dim, "name", "n")
    raise ParserTypeError(f"a negative index ({e.value}) counts from the end of dimension '{name}', whose size "
                          f"is known only at run time: write it as {name} - {-e.value}", span)


def _const_sub(hi: Expr, lo: Expr, span: Span) -> Expr:
    """The static size `hi - lo` of a slice `lo:hi` (A[i:i+16], A[b*R:(b+1)*R], ...)."""
    hc, hk, _ = _linear(hi)
    lc, lk, _ = _linear(lo)
    keys = set(hc) | set(lc)
    if all(hc.get(k, 0) == lc.get(k, 0) for k in keys):
        return ConstInt(hk - lk, INDEX)
    raise ParserTypeError("slice bounds must differ by a compile-time constant (e.g. A[i:i+16] or "
                          "A[b*16:(b+1)*16])", span)


def _dynamic_slice_message(base: Expr, shape: tuple[Expr, ...], axis: int) -> str:
    """A slice reaching the end of dynamic dimension `axis`: its size is known only at run time."""
    def text(d: Expr) -> str:
        return str(d.value) if isinstance(d, ConstInt) else getattr(d, "name", "n")

    name, dim = getattr(base, "name", "x"), text(shape[axis])
    block = ", ".join("16" if k == axis else text(d) for k, d in enumerate(shape))
    offs = ", ".join("i" if k == axis else "0" for k in range(len(shape)))
    region = ", ".join("i:i + 16" if k == axis else ":" for k in range(len(shape)))
    valid = ", ".join(f"pl.min(16, {dim} - i)" if k == axis else text(d) for k, d in enumerate(shape))
    return (f"this slice of '{name}' spans the dynamic dimension {dim} (axis {axis}), whose size is only "
            f"known at run time; slices need a compile-time size. Tiles have static shapes, so process a "
            f"tensor with a dynamic dimension in static-size blocks in a loop: "
            f"`for i in pl.range(0, {dim}, 16):` with `blk = pl.slice(src, [{block}], [{offs}], "
            f"valid_shape=[{valid}])` and `{name}[{region}] = <result computed from blk>` "
            f"(docs/language.md, \"Dynamic dimensions\")")


def _run_time_only(op: str, a: Any, b: Any) -> bool:
    """Arithmetic on constants that passes/simplify.py never folds either: a division / modulo by
    zero, a shift by a negative count or by 64 or more. It stays an expression that fails (or wraps)
    at run time, located here, if it runs — e.g. `2 // i` in the copy of a `pl.unroll` loop with
    i = 0, which must print and re-parse like any other IR."""
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return False
    if op in ("truediv", "floordiv", "floormod"):
        return b == 0
    return op in ("shl", "shr") and isinstance(a, int) and isinstance(b, int) and not 0 <= b < 64


def _fold(op: str, a: Any, b: Any, span: Span) -> Any:
    import operator

    fns = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "floormod": operator.mod, "pow": operator.pow,
           "bit_and": operator.and_, "bit_or": operator.or_, "bit_xor": operator.xor,
           "shl": operator.lshift, "shr": operator.rshift}
    try:
        return fns[op](a, b)
    except Exception as e:
        raise ParserTypeError(f"compile-time expression failed: {e}", span) from None


def _describe(v: Any) -> str:
    return f"{type(v).__name__} {v!r}"[:80]

