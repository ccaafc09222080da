"""Structured control flow of the PTO kernel emitter: `scf.for`, `scf.if`, `scf.while`.

Loop-carried tiles and scalars become `iter_args`; DDR tensors are never carried (a carried tensor
is the view of the tensor it aliases). At a yield, a tile that sits in another buffer than the
carried value (or the if's result) is first copied there with `pto.tmov`, as the simulator does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...core.dtype import BOOL, INDEX
from ...ir.expr import Var
from ...ir.stmt import ForStmt, IfStmt, SeqStmts, WhileStmt, YieldStmt
from ...ir.types import ArrayType, TensorType, TileType
from .scalars import Scalar
from .types import elem, tile_buf_type
from .values import ArrayVal, TileVal, Value, array_type_str

__all__ = ["ControlFlow"]


class _Yield(NamedTuple):
    kind: str                         # "for" | "if" | "while"
    targets: list[tuple[int, Var, Any]]  # (position in the IR yield, bound var, target buffer name)
    tensor_rvs: list[tuple[int, Var]]    # If: tensor results, aliased to the yielded tensor


class ControlFlow:
    """Mixin of `KernelEmitter` (which provides names, env, sc, emit, loc, fail, value, scalar,
    index_of, move_into, stmt and the `yields` stack)."""

    names: Any
    env: dict
    sc: Any
    yields: list
    depth: int

    def _carried(self, iter_args: tuple, return_vars: tuple) -> list[tuple[int, Var, Var, Value]]:
        out = []
        for pos, (ia, rv) in enumerate(zip(iter_args, return_vars)):
            init = self.value(ia.init)
            if isinstance(ia.type, TensorType):
                self.env[ia] = self.env[rv] = init
                continue
            if isinstance(ia.type, TileType):
                init = self.move_into(init, ia.type, None, ia.span, f"{ia.name}_init")
            elif isinstance(ia.type, ArrayType):
                pass  # an array value is carried as it is
            else:
                init = self.sc.coerce(init, ia.type.dtype, self.loc(ia.span))
            out.append((pos, ia, rv, init))
        return out

    @staticmethod
    def _type_str(v: Value) -> str:
        return v.tstr if isinstance(v, (TileVal, ArrayVal)) else elem(v.dtype)

    def _bind(self, var: Var, name: str, like: Value) -> Value:
        v = TileVal(name, var.type, like.tstr) if isinstance(like, TileVal) else \
            ArrayVal(name, var.type, like.tstr) if isinstance(like, ArrayVal) else Scalar(name, var.type.dtype)
        self.env[var] = v
        return v

    def _results(self, hint: str, n: int) -> tuple[str, list[str]]:
        if n == 0:
            return "", []
        base = "%" + self.names.fresh(hint)
        if n == 1:
            return f"{base} = ", [base]
        return f"{base}:{n} = ", [f"{base}#{i}" for i in range(n)]

    def for_(self, s: ForStmt) -> None:
        loc = self.loc(s.span)
        lb, ub, st = (self.index_of(x) for x in (s.start, s.stop, s.step))
        carried = self._carried(s.iter_args, s.return_vars)
        iv = "%" + self.names.fresh(s.loop_var.name)
        lhs, res = self._results(carried[0][2].name if len(carried) == 1 else "for", len(carried))
        head = f"{lhs}scf.for {iv} = {lb.name} to {ub.name} step {st.name}"
        targets = []
        if carried:
            names = ["%" + self.names.fresh(ia.name) for _, ia, _, _ in carried]
            head += (f" iter_args({', '.join(f'{n} = {c[3].name}' for n, c in zip(names, carried))}) -> "
                     f"({', '.join(self._type_str(c[3]) for c in carried)})")
            for n, (pos, ia, _, init) in zip(names, carried):
                self._bind(ia, n, init)
                targets.append((pos, ia, n))
        self.emit(head + " {")
        self.env[s.loop_var] = self.sc.coerce(Scalar(iv, INDEX), s.loop_var.type.dtype, loc)
        self._region(s.body, _Yield("for", targets, []))
        self.emit("} " + loc)
        for r, (_, _, rv, init) in zip(res, carried):
            self._bind(rv, r, init)

    def _region(self, body: SeqStmts, y: _Yield) -> None:
        self.yields.append(y)
        self.depth += 1
        try:
            self.stmt(body)
        finally:
            self.depth -= 1
            self.yields.pop()

    def yield_(self, s: YieldStmt) -> None:
        if not self.yields:
            raise self.fail("yield outside a loop or if", s.span)
        y = self.yields[-1]
        for pos, rv in y.tensor_rvs:
            self.env[rv] = self.value(s.values[pos])
        vals: list[Value] = []
        for pos, var, target in y.targets:
            v = self.value(s.values[pos])
            if isinstance(var.type, TileType):
                v = self.move_into(v, var.type, target, s.span, var.name)
            elif isinstance(var.type, ArrayType):
                pass
            else:
                v = self.sc.coerce(v, var.type.dtype, self.loc(s.span))
            vals.append(v)
        if vals:
            self.emit(f"scf.yield {', '.join(v.name for v in vals)} : "
                      f"{', '.join(self._type_str(v) for v in vals)} {self.loc(s.span)}")
        elif y.kind == "while":
            self.emit(f"scf.yield {self.loc(s.span)}")

    def if_(self, s: IfStmt) -> None:
        loc = self.loc(s.span)
        cond = self.sc.coerce(self.scalar(s.cond, "cond"), BOOL, loc)
        rvs = [(pos, rv) for pos, rv in enumerate(s.return_vars) if not isinstance(rv.type, TensorType)]
        tensors = [(pos, rv) for pos, rv in enumerate(s.return_vars) if isinstance(rv.type, TensorType)]
        if s.return_vars and s.else_body is None:
            raise self.fail("an if with results needs an else branch", s.span)
        lhs, res = self._results(rvs[0][1].name if len(rvs) == 1 else "if", len(rvs))
        types = [tile_buf_type(rv.type) if isinstance(rv.type, TileType) else array_type_str(rv.type)
                 if isinstance(rv.type, ArrayType) else elem(rv.type.dtype) for _, rv in rvs]
        self.emit(f"{lhs}scf.if {cond.name}" + (f" -> ({', '.join(types)})" if rvs else "") + " {")
        y = _Yield("if", [(pos, rv, None) for pos, rv in rvs], tensors)
        self._region(s.then_body, y)
        if s.else_body is not None:
            self.emit("} else {")
            self._region(s.else_body, y)
        self.emit("} " + loc)
        for r, (_, rv) in zip(res, rvs):
            if isinstance(rv.type, TileType):
                self.env[rv] = TileVal(r, rv.type, tile_buf_type(rv.type))
            elif isinstance(rv.type, ArrayType):
                self.env[rv] = ArrayVal(r, rv.type, array_type_str(rv.type))
            else:
                self.env[rv] = Scalar(r, rv.type.dtype)

    def while_(self, s: WhileStmt) -> None:
        loc = self.loc(s.span)
        carried = self._carried(s.iter_args, s.return_vars)
        types = [self._type_str(c[3]) for c in carried]
        before = ["%" + self.names.fresh(ia.name) for _, ia, _, _ in carried]
        lhs, res = self._results("while", len(carried))
        self.emit(f"{lhs}scf.while ({', '.join(f'{n} = {c[3].name}' for n, c in zip(before, carried))}) : "
                  f"({', '.join(types)}) -> ({', '.join(types)}) {{")
        self.depth += 1
        for n, (_, ia, _, init) in zip(before, carried):
            self._bind(ia, n, init)
        cond = self.sc.coerce(self.scalar(s.cond, "cond"), BOOL, loc)
        self.emit(f"scf.condition({cond.name})" + (f" {', '.join(before)} : {', '.join(types)}" if carried else "")
                  + f" {loc}")
        self.depth -= 1
        self.emit("} do {")
        after = ["%" + self.names.fresh(ia.name) for _, ia, _, _ in carried]
        self.emit(f"^bb0({', '.join(f'{n}: {t}' for n, t in zip(after, types))}):")
        targets = []
        for n, (pos, ia, _, init) in zip(after, carried):
            self._bind(ia, n, init)
            targets.append((pos, ia, n))
        self._region(s.body, _Yield("while", targets, []))
        self.emit("} " + loc)
        for r, (_, _, rv, init) in zip(res, carried):
            self._bind(rv, r, init)
