"""Expression half of the closure compiler: variable slots, scalar expressions, op calls.

`ExprCompiler` resolves each Var of one `ir.Function` to a slot of the *environment* (a list; slot
0 is reserved for return values) and compiles expressions into closures `env -> value`:
constants (folded, also tuples of constants), Vars (`operator.itemgetter`), BinaryExpr/UnaryExpr
(`scalar` semantics), MakeTuple, TupleGetItem, and Calls (`compile_call`, defined by the plane:
kernel or orchestration). `op_closure` runs a registered op's `OpSpec.compute`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any, NamedTuple

from ...core.dtype import INDEX, DataType
from ...core.enums import MemorySpace
from ...core.errors import RuntimeSimError
from ...core.span import Span
from ...ir import expr as ex
from ...ir.function import Function
from ...ir.types import ScalarType, TensorType
from ...ops.registry import OpSpec, get_op
from . import scalar

__all__ = ["ExprCompiler", "Extent", "Env", "ExprFn", "call_closure"]

Env = list
ExprFn = Callable[[Env], Any]


class Extent(NamedTuple):
    """Bytes `[addr, addr + nbytes)` of on-chip memory `space` occupied by a buffer Var."""

    space: MemorySpace
    addr: int
    nbytes: int

    def overlaps(self, other: Extent) -> bool:
        return (self.space is other.space and self.addr < other.addr + other.nbytes
                and other.addr < self.addr + self.nbytes)

    def same_place(self, other: Extent) -> bool:
        return self.space is other.space and self.addr == other.addr


def _const(v: Any) -> ExprFn:
    return lambda env: v


class ExprCompiler:
    """Slots and expression closures for `func`; binds its parameters to the first slots.

    Attributes:
        slots: Var → slot index. param_slots: slots of `func.params` in order.
        dim_binders: (param index, axis, slot) per dynamic dimension Var of a tensor parameter.
    """

    kind = "function"   # used in messages: "kernel" / "orchestration function"

    def __init__(self, func: Function) -> None:
        self.func = func
        self.slots: dict[ex.Var, int] = {}
        self.param_slots = tuple(self.define(p) for p in func.params)
        self.dim_binders = self._dim_binders(func)

    @property
    def num_slots(self) -> int:
        return len(self.slots) + 1

    # ---- variables ---------------------------------------------------------------------------
    def define(self, var: ex.Var) -> int:
        """Slot of `var`, allocated on its first definition."""
        s = self.slots.get(var)
        if s is None:
            s = self.slots[var] = len(self.slots) + 1
            self.on_define(var, s)
        return s

    def on_define(self, var: ex.Var, slot: int) -> None:
        """Hook: a Var got a slot (subclasses register buffers here)."""

    def use(self, var: ex.Var, span: Span | None = None) -> int:
        s = self.slots.get(var)
        if s is None:
            raise RuntimeSimError(f"{self.kind} '{self.func.name}' reads variable '{var.name}' before "
                                  f"any definition of it", span or var.span)
        return s

    def buffer_of(self, var: ex.Var) -> Extent | None:
        """Where `var` lives if it is a fixed on-chip buffer; None for rebindable values."""
        return None

    def _dim_binders(self, func: Function) -> tuple[tuple[int, int, int], ...]:
        """(param index, axis, slot) for each dynamic dimension Var in a tensor parameter's shape."""
        out = []
        for i, p in enumerate(func.params):
            if isinstance(p.type, TensorType):
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, ex.Var):
                        out.append((i, axis, self.define(d)))
        return tuple(out)

    def bind_dims(self, env: Env, args: Sequence[Any]) -> None:
        """Bind dynamic dimension Vars from the actual shapes of the tensor arguments."""
        for i, axis, slot in self.dim_binders:
            size = args[i].shape[axis]
            old = env[slot]
            if old is not None and old != size:
                raise RuntimeSimError(f"{self.kind} '{self.func.name}': dynamic dimension "
                                      f"'{self.func.params[i].type.shape[axis].name}' is {old} for an "
                                      f"earlier parameter but {size} for '{self.func.params[i].name}'")
            env[slot] = size

    # ---- expressions -------------------------------------------------------------------------
    def compile_expr(self, e: ex.Expr) -> ExprFn:
        """A closure computing `e` from the environment."""
        ok, v = self.const_value(e)
        if ok:
            return _const(v)
        if isinstance(e, ex.Var):
            return itemgetter(self.use(e))
        if isinstance(e, ex.BinaryExpr):
            return self._binary(e)
        if isinstance(e, ex.UnaryExpr):
            return self._unary(e)
        if isinstance(e, ex.Call):
            return self.compile_call(e)
        if isinstance(e, ex.MakeTuple):
            return self._tuple(e)
        if isinstance(e, ex.TupleGetItem):
            t, i = self.compile_expr(e.tuple_value), e.index
            return lambda env: t(env)[i]
        if isinstance(e, ex.GlobalVar):
            raise RuntimeSimError(f"function reference '{e.name}' used as a value", e.span)
        raise RuntimeSimError(f"the simulator cannot evaluate a {type(e).__name__}", e.span)

    def _tuple(self, e: ex.MakeTuple) -> ExprFn:
        """A tuple of element values; the usual 2-D offsets `[0, k * BK]` without a loop (a
        constant element is inlined)."""
        if len(e.elements) == 2:
            (ok0, c0), (ok1, c1) = (self.const_value(x) for x in e.elements)
            f0, f1 = (self.compile_expr(x) for x in e.elements)
            if ok0:
                return lambda env: (c0, f1(env))
            if ok1:
                return lambda env: (f0(env), c1)
            return lambda env: (f0(env), f1(env))
        fns = [self.compile_expr(x) for x in e.elements]
        return lambda env: tuple([f(env) for f in fns])

    def const_value(self, e: ex.Expr) -> tuple[bool, Any]:
        """(True, value) if `e` is a constant or a tuple of constants, else (False, None)."""
        if isinstance(e, ex.ConstInt):
            return True, e.value
        if isinstance(e, ex.ConstFloat):
            return True, float(e.value)
        if isinstance(e, ex.ConstBool):
            return True, bool(e.value)
        if isinstance(e, ex.MakeTuple):
            vals = []
            for x in e.elements:
                ok, v = self.const_value(x)
                if not ok:
                    return False, None
                vals.append(v)
            return True, tuple(vals)
        return False, None

    @staticmethod
    def _scalar_dtype(e: ex.Expr) -> DataType | None:
        t = getattr(e, "type", None)
        return t.dtype if isinstance(t, ScalarType) else None

    def _normalizer(self, dtype: DataType, span: Span) -> Callable[[Any], Any]:
        try:
            return scalar.normalizer(dtype)
        except TypeError as err:
            raise RuntimeSimError(str(err), span) from None

    def _binary(self, e: ex.BinaryExpr) -> ExprFn:
        try:
            fn = scalar.binary_fn(e.op)
        except KeyError as err:
            raise RuntimeSimError(err.args[0], e.span) from None
        lhs, rhs, span = self.compile_expr(e.lhs), self.compile_expr(e.rhs), e.span
        lt, rt = self._scalar_dtype(e.lhs), self._scalar_dtype(e.rhs)
        int_closed = (e.op in scalar.INT_CLOSED_OPS and e.dtype is INDEX
                      and lt is not None and rt is not None and lt.is_int() and rt.is_int())
        norm = None if int_closed else self._normalizer(e.dtype, span)
        ok, c = self.const_value(e.rhs)
        if norm is None and ok:   # `k * BK`: an integer op with a constant, without normalising
            def run_const(env: Env) -> Any:
                try:
                    return fn(lhs(env), c)
                except (ArithmeticError, TypeError, ValueError) as err:
                    raise RuntimeSimError(f"scalar '{e.op}' failed: {err}", span) from err
            return run_const

        def run(env: Env) -> Any:
            try:
                r = fn(lhs(env), rhs(env))
                return r if norm is None else norm(r)
            except (ArithmeticError, TypeError, ValueError) as err:
                raise RuntimeSimError(f"scalar '{e.op}' failed: {err}", span) from err
        return run

    def _unary(self, e: ex.UnaryExpr) -> ExprFn:
        try:
            fn = scalar.unary_fn(e.op)
        except KeyError as err:
            raise RuntimeSimError(err.args[0], e.span) from None
        x, norm, span = self.compile_expr(e.operand), self._normalizer(e.dtype, e.span), e.span

        def run(env: Env) -> Any:
            try:
                return norm(fn(x(env)))
            except (ArithmeticError, TypeError, ValueError) as err:
                raise RuntimeSimError(f"scalar '{e.op}' failed: {err}", span) from err
        return run

    def compile_operand(self, e: ex.Expr, spec: OpSpec) -> ExprFn:
        """A closure computing the value argument `e` passes to `spec`'s compute; subclasses
        unpack values whose memory form differs (packed 4-bit tiles). Default: `compile_expr`."""
        return self.compile_expr(e)

    def compile_call(self, call: ex.Call) -> ExprFn:  # pragma: no cover - abstract
        raise NotImplementedError

    def lookup_op(self, call: ex.Call) -> OpSpec:
        """The OpSpec of a registered-op Call. Raises RuntimeSimError for unknown ops."""
        try:
            return get_op(call.op)  # type: ignore[arg-type]
        except KeyError as err:
            raise RuntimeSimError(err.args[0], call.span) from None

    def op_closure(self, call: ex.Call, spec: OpSpec, into_slot: int | None = None) -> ExprFn:
        """A closure returning `spec.compute(*args, **attrs)` for `call`.

        Tensors and tiles arrive as torch tensors, MakeTuple arguments as tuples of Python numbers,
        scalars as Python numbers. For an op with `valid_args`, `valid=` passes the valid shape of
        each of those arguments (a tuple of ints, evaluated at run time, or None when the argument's
        type has no valid region). Any exception from the op becomes a RuntimeSimError naming the op
        and the function, located at the call. With `into_slot`, the closure calls
        `spec.compute_into(env[into_slot], *args, **attrs)` instead (the result's buffer first).
        """
        compute = spec.compute if into_slot is None else spec.compute_into
        if compute is None:
            raise RuntimeSimError(f"op '{spec.name}' has no simulator semantics (its OpSpec has no "
                                  f"compute function)", call.span)
        arg_fns = [self.compile_operand(a, spec) for a in call.args]
        if into_slot is not None:
            arg_fns.insert(0, itemgetter(into_slot))
        attrs = dict(call.kwargs)
        where, span = f"{spec.name} failed in {self.kind} '{self.func.name}'", call.span
        valid_fns = self._valid_fns(call, spec)
        if isinstance(call.result_type, ScalarType):
            raw = compute

            def compute(*a: Any, **kw: Any) -> Any:
                r = raw(*a, **kw)
                return r.item() if hasattr(r, "item") else r

        if valid_fns is not None and any(f is not None and not isinstance(f, tuple) for f in valid_fns):
            def run(env: Env) -> Any:
                try:
                    valid = tuple([f if f is None or isinstance(f, tuple) else f(env) for f in valid_fns])
                    return compute(*[f(env) for f in arg_fns], valid=valid, **attrs)
                except RuntimeSimError as err:
                    _locate(err, span)
                    raise
                except Exception as err:
                    raise RuntimeSimError(f"{where}: {err}", span) from err
            return run
        if valid_fns is not None:   # every valid shape is a constant: pass it like an attribute
            attrs["valid"] = tuple(valid_fns)
        return call_closure(partial(compute, **attrs) if attrs else compute, arg_fns, where, span)

    def _valid_fns(self, call: ex.Call, spec: OpSpec) -> list[Any] | None:
        """Per `spec.valid_args` index: the argument's valid shape (a tuple when constant, else a
        closure computing it), or None when the argument is fully valid."""
        idx = getattr(spec, "valid_args", ())
        if not idx:
            return None
        out: list[ExprFn | None] = []
        for i in idx:
            view = getattr(call.args[i].type, "view", None) if i < len(call.args) else None
            vs = getattr(view, "valid_shape", None)
            if vs is None:
                out.append(None)
                continue
            consts = [self.const_value(d) for d in vs]
            if all(ok for ok, _ in consts):
                out.append(tuple(v for _, v in consts))   # known at compile time
                continue
            fns = [self.compile_expr(d) for d in vs]
            out.append(lambda env, fns=fns: tuple([f(env) for f in fns]))
        return out


def _locate(err: RuntimeSimError, span: Span) -> None:
    """Locate `err` at `span` when it has no location yet (an op's compute raised it without
    knowing the call, e.g. through a distributed run's Comm)."""
    if err.span is None:
        err.span = span


def call_closure(fn: Callable[..., Any], arg_fns: list[ExprFn], where: str, span: Span) -> ExprFn:
    """`env -> fn(*[f(env) for f in arg_fns])`, specialised by arity (the interpreter's hot path);
    exceptions other than RuntimeSimError become a RuntimeSimError located at `span`."""
    if len(arg_fns) == 1:
        (f0,) = arg_fns

        def run1(env: Env) -> Any:
            try:
                return fn(f0(env))
            except RuntimeSimError as err:
                _locate(err, span)
                raise
            except Exception as err:
                raise RuntimeSimError(f"{where}: {err}", span) from err
        return run1
    if len(arg_fns) == 2:
        f0, f1 = arg_fns

        def run2(env: Env) -> Any:
            try:
                return fn(f0(env), f1(env))
            except RuntimeSimError as err:
                _locate(err, span)
                raise
            except Exception as err:
                raise RuntimeSimError(f"{where}: {err}", span) from err
        return run2
    if len(arg_fns) == 3:
        f0, f1, f2 = arg_fns

        def run3(env: Env) -> Any:
            try:
                return fn(f0(env), f1(env), f2(env))
            except RuntimeSimError as err:
                _locate(err, span)
                raise
            except Exception as err:
                raise RuntimeSimError(f"{where}: {err}", span) from err
        return run3

    if len(arg_fns) == 4:
        f0, f1, f2, f3 = arg_fns

        def run4(env: Env) -> Any:
            try:
                return fn(f0(env), f1(env), f2(env), f3(env))
            except RuntimeSimError as err:
                _locate(err, span)
                raise
            except Exception as err:
                raise RuntimeSimError(f"{where}: {err}", span) from err
        return run4

    def run(env: Env) -> Any:
        try:
            return fn(*[f(env) for f in arg_fns])
        except RuntimeSimError as err:
            _locate(err, span)
            raise
        except Exception as err:
            raise RuntimeSimError(f"{where}: {err}", span) from err
    return run
