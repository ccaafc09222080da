"""Make the model examples (`examples/models/*.py`, which import each other by module name)
importable from the tests."""

import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
if str(MODELS) not in sys.path:
    sys.path.insert(0, str(MODELS))
