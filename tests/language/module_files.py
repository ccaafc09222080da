"""Test helper: run a Python file written by a test as a module (its decorators parse kernels the
way a user's module does), so errors can be checked against the file's own lines."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(path: Path) -> ModuleType:
    """Execute `path` as a module named after its stem and return it (it is not kept in sys.modules)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod  # inspect.getsource finds the source through the module
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[path.stem]
    return mod
