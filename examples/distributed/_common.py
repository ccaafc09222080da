"""Shared helpers of the distributed examples: the result check of ../_check.py, the run
configuration for P ranks, and the sizes (`PYPTO_EXAMPLE_SMALL=1` picks the small sizes CI uses)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _check import check  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.config import DistributedConfig  # noqa: E402

__all__ = ["check", "config", "SMALL"]

SMALL = os.environ.get("PYPTO_EXAMPLE_SMALL", "") not in ("", "0")


def config(p: int) -> RunConfig:
    """The RunConfig of a run on P ranks (devices 0 .. P-1)."""
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p))))
