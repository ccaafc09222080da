"""`python -m pypto.tools.op_reference [--check]`: write or check docs/operators.md.

The page is generated from the op registry by `pypto.ops.reference`; see its docstring.
"""

from __future__ import annotations

import sys

from ..ops.reference import main

if __name__ == "__main__":
    sys.exit(main())
