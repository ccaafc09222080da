"""External toolchain lookup (DESIGN: `pypto.runtime` owns it): the Ascend CANN toolkit and ptoas.

Real-NPU platforms (`a2a3`, `a5`) need the CANN toolkit (`$ASCEND_HOME_PATH`, set by the toolkit's
`set_env.sh`) and an NPU driver with device nodes (`/dev/davinci<N>`). `ptoas`, the PTO assembler,
is found on `PATH` or under `$PTOAS_ROOT` (SPEC §5).
"""

from __future__ import annotations

import glob
import os
import shutil

__all__ = ["require_npu_runtime", "missing_npu_pieces", "find_ptoas"]


def missing_npu_pieces() -> list[str]:
    """What is absent for running on a real Ascend NPU (empty when everything is present)."""
    missing = []
    home = os.environ.get("ASCEND_HOME_PATH")
    if not home:
        missing.append("the Ascend CANN toolkit (ASCEND_HOME_PATH is not set; source the toolkit's "
                       "set_env.sh)")
    elif not os.path.isdir(home):
        missing.append(f"the Ascend CANN toolkit (ASCEND_HOME_PATH={home} does not exist)")
    if not glob.glob("/dev/davinci[0-9]*"):
        missing.append("an Ascend NPU driver and device (no /dev/davinci* device nodes)")
    return missing


def require_npu_runtime(platform: str) -> None:
    """Fail with a RuntimeError explaining why `platform` (a real NPU) cannot run here.

    Raises:
        RuntimeError: always: naming the missing toolkit/driver, or, when both are present, saying
            that this implementation runs programs on the simulator platforms only.
    """
    missing = missing_npu_pieces()
    sim = f"{platform}sim"
    if missing:
        raise RuntimeError(f"platform {platform!r} runs on a real Ascend NPU, which needs "
                           + " and ".join(missing) + f"; use platform={sim!r} to run on the simulator")
    raise RuntimeError(f"platform {platform!r}: the Ascend toolkit and driver are present, but this "
                       f"PyPTO build executes programs only on the simulator; use platform={sim!r}")


def find_ptoas() -> str | None:
    """Path of the `ptoas` executable ($PTOAS_ROOT/bin/ptoas, $PTOAS_ROOT/ptoas, then PATH), or None."""
    root = os.environ.get("PTOAS_ROOT")
    if root:
        for cand in (os.path.join(root, "bin", "ptoas"), os.path.join(root, "ptoas")):
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return shutil.which("ptoas")
