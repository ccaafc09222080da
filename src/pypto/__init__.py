"""PyPTO in pure Python (SPEC §1): `import pypto.language as pl` is where kernel authors start.

The top level keeps only what upstream code imports from it (SPEC §13 "public import paths"):
`pypto.DataType` (with the dtype constants, e.g. `pypto.FP32`), `pypto.InternalError` and the
user-facing error base `pypto.PyPTOError`. It imports nothing heavy (no torch), so `import pypto`
stays cheap; the compiler, runtime and language load when first imported.
"""

from .core.dtype import ALL_DTYPES as _ALL_DTYPES
from .core.dtype import DataType
from .core.errors import InternalError, PyPTOError

for _d in _ALL_DTYPES:
    globals()[_d.name] = _d
del _d

__all__ = ["DataType", "InternalError", "PyPTOError", *(d.name for d in _ALL_DTYPES)]
