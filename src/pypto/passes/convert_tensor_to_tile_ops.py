"""ConvertTensorToTileOps: tensor-level code inside InCore functions becomes tile code (SPEC §5).

Inside an InCore function a tensor value is either in DDR (a parameter, a slice of one, or the
result of storing into one) or has been computed on chip. The pass keeps a map from tensor Vars
to tiles and rewrites, in order:
- `tensor.slice(ddr, shape, offset)` → nothing yet: a *region* of DDR, loaded when first used;
- a compute op with a `tile_op` (`tensor.add` → `tile.add`, ...) → its operands are loaded
  (`tile.load` to Vec, or to Mat for cube ops) and the tile op is applied; scratch operands
  (reduction `tmp_tile`) are allocated with `tile.create`;
- `tensor.create` → `tile.create` (an on-chip buffer);
- `tensor.assemble(ddr, value, offset)` → `tile.store(value_tile, offset, ddr)`;
- an op with an `OpSpec.on_chip` lowering (the distributed transfers `pld.tensor.*`, which run on
  DDR tensors as they are) → the tile ops it gives, when one of its operands lives on chip.
Loop-carried tensors whose initial value lives on chip become loop-carried tiles.
The spans of the loads and stores it makes go to `ctx.records["tensor_transfers"]` (`TRANSFERS`): a
DDR transfer of tensor-level code, whose tile the user did not shape (perf hint PH001 says what to
change at the tensor level instead).
A scalar result (`tensor.read` → `tile.read`) keeps its variable, so types naming it (a partial
tile's `valid_shape`) stay valid; any variable re-created here (a carried value) is substituted in
every later use, types included. A tensor of dynamic shape cannot become a tile: the CompileError
spells out the static-size block loop to write instead (docs/language.md "Dynamic dimensions").

Each unit computes on its own memory: the cube unit reads its operands from Mat (InferTileMemorySpace
then moves them on into Left / Right / Bias), the vector unit reads Vec. A value computed on chip
by the other unit — a vector result for a cube op (an `OpSpec.operand_spaces` position of a "cube"
tile op), a matmul result (Acc) for a vector op ("vector" trait), or a matmul result for another
cube op — is moved there with `tile.move(t, target_memory=Mat | Vec)`: right after the op that
computes it (once, however many ops and loop iterations use it), or, for a loop-carried tile or an
if result, before its first such use in the block. In a mixed kernel a Vec → Mat / Acc → Vec move
is the cross-core transfer ExpandMixedKernel turns into a pipe (Language Guide "InCore Scopes").
A carried tile lives in one memory: when a loop's initial value and the value its body yields are
in different memories (or an if's branches yield tiles in different memories), the carried value
is kept in Vec, and the others are moved there (the initial value before the loop, a yielded value
at the end of its body or branch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.dtype import INDEX, DataType
from ..core.enums import FunctionType, MemorySpace, PadValue
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import Call, ConstBool, ConstFloat, ConstInt, Expr, GlobalVar, IterArg, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import (
    AssignStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    ScopeStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from ..ir.types import ScalarType, TensorType, TileType, Type
from ..ir.visitor import IRMutator, IRVisitor
from ..ops import get_op, has_op
from ..ops.memory import queried_dim
from ..ops.registry import OpSpec, Step
from ..ops.typing_rules import const_dims
from .base import FunctionPass, PassContext
from .op_builder import build_call, zeros_like_offsets

__all__ = ["ConvertTensorToTileOps", "SPECIAL_LOWERINGS", "TRANSFERS"]

TRANSFERS = "tensor_transfers"   # ctx.records key: spans of the DDR transfers made from tensor-level code

_INCORE = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


@dataclass(frozen=True)
class _Region:
    """A DDR region not yet loaded: `tensor[offset : offset + shape]`."""

    tensor: Expr
    offsets: tuple[Expr, ...]
    shape: tuple[Expr, ...]
    valid_shape: Expr | None = None  # a MakeTuple: only this leading part holds data
    pad: PadValue = PadValue.null  # `pad_value=` of the slice: fill the rest after loading


_VEC, _MAT = MemorySpace.Vec, MemorySpace.Mat
_CONSTANTS = frozenset({ConstInt, ConstFloat, ConstBool, GlobalVar})  # map to themselves in IRMutator
_Home = tuple[MemorySpace, tuple[MemorySpace, ...]]


def _space(t: object) -> MemorySpace | None:
    """The memory of a tile type (Vec when unset), None for other types."""
    return (t.memory_space or _VEC) if isinstance(t, TileType) else None


def _operand_home(tile: OpSpec, i: int) -> _Home | None:
    """Where tile op `tile` takes operand `i` computed on chip: (the memory to move it into, the
    memories it may stay in); None when the op takes it wherever it is (module docstring)."""
    if tile.has_trait("cube"):
        spaces = tile.operand_spaces.get(i)
        return (_MAT, (_MAT, *spaces)) if spaces else None
    if tile.has_trait("vector"):
        return (_VEC, (_VEC,))
    return None


class _Homes(IRVisitor):
    """Var -> the memories the tensor ops using it want it moved into (`_operand_home`)."""

    def __init__(self) -> None:
        self.homes: dict[Var, set[MemorySpace]] = {}

    def visit_Call(self, e: Call) -> None:
        super().visit_Call(e)
        spec = get_op(e.op) if isinstance(e.op, str) and e.op.startswith("tensor.") else None
        if spec is None or spec.tile_op is None:
            return
        tile = get_op(spec.tile_op)
        for i, a in enumerate(e.args):
            home = _operand_home(tile, i)
            if home is not None and isinstance(a, Var):
                self.homes.setdefault(a, set()).add(home[0])


def _dim_text(d: Expr) -> str:
    return str(d.value) if isinstance(d, ConstInt) else getattr(d, "name", "n")


def _dynamic_block_message(e: Expr, shape: tuple[Expr, ...]) -> str:
    """Why a tensor value of dynamic `shape` cannot become a tile, and the loop to write instead:
    static-size blocks along the first dynamic axis, the last one partial (`valid_shape`)."""
    axis = const_dims(shape).index(None)
    dim, name = _dim_text(shape[axis]), getattr(e, "name", "x")
    block = [("16" if k == axis else _dim_text(d)) for k, d in enumerate(shape)]
    offs = [("i" if k == axis else "0") for k in range(len(shape))]
    valid = [(f"pl.min(16, {dim} - i)" if k == axis else b) for k, b in enumerate(block)]
    return (f"'{name}' has the dynamic shape [{', '.join(_dim_text(d) for d in shape)}] here, but an InCore "
            f"function computes on tiles of compile-time shape: process a tensor with a dynamic "
            f"dimension in static-size blocks in a loop, e.g. `for i in pl.range(0, {dim}, 16):` with "
            f"`blk = pl.slice({name}, [{', '.join(block)}], [{', '.join(offs)}], "
            f"valid_shape=[{', '.join(valid)}])`, computing on `blk` and writing the result with "
            f"pl.assemble(out, result, [{', '.join(offs)}]) (docs/language.md, \"Dynamic dimensions\")")


class _Converter:
    def __init__(self, homes: dict[Var, set[MemorySpace]] | None = None) -> None:
        self.tiles: dict[Var, Expr] = {}  # tensor value computed on chip -> its tile
        # DDR value -> tile loaded from it; on-chip tile -> its copy moved into that memory
        self.loaded: dict[tuple[Var, MemorySpace], Expr] = {}
        self.moves: dict[Stmt, tuple[Expr, MemorySpace]] = {}  # every move made -> (source, memory)
        self.regions: dict[Var, _Region] = {}
        self.out: list[Stmt] = []
        self.counter = 0
        self.homes = homes or {}
        self.transfers: set[Span] = set()  # known spans of the tile.load / tile.store made here

    def made(self, span: Span) -> None:
        """A load or store was made at `span` (an unknown span names no one place: not kept)."""
        if span is not None and span.is_known():
            self.transfers.add(span)

    def renames(self) -> dict[Var, Expr]:
        """The renamed values (re-created iter args and results): same kind of type on both sides."""
        return {k: v for k, v in self.tiles.items() if type(k.type) is type(v.type)}

    def sub(self, e: Expr) -> Expr:
        """Rewrite uses of renamed vars (re-created iter args and results); tensor values that now
        live in tiles are left alone (operands go through `as_tile`)."""
        k = type(e)
        if k is Var or k is IterArg:  # what IRMutator(self.renames()) does to a Var, without the map
            t = self.tiles.get(e)  # type: ignore[arg-type]
            return t if t is not None and type(e.type) is type(t.type) else e
        if k in _CONSTANTS:
            return e
        return IRMutator(self.renames()).visit_expr(e)  # renames, not tensor→tile

    def emit_assign(self, name: str, call: Call, span) -> Var:  # type: ignore[no-untyped-def]
        v = Var(name, call.type, span=span)
        self.out.append(AssignStmt(v, call, span=span))
        return v

    def on_chip(self, e: Expr) -> Expr | None:
        """The tile holding tensor value `e` if it was computed on chip (not a DDR tensor)."""
        t = self.tiles.get(e) if isinstance(e, Var) and isinstance(e.type, TensorType) else None
        return t if t is not None and isinstance(t.type, TileType) else None

    def as_tile(self, e: Expr, span, space: MemorySpace = MemorySpace.Vec) -> Expr:  # type: ignore[no-untyped-def]
        """The tile holding tensor value `e`, loading it from DDR if needed."""
        if isinstance(e.type, TileType):
            return self.sub(e)
        t = self.on_chip(e)
        if t is not None:
            return t
        if isinstance(e, Var) and (e, space) in self.loaded:
            return self.loaded[(e, space)]  # type: ignore[index]
        region = self.regions.get(e) if isinstance(e, Var) else None
        if region is None:
            if not isinstance(e.type, TensorType):
                return e
            region = _Region(self.sub(e), zeros_like_offsets(e.type), tuple(e.type.shape))
        if None in const_dims(region.shape):
            raise CompileError(_dynamic_block_message(e, region.shape), span)
        load_args = [region.tensor, MakeTuple(region.offsets), MakeTuple(region.shape)]
        if region.valid_shape is not None:  # a partial slice stays a partial tile
            load_args.append(region.valid_shape)
        call = build_call("tile.load", load_args, {"target_memory": space}, span)
        self.made(span)
        name = f"{e.name}_tile" if isinstance(e, Var) else "t"
        t = self.emit_assign(name, call, span)
        if region.pad is not PadValue.null:
            t = self.emit_assign(f"{name}_padded", build_call("tile.fillpad", [t], {"pad_value": region.pad}, span),
                                 span)
        if isinstance(e, Var):
            self.loaded[(e, space)] = t  # type: ignore[index]
        return t

    def move(self, t: Expr, space: MemorySpace, span: Span) -> Var:
        """A copy of tile `t` in `space`."""
        call = build_call("tile.move", [t], {"target_memory": space}, span)
        v = self.emit_assign(f"{getattr(t, 'name', 't')}_{space.name.lower()}", call, span)
        self.moves[self.out[-1]] = (t, space)
        return v

    def placed(self, t: Expr, home: _Home, span: Span) -> Expr:
        """Tile `t` for an op that takes it in one of the memories `home[1]`: `t` itself when it
        is there, else its copy in `home[0]` (made here unless this block already has one)."""
        space, accept = home
        if not isinstance(t.type, TileType) or _space(t.type) in accept:
            return t
        key = (t, space)
        if isinstance(t, Var) and key in self.loaded:
            return self.loaded[key]  # type: ignore[index]
        copy = self.move(t, space, span)
        if isinstance(t, Var):
            self.loaded[key] = copy  # type: ignore[index]
        return copy

    def cast_to(self, e: Expr, dtype: DataType, span: Span) -> Expr:
        """`e` converted to `dtype` when it is a tile of another dtype (tensor ops promote dtypes,
        tile ops need equal ones), on the vector unit (a matmul result is moved to Vec first)."""
        t = e.type
        if not isinstance(t, TileType) or t.dtype is dtype:
            return e
        if _space(t) is not _VEC:
            e = self.move(e, _VEC, span)
        call = build_call("tile.cast", [e], {"target_type": dtype}, span)
        return self.emit_assign(f"{getattr(e, 'name', 't')}_{dtype}", call, span)

    def broadcast(self, operands: list[Expr], result: TensorType, span: Span) -> list[Expr]:
        """Tile operands of a broadcasting tensor op, expanded to the result's shape (NumPy-style
        broadcasting of tensor ops; tile ops need equal shapes)."""
        from ..ops.broadcast import expand_op_for

        dst = const_dims(tuple(result.shape))
        tiles = [o for o in operands if isinstance(o.type, TileType)]
        if all(const_dims(tuple(o.type.shape)) == dst for o in tiles):  # type: ignore[attr-defined]
            return operands
        template = next((o for o in tiles if const_dims(tuple(o.type.shape)) == dst), None)  # type: ignore[attr-defined]
        if template is None:
            make = build_call("tile.create", [MakeTuple(tuple(result.shape))],
                              {"dtype": result.dtype, "target_memory": MemorySpace.Vec}, span)
            template = self.emit_assign("bcast", make, span)
        out = []
        for o in operands:
            if isinstance(o.type, TileType) and const_dims(tuple(o.type.shape)) != dst:
                try:
                    op = expand_op_for(const_dims(tuple(o.type.shape)), dst)
                except ValueError as e:
                    raise CompileError(f"cannot broadcast inside an InCore function: {e}", span) from None
                o = self.emit_assign(f"{getattr(o, 'name', 't')}_bcast", build_call(op, [template, o], {}, span), span)  # type: ignore[arg-type]
            out.append(o)
        return out

    def block(self, s: SeqStmts) -> SeqStmts:
        saved, saved_loaded = self.out, dict(self.loaded)
        self.out = []
        for st in s.stmts:
            self.stmt(st)
        res = SeqStmts(tuple(self.out), span=s.span)
        self.out, self.loaded = saved, saved_loaded  # loads made in a block stay in it
        return res

    def if_(self, s: IfStmt) -> None:
        """Branches yielding a tile in some position yield tiles there in every branch (DDR
        values are loaded at the end of their branch), all in one memory (Vec unless they agree);
        the return var becomes a tile."""
        branches = [self.block(b) for b in (s.then_body, s.else_body) if b is not None]
        rvs = list(s.return_vars)
        if rvs and len(branches) == 2:
            want: list[TileType | None] = []
            for i, rv in enumerate(rvs):
                vals = [b.stmts[-1].values[i] for b in branches]  # type: ignore[attr-defined]
                tiles = [v.type for v in vals if isinstance(v.type, TileType)]
                if not tiles:
                    want.append(None)
                    continue
                one = len(tiles) == len(vals) and len({_space(t) for t in tiles}) == 1
                want.append(tiles[0] if one else replace(tiles[0], memory_space=_VEC))
                nrv = Var(rv.name, want[-1], span=rv.span)
                self.tiles[rv] = nrv
                rvs[i] = nrv
            branches = [self.conform_yield(b, want) for b in branches]
        self.out.append(replace(s, cond=self.sub(s.cond), then_body=branches[0],
                                else_body=branches[1] if len(branches) > 1 else None,
                                return_vars=tuple(rvs)))

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and isinstance(s.value.op, str) \
                and s.value.op.startswith("tensor."):
            self.tensor_op(s.var, s.value, s)
        elif self.on_chip_call(s) is not None:
            self.lower_on_chip(s, self.on_chip_call(s))  # type: ignore[arg-type]
        elif isinstance(s, (ReturnStmt, YieldStmt)):
            self.out.append(replace(s, values=tuple(self.value_out(v, s) for v in s.values)))
        elif isinstance(s, AssignStmt) and isinstance(s.value, Var) and self.on_chip(s.value) is not None:
            self.tiles[s.var] = self.on_chip(s.value)  # `y = x` of an on-chip value: y is that tile too
        elif isinstance(s, ForStmt | WhileStmt):
            self.loop(s)
        elif isinstance(s, IfStmt):
            self.if_(s)
        elif isinstance(s, ScopeStmt):
            self.out.append(replace(s, body=self.block(s.body)))
        else:
            self.out.append(self.rewrite(s))

    def rewrite(self, s: Stmt) -> Stmt:
        """`s` with renamed and converted values substituted. A variable it binds whose type names
        a renamed value (a `valid_shape` or dimension computed in this kernel) is re-typed, and the
        new variable is recorded so that every later use follows."""
        m = IRMutator(dict(self.tiles))
        out = m.visit_stmt(s)
        for old, new in m.var_map.items():
            self.tiles.setdefault(old, new)
        return out

    def sub_type(self, t: Type) -> Type:
        """Type `t` with renamed values substituted in its dimensions and valid shape."""
        return IRMutator(self.renames()).visit_type(t)

    def value_out(self, v: Expr, s: Stmt) -> Expr:
        """A value leaving a loop body / if branch / function."""
        t = self.on_chip(v)
        if t is not None:
            if isinstance(s, ReturnStmt):
                raise CompileError(f"InCore function returns tensor '{v.name}' computed on chip without "  # type: ignore[attr-defined]
                                   f"storing it; write it into an Out tensor with pl.store / pl.assemble",
                                   s.span)
            return t
        return self.sub(v)

    def loop(self, s: ForStmt | WhileStmt, on_chip: frozenset[int] = frozenset(),
             in_vec: frozenset[int] = frozenset()) -> None:
        """Convert a loop. A carried tensor becomes a carried tile when its initial value is on
        chip, or (positions in `on_chip`) when the body yields an on-chip value for it: then the
        initial DDR value is loaded before the loop. An initial tile outside Vec whose body yields
        another memory's value (positions in `in_vec`) is moved to Vec before the loop. The body is
        converted again if it turns out that a position needs this."""
        saved_out, saved_loaded = self.out, dict(self.loaded)
        self.out = pre = []
        new_ias: list[IterArg] = []
        rv_map: list[tuple[Var, Var | None]] = []
        for i, (ia, rv) in enumerate(zip(s.iter_args, s.return_vars)):
            init = ia.init
            t = self.on_chip(init) if init is not None else None
            if t is None and i in on_chip and init is not None:
                t = self.as_tile(init, s.span)
            if t is not None and i in in_vec:
                t = self.placed(t, (_VEC, (_VEC,)), s.span)
            if t is not None:
                nia = IterArg(ia.name, t.type, init=t, span=ia.span)
                self.tiles[ia] = nia
                nrv = Var(rv.name, t.type, span=rv.span)
                self.tiles[rv] = nrv
                rv_map.append((rv, nrv))
            else:
                new_init, new_type = self.sub(init) if init is not None else None, self.sub_type(ia.type)
                nia = ia
                if new_init is not init or new_type is not ia.type:
                    nia = IterArg(ia.name, new_type, init=new_init, span=ia.span)
                    self.tiles[ia] = nia
                nrv = Var(rv.name, new_type, span=rv.span) if new_type is not ia.type else None
                if nrv is not None:
                    self.tiles[rv] = nrv
                rv_map.append((rv, nrv))
            new_ias.append(nia)
        self.out = saved_out
        body = self.block(s.body)
        last = body.stmts[-1] if body.stmts else None
        if isinstance(last, YieldStmt):
            need = {i for i, (ia, v) in enumerate(zip(new_ias, last.values))
                    if isinstance(v.type, TileType) and not isinstance(ia.type, TileType)}
            to_vec = {i for i, (ia, v) in enumerate(zip(new_ias, last.values))
                      if _space(ia.type) not in (None, _VEC) and _space(v.type) is not _space(ia.type)}
            if need - on_chip or to_vec - in_vec:
                self.loaded = saved_loaded  # loads of the discarded attempt are gone
                self.loop(s, on_chip | frozenset(need), in_vec | frozenset(to_vec))
                return
            body = self.conform_yield(body, [ia.type if isinstance(ia.type, TileType) else None
                                             for ia in new_ias])
        self.out.extend(pre)
        rvs = tuple(n if n is not None else o for o, n in rv_map)
        if isinstance(s, ForStmt):
            self.out.append(replace(s, start=self.sub(s.start), stop=self.sub(s.stop), step=self.sub(s.step),
                                    iter_args=tuple(new_ias), body=body, return_vars=rvs))
        else:
            cond = IRMutator(dict(self.tiles)).visit_expr(s.cond)
            self.out.append(replace(s, cond=cond, iter_args=tuple(new_ias), body=body, return_vars=rvs))

    def conform_yield(self, body: SeqStmts, want: list[TileType | None]) -> SeqStmts:
        """`body` whose final yield gives a tile in the memory of `want[i]` wherever that is a tile
        type: DDR values are loaded (into Vec), tiles elsewhere moved there, at the end of the body."""
        y = body.stmts[-1]
        vals = list(y.values)  # type: ignore[attr-defined]
        todo = [i for i, (w, v) in enumerate(zip(want, vals))
                if w is not None and (isinstance(v.type, TensorType) or _space(v.type) is not _space(w))]
        if not todo:
            return body
        saved, saved_loaded, self.out = self.out, dict(self.loaded), list(body.stmts[:-1])
        for st in body.stmts:  # copies the body made where it computed a value are reused
            if st in self.moves:
                self.loaded[self.moves[st]] = st.var  # type: ignore[index, attr-defined]
        for i in todo:
            v = self.as_tile(vals[i], y.span)
            space = _space(want[i])
            vals[i] = self.placed(v, (space, (space,)), y.span)  # type: ignore[arg-type]
        stmts = tuple(self.out) + (replace(y, values=tuple(vals)),)
        self.out, self.loaded = saved, saved_loaded  # these loads live inside the body only
        return replace(body, stmts=stmts)

    # ---- tensor ops with an OpSpec.lowering (not a one-to-one tile_op rewrite) ----------------
    def _lower_region(self, var: Var, args: list[Expr], call: Call, span: Span) -> None:
        """A DDR view (`tensor.slice`): remembered as a region, loaded when first used."""
        src = args[0]
        if isinstance(src, Var) and src in self.regions:
            raise CompileError("slicing a slice inside an InCore function is not supported yet", span)
        valid = args[3] if len(args) > 3 and isinstance(args[3], MakeTuple) else None
        tile = self.on_chip(src)
        if tile is not None:   # a value computed here: a view of its tile (`tile.slice`)
            sargs = [tile, self.sub(args[1]), self.sub(args[2])] + ([self.sub(valid)] if valid is not None else [])
            self.tiles[var] = self.emit_assign(f"{var.name}_tile", build_call("tile.slice", sargs, {}, span), span)
            return
        self.regions[var] = _Region(self.sub(src), tuple(self.sub(o) for o in args[2].elements),  # type: ignore[attr-defined]
                                    tuple(self.sub(d) for d in args[1].elements),  # type: ignore[attr-defined]
                                    self.sub(valid) if valid is not None else None,
                                    dict(call.kwargs).get("pad_value", PadValue.null))

    def _lower_store(self, var: Var, args: list[Expr], call: Call, span: Span) -> None:
        """An in-place write of a DDR tensor (`tensor.assemble`): `tile.store` of the value."""
        target, value, offsets = args
        if self.on_chip(target) is not None:
            raise CompileError("assembling into an on-chip tensor inside an InCore function is not "
                               "supported; assemble into a DDR (parameter) tensor", span)
        tile = self.as_tile(value, span)
        stored = build_call("tile.store", [tile, self.sub(offsets), self.sub(target)], {}, span)
        self.made(span)
        self.out.append(AssignStmt(var, stored, span=span))

    def _lower_zero_fill(self, var: Var, args: list[Expr], call: Call, span: Span) -> None:
        """A new tensor (`tensor.create`): a zero-filled Vec tile (the host zero-fills tensors)."""
        dt = call.type.dtype  # type: ignore[attr-defined]
        zero = ConstFloat(0.0, dt) if dt.is_float() else ConstInt(0, dt)
        fill = build_call("tile.full", [self.sub(args[0]), zero], {"dtype": dt, "target_memory": MemorySpace.Vec}, span)
        self.tiles[var] = self.emit_assign(f"{var.name}_tile", fill, span)

    def _lower_shape(self, var: Var, args: list[Expr], call: Call, span: Span) -> None:
        """A dimension query (`tensor.dim`): the dimension itself — a constant, or the kernel's
        dynamic-dimension variable (bound from the argument's shape) — as the scalar's value."""
        dim = queried_dim(args, dict(call.kwargs))
        if isinstance(dim, ConstInt):
            value: Expr = ConstInt(dim.value, var.type.dtype)  # type: ignore[attr-defined]
        elif isinstance(dim, Var):
            value = dim
        else:
            raise CompileError(f"pl.dim of axis {dict(call.kwargs).get('axis', 0)} of a "
                               f"{len(args[0].type.shape)}-D tensor inside an InCore function", span)  # type: ignore[attr-defined]
        self.out.append(AssignStmt(var, value, span=span))

    def on_chip_call(self, s: Stmt) -> Call | None:
        """The call of `s` when it is an op with an `OnChip` lowering one of whose operands lives on
        chip (or is a slice region); None otherwise (it then runs as it is, on DDR tensors)."""
        call = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
        if not (isinstance(call, Call) and isinstance(call.op, str) and has_op(call.op)):
            return None
        lowering = get_op(call.op).on_chip
        if lowering is None:
            return None
        args = call.args
        hit = any(i < len(args) and (self.on_chip(args[i]) is not None or args[i] in self.regions)
                  for i in lowering.args)
        return call if hit else None

    def lower_on_chip(self, s: AssignStmt | EvalStmt, call: Call) -> None:
        """`s` replaced by the tile ops of its op's `OnChip` lowering (see `pypto.ops.registry`)."""
        lowering, span = get_op(call.op).on_chip, s.span  # type: ignore[arg-type]
        operands = [self.as_tile(a, span) if i in lowering.args and (self.on_chip(a) is not None  # type: ignore[union-attr]
                                                                     or a in self.regions) else self.sub(a)
                    for i, a in enumerate(call.args)]
        results: list[Expr] = []
        name = f"{s.var.name}_tile" if isinstance(s, AssignStmt) else "t"
        for op, raw, attrs in lowering.steps(operands, dict(call.kwargs)):  # type: ignore[union-attr]
            c = build_call(op, [self._step_operand(x, results) for x in raw], attrs, span)
            if isinstance(c.type, TileType):
                results.append(self.emit_assign(name, c, span))
            else:
                self.out.append(EvalStmt(c, span=span))
                results.append(c)
        if isinstance(s, AssignStmt) and results and isinstance(results[-1].type, TileType):
            self.tiles[s.var] = results[-1]

    @staticmethod
    def _step_operand(x: object, results: list[Expr]) -> Expr:
        if isinstance(x, Step):
            return results[x.index]
        if isinstance(x, (list, tuple)):
            return MakeTuple(tuple(_Converter._step_operand(e, results) for e in x))
        if isinstance(x, int):
            return ConstInt(x, INDEX)
        return x  # type: ignore[return-value]

    _LOWERINGS: dict[str, Callable[..., None]] = {
        "region": _lower_region, "store": _lower_store, "zero_fill": _lower_zero_fill, "shape": _lower_shape,
    }

    def tensor_op(self, var: Var, call: Call, s: AssignStmt) -> None:
        spec = get_op(call.op)  # type: ignore[arg-type]
        span = s.span
        args = list(call.args)
        lower = self._LOWERINGS.get(spec.lowering)
        if lower is not None:
            lower(self, var, args, call, span)
            return
        if spec.tile_op is None and isinstance(call.type, ScalarType):
            # a scalar result (tensor.read, tensor.dim) is computed by the core's scalar unit
            self.out.append(AssignStmt(var, IRMutator(self.renames()).visit_expr(call), span=span))
            return
        if spec.tile_op is None:
            raise CompileError(f"op '{call.op}' has no tile-level form and cannot run inside an InCore "
                               f"function", span)
        tile_spec = get_op(spec.tile_op)
        space = _MAT if tile_spec.has_trait("cube") else _VEC
        operands: list[Expr] = []
        for i, a in enumerate(args):
            if isinstance(a.type, TensorType) or (self.on_chip(a) is not None or a in self.regions):
                t = self.as_tile(a, span, space)
                home = _operand_home(tile_spec, i)
                operands.append(self.placed(t, home, span) if home is not None else t)
            else:
                operands.append(self.sub(a))
        attrs = dict(call.kwargs)
        for i in tile_spec.scratch:
            t0 = operands[0].type
            tmp = build_call("tile.create", [MakeTuple(tuple(t0.shape))],  # type: ignore[attr-defined]
                             {"dtype": t0.dtype, "target_memory": t0.memory_space or MemorySpace.Vec}, span)  # type: ignore[attr-defined]
            operands.insert(i, self.emit_assign(f"{var.name}_tmp", tmp, span))
        if spec.has_trait("elementwise") and isinstance(call.type, TensorType):
            operands = [self.cast_to(o, call.type.dtype, span) for o in operands]
        tile_attrs = {k: v for k, v in attrs.items() if k in tile_spec.attrs}
        try:
            tcall = build_call(spec.tile_op, operands, tile_attrs, span)
        except CompileError:
            if not (spec.has_trait("elementwise") and isinstance(call.type, TensorType)):
                raise
            # the tensor op broadcast its operands (NumPy-style); the tile op needs equal shapes
            tcall = build_call(spec.tile_op, self.broadcast(operands, call.type, span), tile_attrs, span)
        if isinstance(var.type, ScalarType) and isinstance(tcall.type, ScalarType) \
                and tcall.type.dtype is var.type.dtype:
            # a scalar (tensor.read -> tile.read) keeps its variable: types naming it stay valid
            self.out.append(AssignStmt(var, tcall, span=span))
            return
        result = self.emit_assign(f"{var.name}_tile", tcall, span)
        if isinstance(call.type, TensorType):  # e.g. matmul(out_dtype=FP16): the tile op gives FP32
            result = self.cast_to(result, call.type.dtype, span)  # type: ignore[assignment]
        self.tiles[var] = result
        for home in sorted(self.homes.get(var, ()), key=lambda m: m.name):  # moved once, right here
            self.placed(result, (home, (home,)), span)


# The `OpSpec.lowering` values lowered by a rule of their own (the others: by their `tile_op`).
SPECIAL_LOWERINGS = frozenset(_Converter._LOWERINGS)


class ConvertTensorToTileOps(FunctionPass):
    name = "ConvertTensorToTileOps"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type not in _INCORE:
            return func
        homes = _Homes()
        homes.visit_stmt(func.body)
        conv = _Converter(homes.homes)
        body = conv.block(func.body)
        ctx.records.setdefault(TRANSFERS, set()).update(conv.transfers)
        return replace(func, body=body)
