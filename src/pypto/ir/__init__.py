"""The PyPTO IR (SPEC §4): immutable nodes, visitors, structural equality, printer, serializer.

`from pypto import ir` also gives `ir.compile` and the compile enums (SPEC §5); those are loaded
lazily so that importing the IR never imports the pass pipeline.
"""

from __future__ import annotations

from typing import Any

from . import printer as _printer  # noqa: F401  (installs node.as_python)
from .expr import (
    BINARY_OPS,
    COMPARE_OPS,
    UNARY_OPS,
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    IterArg,
    MakeTuple,
    TupleGetItem,
    UnaryExpr,
    Var,
)
from .function import ExternalKernel, Function, Program
from .printer import python_print
from .serialize import deserialize, serialize
from .stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
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
from .structural import assert_structural_equal, structural_equal, structural_hash
from .types import (
    MemRef,
    ScalarType,
    TensorType,
    TensorView,
    TileType,
    TileView,
    TupleType,
    Type,
    num_elements,
    static_shape,
)
from .visitor import IRMutator, IRVisitor

_LAZY = {
    "compile": ("..compiler", "compile"),
    "OptimizationStrategy": ("..compiler", "OptimizationStrategy"),
    "VerificationLevel": ("..compiler", "VerificationLevel"),
    "CompiledProgram": ("..runtime.compiled", "CompiledProgram"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        m = importlib.import_module(f"pypto.{mod[2:]}" if mod.startswith("..") else f"pypto.ir.{mod}")
        return getattr(m, attr)
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")


__all__ = [
    "Expr", "Var", "IterArg", "ConstInt", "ConstFloat", "ConstBool", "BinaryExpr", "UnaryExpr",
    "Call", "GlobalVar", "MakeTuple", "TupleGetItem", "BINARY_OPS", "UNARY_OPS", "COMPARE_OPS",
    "Stmt", "AssignStmt", "EvalStmt", "ReturnStmt", "SeqStmts", "IfStmt", "ForStmt", "WhileStmt",
    "YieldStmt", "BreakStmt", "ContinueStmt", "ScopeStmt", "Function", "Program", "ExternalKernel", "Type",
    "ScalarType", "TensorType", "TileType", "TupleType", "MemRef", "TensorView", "TileView",
    "static_shape", "num_elements", "IRVisitor", "IRMutator", "python_print", "serialize", "deserialize", "structural_equal",
    "structural_hash", "assert_structural_equal", *_LAZY,
]
