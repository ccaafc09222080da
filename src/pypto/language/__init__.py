"""`import pypto.language as pl`: the PyPTO kernel language (SPEC §2, the Language Guide).

Everything a kernel author writes comes from here: data types (`pl.FP32`), annotations
(`pl.Tensor`, `pl.Tile`, `pl.Scalar`, `pl.Out`, `pl.InOut`), enums, decorators (`pl.function`,
`pl.program`, `pl.inline`, `pl.jit`), loop/scope helpers and the op namespaces `pl.tensor`,
`pl.tile` plus unified ops (`pl.add`, `pl.load`, ...). The names of the unified ops come from the
op registry, so this module never lists ops by hand.
"""

from __future__ import annotations

from typing import Any

from ..core import dtype as _dt
from ..core.dtype import ALL_DTYPES as _ALL_DTYPES
from ..core.dtype import DataType
from ..core.enums import (
    ForKind,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    Role,
    ScopeKind,
    ScopeMode,
    SplitMode,
    TensorLayout,
)
from ..core.enums import ParamDirection as Direction
from ..core.errors import user_facing
from . import dsl as _dsl
from .decorators import InlineFunction, function, inline, program
from .dsl import (
    at,
    cluster,
    cond,
    const,
    cross_core_slot,
    manual_scope,
    parallel,
    pipeline,
    range,
    scope,
    split,
    split_aiv,
    spmd,
    spmd_submit,
    static_assert,
    static_print,
    submit,
    unroll,
    while_,
    yield_,
)
from .dsl import func_attr as func_attr  # noqa: PLC0414  (SPEC §13)
from .dsl import max as max  # noqa: A004, PLC0414
from .dsl import min as min  # noqa: A004, PLC0414
from .jit import JITFunction, jit
from .op_wrappers import array, system, tensor, tile, unified_ops
from .typing import RUNTIME, Array, InOut, Out, Scalar, TaskId, Tensor, Tile, Tuple, dynamic
from .typing import MemRefSpec as MemRef
from .typing import TensorViewSpec as TensorView
from .typing import TileViewSpec as TileView

Mem = MemorySpace
ND, DN, NZ = TensorLayout.ND, TensorLayout.DN, TensorLayout.NZ

for _d in _ALL_DTYPES:
    globals()[_d.name] = _d

globals().update(unified_ops)


def __getattr__(name: str) -> Any:
    """A missing `pl.X`: Python's AttributeError, with the PyPTO spelling of a data type written
    the torch way (`pl.float32` -> `pl.FP32`), as annotations are evaluated before PyPTO sees them."""
    from .parser.hints import dtype_spelling_hint

    hint = dtype_spelling_hint(name) if not name.startswith("_") else ""
    raise AttributeError(f"module 'pypto.language' has no attribute {name!r}{hint}")


@user_facing
def parse(code: str, filename: str | None = None) -> Any:
    """Parse printed DSL text back into the `ir.Program` / `ir.Function` it describes (SPEC §4)."""
    from .parser.entry import parse_text

    return parse_text(code, filename)


@user_facing
def loads(path: str) -> Any:
    """`pl.parse` of the text in file `path` (e.g. a `passes_dump/*.py` file)."""
    import os

    if not os.path.isfile(path):
        hint = " (pl.loads reads a file; use pl.parse(text) for a string)" if "\n" in str(path) else ""
        raise FileNotFoundError(f"no such file: {str(path)[:80]!r}{hint}")
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), filename=str(path))


__all__ = [
    "DataType", "ForKind", "FunctionType", "Level", "MemorySpace", "Mem", "PadValue", "ScopeKind",
    "SplitMode", "TensorLayout", "Direction", "Role", "ND", "DN", "NZ", "function", "program", "inline",
    "InlineFunction", "jit", "JITFunction", "Tensor", "Tile", "Scalar", "Out", "InOut", "dynamic", "RUNTIME",
    "Tuple",
    "MemRef", "TensorView", "TileView", "tensor", "tile", "system", "range", "parallel", "unroll", "pipeline",
    "while_", "cond", "yield_", "at", "scope", "split", "cross_core_slot", "static_print",
    "static_assert", "const", "min", "max", "parse", "loads", "func_attr", "Array", "array",
    # scopes and tasks, SPMD and grouping (SPEC §13)
    "ScopeMode", "TaskId", "manual_scope", "submit", "spmd", "spmd_submit", "cluster", "split_aiv",
    *(d.name for d in _ALL_DTYPES), *unified_ops,
]
_ = (_dt, _dsl)
