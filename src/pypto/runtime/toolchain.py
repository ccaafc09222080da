"""External toolchain lookup (DESIGN: `pypto.runtime` owns it): the Ascend CANN toolkit and ptoas.

Real-NPU platforms (`a2a3`, `a5`) need the CANN toolkit (`$ASCEND_HOME_PATH`, set by the toolkit's
`set_env.sh`) and an NPU driver with device nodes (`/dev/davinci<N>`). `ptoas`, the PTO assembler,
is found on `PATH` or under `$PTOAS_ROOT` (SPEC §5); `run_ptoas` turns a kernel's `.pto` into C++ with
`ptoas <kernel>.pto -o <kernel>.cpp`. When ptoas is absent, builds keep the `.pto` files and the
simulator still runs them; `note_ptoas_missing` says so once per process.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import subprocess
from pathlib import Path

from ..core.errors import CompileError, PlatformUnavailableError, user_call_span

__all__ = ["require_npu_runtime", "missing_npu_pieces", "find_ptoas", "run_ptoas", "note_ptoas_missing",
           "PTOAS_TIMEOUT_S"]

PTOAS_TIMEOUT_S = 300
_log = logging.getLogger("pypto")
_ptoas_missing_noted = False


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
    """Fail with a PlatformUnavailableError explaining why `platform` (a real NPU) cannot run here.

    Raises:
        PlatformUnavailableError (a RuntimeError), located at the user's call: always, naming the
            missing toolkit/driver, or, when both are present, saying that this implementation
            runs programs on the simulator platforms only; either way with the simulator platform
            to use instead.
    """
    missing = missing_npu_pieces()
    sim = f"{platform}sim"
    if missing:
        raise PlatformUnavailableError(f"platform {platform!r} runs on a real Ascend NPU, which needs "
                                       + " and ".join(missing) + f"; use platform={sim!r} to run on the "
                                       f"simulator", user_call_span())
    raise PlatformUnavailableError(f"platform {platform!r}: the Ascend toolkit and driver are present, but "
                                   f"this PyPTO build executes programs only on the simulator; use "
                                   f"platform={sim!r}", user_call_span())


def find_ptoas() -> str | None:
    """Path of the `ptoas` executable ($PTOAS_ROOT/bin/ptoas, $PTOAS_ROOT/ptoas, then PATH), or None."""
    root = os.environ.get("PTOAS_ROOT")
    if root:
        for cand in (os.path.join(root, "bin", "ptoas"), os.path.join(root, "ptoas")):
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return shutil.which("ptoas")


def note_ptoas_missing() -> bool:
    """Log, once per process, that ptoas was not found and builds keep `.pto` only.

    Returns True when this call logged the message (the first one), False afterwards.
    """
    global _ptoas_missing_noted
    if _ptoas_missing_noted:
        return False
    _ptoas_missing_noted = True
    _log.warning("ptoas (the PTO assembler) was not found on PATH or under $PTOAS_ROOT: builds keep the "
                 "PTO MLIR (.pto) of each kernel without C++ (as with skip_ptoas=True) and programs run "
                 "on the simulator; nothing else is needed. This note is shown once per process; "
                 "ir.compile(..., skip_ptoas=True) does not look for ptoas at all.")
    return True


def run_ptoas(ptoas: str, pto: Path, cpp: Path, timeout_s: float = PTOAS_TIMEOUT_S) -> None:
    """Assemble `pto` into `cpp` with `ptoas <pto> -o <cpp>`.

    Raises:
        CompileError: ptoas exits non-zero (its output is in the message), runs longer than
            `timeout_s` seconds, or does not write `cpp`.
    """
    try:
        r = subprocess.run([ptoas, str(pto), "-o", str(cpp)], capture_output=True, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CompileError(f"ptoas did not finish on {pto.name} within {timeout_s:g} s") from None
    except OSError as e:
        raise CompileError(f"ptoas ({ptoas}) could not be started: {e}") from None
    if r.returncode != 0:
        out = (r.stderr or r.stdout or "").strip()
        raise CompileError(f"ptoas failed on {pto.name} (exit status {r.returncode}):\n{out}")
    if not cpp.is_file():
        raise CompileError(f"ptoas exited successfully on {pto.name} but wrote no {cpp.name}")
