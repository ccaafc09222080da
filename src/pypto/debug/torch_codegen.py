"""`torch_codegen(node)`: a standalone PyTorch script computing what a PyPTO program computes
(User Manual "Torch Codegen Debug Guide"; SPEC §2 `from pypto.debug import torch_codegen`).

Works at any pass stage: tensor-level programs (before outlining), outlined InCore functions,
tile-level kernels with memory planning (MemRefs are ignored: the script is the *meaning* of the
program, not its memory layout — which is what makes it a reference for the address-faithful
simulator). The script imports only `torch` and `math`; the helpers it needs are pasted from
`torch_prelude`, and every op becomes one expression from its `torch_ops` template.

Script layout: the prelude (plus `torch_cluster` when the program has Group functions or pipe
ops, and `torch_dist` when it uses `pld.*` ops: they reach other ranks through the running rank's
Comm, so such a script runs inside a distributed run); one Python function per IR function (same names); `ENTRY` (the entry function), `OUTPUTS`
(indices of its Out/InOut parameters) and `run(*args)`; and a `__main__` block that runs the entry
on random inputs and prints a checksum of each output.

Semantics, matching the simulator:
- tiles are values: each tile assignment makes a fresh tensor of the declared dtype and shape;
- DDR tensors are passed by reference: `store` / `assemble` / `write` update them in place;
- a kernel (InCore / AIC / AIV) call evaluates to its Out/InOut arguments (one, or a tuple), any
  other function call to its returned values;
- loops, ifs and while loops carry values explicitly (`iter_args` / `yield_` / return vars);
- variables are named by their printed names, so the script means what the printed IR means;
- scalars use Python arithmetic (no fixed-width wrap-around);
- mixed kernels (after ExpandMixedKernel, or written by hand): a Group function collects its kernel
  calls and runs them together on one simulated cluster before it returns — the AIC kernel once,
  the AIV kernel once per vector core (subblocks 0 and 1 under `pl.split`), interleaved on FIFO
  pipe rings of the group's depth; kernels with pipe ops are Python generators that pause while a
  ring is full or empty, and a deadlock raises RuntimeError naming every waiting kernel and the line
  of its pipe op (`torch_cluster`, `torch_plan`).

Every registered op has a template; `NotImplementedError` is raised only for a dtype without a
torch equivalent, a construct the script cannot express, or an op in `torch_ops.UNSUPPORTED`.
"""

from __future__ import annotations

import inspect
import keyword
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core import packed
from ..core.dtype import DataType
from ..core.enums import FunctionType, ParamDirection, ScopeKind
from ..core.errors import ArgumentTypeError, ArgumentValueError, user_call_span, user_facing
from ..ir import expr as ex
from ..ir import stmt as st
from ..ir.function import Function, Program
from ..ir.types import ScalarType, TensorType, TileType
from ..ops.registry import get_op, has_op
from . import torch_cluster, torch_dist, torch_prelude
from .torch_ops import UNSUPPORTED, template_for
from .torch_plan import KERNEL_TYPES, ScriptPlan, plan_script

__all__ = ["torch_codegen"]

_OUT = (ParamDirection.Out, ParamDirection.InOut)
_RESERVED = frozenset({"torch", "math", "range", "min", "max", "abs", "int", "float", "bool", "tuple",
                       "list", "len", "print", "run", "ENTRY", "OUTPUTS", "BLOCK", "main_inputs",
                       "encode", "decode", "quantize", "PACKED", "FP4_VALUES"})
_BINARY = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "truediv": "/",
           "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "and": "and", "or": "or", "bit_and": "&", "bit_or": "|", "bit_xor": "^", "shl": "<<",
           "shr": ">>"}


def _torch_dtype(dt: DataType) -> str:
    """The torch dtype holding `dt`'s values in the script (packed 4-bit types unpacked)."""
    tdt = dt.value_torch()
    if tdt is None:
        raise NotImplementedError(f"dtype {dt.name} has no torch equivalent")
    return str(tdt)


def _value(v: Any) -> str:
    """A Python literal for an attribute value (a packed dtype by name: `_cast` rounds to it)."""
    if isinstance(v, DataType):
        return repr(v.name) if v.is_packed() else _torch_dtype(v)
    if hasattr(v, "name") and hasattr(type(v), "__members__"):   # enums: by name
        return repr(v.name)
    if isinstance(v, tuple):
        return "(" + "".join(f"{_value(x)}, " for x in v) + ")"
    return repr(v)


class _FunctionEmitter:
    """Emits one IR function as one Python function."""

    def __init__(self, func: Function, program: Program, names: dict[str, str], plan: ScriptPlan) -> None:
        self.func, self.program, self.fnames, self.plan = func, program, names, plan
        self.lines: list[str] = []
        self.names: dict[str, str] = {}
        self.targets: list[tuple[ex.Var, ...]] = []
        self.is_kernel = func.func_type in KERNEL_TYPES
        self.group = plan.groups.get(func.name) if func.func_type is FunctionType.Group else None

    # ---- names and expressions ---------------------------------------------------------------
    def name(self, v: ex.Var) -> str:
        hint = v.name
        n = self.names.get(hint)
        if n is None:
            base = re.sub(r"\W", "_", hint) or "v"
            if base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED or base.startswith("_") \
                    or base in self.fnames.values():
                base = f"v_{base}"
            n = self.names[hint] = base
        return n

    def expr(self, e: ex.Expr) -> str:
        if isinstance(e, ex.Var):
            return self.name(e)
        if isinstance(e, ex.ConstBool):
            return repr(bool(e.value))
        if isinstance(e, ex.ConstInt):
            return repr(int(e.value))
        if isinstance(e, ex.ConstFloat):
            return repr(float(e.value))
        if isinstance(e, ex.MakeTuple):
            return "(" + "".join(f"{self.expr(x)}, " for x in e.elements) + ")"
        if isinstance(e, ex.TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, ex.BinaryExpr):
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            if e.op in ("min", "max"):
                return f"{e.op}({a}, {b})"
            if e.op not in _BINARY:
                raise NotImplementedError(f"scalar operator {e.op!r}")
            return f"({a} {_BINARY[e.op]} {b})"
        if isinstance(e, ex.UnaryExpr):
            x = self.expr(e.operand)
            if e.op == "cast":
                conv = "bool" if e.dtype.is_bool() else ("float" if e.dtype.is_float() else "int")
                return f"{conv}({x})"
            return {"neg": f"(-{x})", "not": f"(not {x})", "bit_not": f"(~{x})", "abs": f"abs({x})"}[e.op]
        if isinstance(e, ex.Call):
            return self.call(e)
        raise NotImplementedError(f"torch_codegen cannot express a {type(e).__name__}")

    def call(self, c: ex.Call) -> str:
        if isinstance(c.op, ex.GlobalVar):
            return self.call_function(c)
        if not has_op(c.op):
            raise NotImplementedError(f"torch_codegen: unknown op {c.op!r}")
        spec = get_op(c.op)
        if spec.name in UNSUPPORTED:
            raise NotImplementedError(f"torch_codegen cannot express op '{spec.name}': {UNSUPPORTED[spec.name]}")
        tmpl = template_for(spec.name)
        if tmpl is None:
            raise NotImplementedError(f"torch_codegen has no PyTorch template for op '{spec.name}' "
                                      f"(add one to pypto.debug.torch_ops.TEMPLATES)")
        args = [self.expr(a) for a in c.args] + ["None"] * (len(spec.params) - len(c.args))
        attrs = {k: _value(v) for k, v in {**spec.attrs, **dict(c.kwargs)}.items()}
        where = repr(str(c.span)) if c.span.is_known() else "None"
        return tmpl.format(*args, valid=self.valid(c, spec.valid_args), where=where, **attrs)

    def call_function(self, c: ex.Call) -> str:
        """A call of another function of the program: plain, resumed (`yield from`) when the callee
        is a generator, or collected by the Group runner when this is a Group function."""
        name = c.op.name  # type: ignore[union-attr]
        callee = self.program.get_function(name)
        if callee is None:
            raise NotImplementedError(f"call of function '{name}', which program '{self.program.name}' "
                                      f"does not define")
        fn, args = self.fnames[name], "".join(f"{self.expr(a)}, " for a in c.args)
        if c.attr("submit"):  # pl.submit: the outputs, then the TaskId (orders nothing here: None)
            plain = replace(c, kwargs=())
            call = self.call_function(plain) if c.attr("core_num") is None else \
                f"_spmd_call({c.attr('core_num')}, {fn}, {args})"
            return f"({call}, None)" if len(callee.return_types) == 1 else f"(*{call}, None)"
        if self.group is not None and callee.func_type in KERNEL_TYPES:
            writes = tuple(i for i, d in enumerate(callee.param_directions) if d in _OUT)
            return f"_g.call({name!r}, {self.plan.cores[name]!r}, {fn}, ({args}), {writes})"
        if name in self.plan.generators:
            if self.func.name in self.plan.generators:
                return f"(yield from {fn}({args}))"
            return f"_alone({fn}({args}))"
        return f"{fn}({args})"

    def valid(self, c: ex.Call, idx: tuple[int, ...]) -> str:
        if not idx:
            return "None"
        parts = []
        for i in idx:
            view = getattr(c.args[i].type, "view", None) if i < len(c.args) else None
            vs = getattr(view, "valid_shape", None)
            parts.append("None" if vs is None else "(" + "".join(f"{self.expr(d)}, " for d in vs) + ")")
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    # ---- statements ----------------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def value_of(self, var: ex.Var, code: str) -> str:
        t = var.type
        if isinstance(t, TileType) and t.dtype.value_torch() is not None:
            try:
                shape = tuple(d.value for d in t.shape)  # type: ignore[attr-defined]
            except AttributeError:
                return f"_as({code}, {_torch_dtype(t.dtype)})"
            return f"_tile({code}, {_torch_dtype(t.dtype)}, {shape})"
        if isinstance(t, TensorType) and t.dtype.value_torch() is not None:
            return f"_as({code}, {_torch_dtype(t.dtype)})"
        return code

    def assign(self, depth: int, dsts: tuple[ex.Var, ...], srcs: tuple[ex.Expr, ...]) -> None:
        if not dsts:
            return
        lhs = ", ".join(self.name(v) for v in dsts)
        rhs = ", ".join(self.expr(s) for s in srcs)
        self.emit(depth, f"{lhs} = {rhs}" + ("," if len(dsts) == 1 and len(srcs) > 1 else ""))

    def outs(self) -> str:
        outs = [self.name(p) for p, d in zip(self.func.params, self.func.param_directions) if d in _OUT]
        return "None" if not outs else (outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")")

    def block(self, depth: int, s: st.Stmt | None) -> None:
        n = len(self.lines)
        stmts = s.stmts if isinstance(s, st.SeqStmts) else (() if s is None else (s,))
        for x in stmts:
            self.stmt(depth, x)
        if len(self.lines) == n:
            self.emit(depth, "pass")

    def stmt(self, d: int, s: st.Stmt) -> None:
        if isinstance(s, st.AssignStmt):
            self.emit(d, f"{self.name(s.var)} = {self.value_of(s.var, self.expr(s.value))}")
        elif isinstance(s, st.EvalStmt):
            self.emit(d, self.expr(s.expr))
        elif isinstance(s, st.ReturnStmt):
            if self.group is not None:
                self.emit(d, "_g.run()")
            if self.is_kernel:
                self.emit(d, f"return {self.outs()}")
            else:
                vals = [self.expr(v) for v in s.values]
                self.emit(d, "return " + ("None" if not vals else vals[0] if len(vals) == 1
                                          else "(" + ", ".join(vals) + ")"))
        elif isinstance(s, st.SeqStmts):
            self.block(d, s)
        elif isinstance(s, st.ScopeStmt) and s.kind is ScopeKind.Spmd:
            bv = self.name(s.block_var) if s.block_var is not None else "_"
            self.emit(d, f"for {bv} in _blocks({s.attr('core_num')}):  # pl.spmd: the body once per block")
            self.block(d + 1, s.body)
        elif isinstance(s, st.ScopeStmt):
            self.emit(d, f"# {s.kind.name} scope")
            self.block(d, s.body)
        elif isinstance(s, st.YieldStmt):
            if not self.targets:
                raise NotImplementedError("yield outside a loop or an if with return values")
            self.assign(d, self.targets[-1], s.values)
        elif isinstance(s, st.BreakStmt):
            self.emit(d, "break")
        elif isinstance(s, st.ContinueStmt):
            self.emit(d, "continue")
        elif isinstance(s, st.ForStmt):
            self.assign(d, s.iter_args, tuple(ia.init for ia in s.iter_args))  # type: ignore[misc]
            self.emit(d, f"for {self.name(s.loop_var)} in range({self.expr(s.start)}, {self.expr(s.stop)}, "
                         f"{self.expr(s.step)}):")
            self.loop_body(d, s.body, s.iter_args)
            self.assign(d, s.return_vars, s.iter_args)
        elif isinstance(s, st.WhileStmt):
            self.assign(d, s.iter_args, tuple(ia.init for ia in s.iter_args))  # type: ignore[misc]
            self.emit(d, f"while {self.expr(s.cond)}:")
            self.loop_body(d, s.body, s.iter_args)
            self.assign(d, s.return_vars, s.iter_args)
        elif isinstance(s, st.IfStmt):
            self.emit(d, f"if {self.expr(s.cond)}:")
            self.targets.append(tuple(s.return_vars))
            try:
                self.block(d + 1, s.then_body)
                if s.else_body is not None:
                    self.emit(d, "else:")
                    self.block(d + 1, s.else_body)
            finally:
                self.targets.pop()
        else:
            raise NotImplementedError(f"torch_codegen cannot express a {type(s).__name__}")

    def loop_body(self, d: int, body: st.SeqStmts, iter_args: tuple[ex.Var, ...]) -> None:
        self.targets.append(tuple(iter_args))
        try:
            self.block(d + 1, body)
        finally:
            self.targets.pop()

    def function(self) -> list[str]:
        f = self.func
        params = ", ".join(self.name(p) for p in f.params)
        self.emit(0, f"def {self.fnames[f.name]}({params}):")
        self.emit(1, f'"""{f.func_type.name} function \'{f.name}\' of program \'{self.program.name}\'."""')
        bound: set[str] = set()
        for p in f.params:
            if isinstance(p.type, TensorType):
                for axis, dim in enumerate(p.type.shape):
                    if isinstance(dim, ex.Var) and dim.name not in bound:
                        bound.add(dim.name)
                        self.emit(1, f"{self.name(dim)} = {self.name(p)}.shape[{axis}]")
        if self.group is not None:
            split, depth = self.group
            self.emit(1, f"_g = _Group({f.name!r}, {split!r}, {depth!r})")
        self.block(1, f.body)
        last = f.body.stmts[-1] if f.body.stmts else None
        if self.group is not None and not isinstance(last, st.ReturnStmt):
            self.emit(1, "_g.run()")
        if self.is_kernel and not isinstance(last, st.ReturnStmt):
            self.emit(1, f"return {self.outs()}")
        return self.lines


def _main_block(entry: Function) -> list[str]:
    lines = ['if __name__ == "__main__":', "    torch.manual_seed(0)", "    main_inputs = ["]
    for p in entry.params:
        t = p.type
        if isinstance(t, TensorType) and all(isinstance(d, ex.ConstInt) for d in t.shape):
            shape = tuple(d.value for d in t.shape)  # type: ignore[attr-defined]
            dt = _torch_dtype(t.dtype)
            maker = f"torch.randn{shape}" if t.dtype.is_float() else f"torch.randint(-8, 8, {shape})"
            if t.dtype.is_packed():   # host storage: packed (docs/language.md)
                host = t.dtype.to_torch(strict=False) or "torch.uint8"
                lines.append(f"        encode({maker}, {t.dtype.name!r}).view({host}),")
            else:
                lines.append(f"        {maker}.to({dt}),")
        elif isinstance(t, ScalarType):
            lines.append(f"        {1.0 if t.dtype.is_float() else 1},")
        else:
            lines.append(f"        None,  # '{p.name}' has a dynamic shape: supply it")
    lines += ["    ]", "    run(*main_inputs)",
              "    for i in OUTPUTS:",
              "        t = main_inputs[i]",
              "        t = decode(t, PACKED[i]) if i in PACKED else t",
              "        print(f'output {i}: shape {tuple(t.shape)} dtype {t.dtype} sum {t.double().sum().item():.6g}')"]
    return lines


def _as_node(node: Any) -> Program | Function:
    """`node` itself, or the Program / Function a printed-IR file (a `passes_dump/*.py` dump, given
    as a str or os.PathLike path) describes."""
    if isinstance(node, (Program, Function)):
        return node
    if not isinstance(node, (str, os.PathLike)):
        raise ArgumentTypeError(f"torch_codegen expects an ir.Program, an ir.Function or the path of a "
                                f"printed-IR file (a passes_dump/*.py dump), got {type(node).__name__}",
                                user_call_span())
    path = Path(node)
    if "\n" in str(node) or not path.is_file():
        what = ("a folder: pass one of its passes_dump/*.py files" if path.is_dir() else
                "DSL text, not a path: parse it first with pl.parse(text)" if "\n" in str(node) else
                "not an existing file")
        raise ArgumentValueError(f"torch_codegen: {str(node)[:120]!r} is {what}", user_call_span())
    from ..language import loads

    return loads(str(path))


@user_facing
def _uses_distributed(program: Program) -> bool:
    """Whether any function of `program` calls a `pld.*` op (the script then needs `torch_dist`)."""
    from ..ir.visitor import IRVisitor

    class _Scan(IRVisitor):
        found = False

        def visit_Call(self, e: ex.Call) -> None:
            super().visit_Call(e)
            self.found |= isinstance(e.op, str) and e.op.startswith("pld.")

    scan = _Scan()
    for f in program.functions:
        scan.visit_function(f)
    return scan.found


def torch_codegen(node: Program | Function | str | os.PathLike, entry: str | None = None) -> str:
    """A standalone PyTorch script (text) for `node` (see the module docstring).

    Args:
        node: an `ir.Program` at any pass stage, a single `ir.Function`, or the path (str or
            os.PathLike) of a printed-IR file such as `<build>/passes_dump/05_after_Simplify.py`,
            which is parsed first (`pl.loads`).
        entry: name of the entry function (default: as `CompiledProgram` picks it).

    Raises:
        ArgumentTypeError / ArgumentValueError (TypeError / ValueError, at the caller's line): a
            `node` of another type, or a path that is not an existing file.
        ParserError: the file is not valid printed IR (located in the file).
        NotImplementedError: an op in `torch_ops.UNSUPPORTED` or without a PyTorch template (the
            message names it), a dtype without a torch equivalent, a hand-written C++ kernel, or a
            construct the script cannot express.
        ValueError: an unknown `entry`.
        CompileError: a Group function whose pipe configuration is invalid (`torch_plan`).
    """
    from ..ir.entry import select_entry

    node = _as_node(node)
    program = node if isinstance(node, Program) else Program(node.name, (node,))
    for f in program.functions:
        if f.external is not None:  # its semantics are C++ the script cannot contain
            raise NotImplementedError(f"'{f.name}' is a hand-written C++ kernel ({f.external.source}); a "
                                      f"standalone PyTorch script cannot run it (run the program on the "
                                      f"simulator, which calls the C++)")
    fnames: dict[str, str] = {}
    for f in program.functions:
        base = re.sub(r"\W", "_", f.name)
        if keyword.iskeyword(base) or base in _RESERVED or base.startswith("_"):
            base = f"f_{base}"
        fnames[f.name] = base
    ent = select_entry(program, entry)
    plan = plan_script(program)
    out = [f"# PyTorch reference of PyPTO program '{program.name}' (generated by pypto.debug.torch_codegen).",
           "# Standalone: needs only torch. Run it to execute the entry on random inputs.", ""]
    out += inspect.getsource(torch_prelude).splitlines()
    out += ["", ""] + inspect.getsource(packed).splitlines()
    if _uses_distributed(program):
        out += ["", ""] + inspect.getsource(torch_dist).splitlines()
    if plan.generators or plan.groups:
        out += ["", ""] + [line for line in inspect.getsource(torch_cluster).splitlines()
                           if "# not in scripts" not in line]
    for f in program.functions:
        out += ["", ""] + _FunctionEmitter(f, program, fnames, plan).function()
    outputs = [i for i, d in enumerate(ent.param_directions) if d in _OUT]
    packed_args = {i: p.type.dtype.name for i, p in enumerate(ent.params)
                   if isinstance(p.type, TensorType) and p.type.dtype.is_packed()}
    call = '_alone(ENTRY(*args))' if ent.name in plan.generators else 'ENTRY(*args)'
    out += ["", "", f"ENTRY = {fnames[ent.name]}", f"OUTPUTS = {outputs}",
            f"PACKED = {packed_args}  # parameter index -> packed 4-bit type (host storage packed)", "", "",
            "def run(*args):",
            '    """Run the entry on `args` (torch tensors and numbers); Out/InOut tensors are updated.',
            '    Tensors of packed types (PACKED) are unpacked for the run and packed back."""',
            "    if not PACKED:",
            f"        return {call}",
            "    host = args",
            "    args = tuple(decode(a, PACKED[i]) if i in PACKED else a for i, a in enumerate(host))",
            f"    result = {call}",
            "    for i in OUTPUTS:",
            "        if i in PACKED:",
            "            host[i].copy_(encode(args[i], PACKED[i]).view(host[i].dtype))",
            "    return result", "", ""]
    out += _main_block(ent)
    return "\n".join(out) + "\n"
