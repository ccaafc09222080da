"""The operator catalog (SPEC §3): importing this package registers every op family.

One module per family: elementwise (arithmetic, unary math, activations), bitwise, compare,
reduction, broadcast, cast, creation, memory, shape, matmul, gather, block, system, chip, array,
distributed (the `pld.*` primitives of SPEC §8), distributed_collectives (the `pld.*` collectives).
Shared pieces:
`registry` (OpSpec, dispatch tables), `typing_rules` (argument checks, dtype classes), `valid`
(partial-tile valid regions), `families` (elementwise factories), `cost` (cost-model entries) and
`reference` (the generated operator reference page).
"""

from . import (  # noqa: F401  (registration)
    array,
    bitwise,
    block,
    broadcast,
    cast,
    chip,
    compare,
    creation,
    distributed,
    distributed_collectives,
    distributed_host,
    elementwise,
    gather,
    matmul,
    memory,
    reduction,
    shape,
    system,
)
from .cost import Cost, Work, work_of
from .registry import (
    UNIFIED,
    OpSpec,
    OpTypeError,
    all_ops,
    get_op,
    has_op,
    python_name,
    register,
    unified_names_of,
)

__all__ = ["OpSpec", "OpTypeError", "get_op", "has_op", "all_ops", "register", "UNIFIED", "python_name",
           "unified_names_of",
           "Cost", "Work", "work_of"]
