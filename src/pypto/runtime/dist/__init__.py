"""Multi-rank runs of distributed programs (SPEC §8; DESIGN `pypto.runtime.dist`).

`run(build, args, config)` is the one-shot call, `DistributedWorker` the reusable worker; the host
driver talks to the ranks through `HostRuntime` (`rt`); each rank is a process (`rank.py`) with its
own simulated chip and a `RankComm` over shared memory (`comm.py`). See docs/distributed.md,
"Running distributed programs".
"""

from .build import DistributedBuild, HostParam
from .comm import BlockedWait, CommEvent, RankComm
from .host import HostRuntime, WindowBuffer, WindowTensor
from .program import DistributedCompiledProgram
from .worker import DistributedWorker, RunHandle, run
from .world import DispatchRecord, DistributedDeadlockError, RankProcessError, World

__all__ = ["DistributedBuild", "HostParam", "DistributedCompiledProgram", "run", "DistributedWorker", "RunHandle",
           "HostRuntime", "WindowBuffer", "WindowTensor", "DistributedDeadlockError", "RankProcessError", "DispatchRecord",
           "BlockedWait", "CommEvent", "RankComm", "World"]
