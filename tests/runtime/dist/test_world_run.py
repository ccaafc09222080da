"""Multi-rank runs of hand-written `DistributedBuild`s (chip programs of ordinary pl ops, a Python
host driver): the one-shot `run`, `DistributedWorker`, shared-memory arguments, SubWorkers, failures
that never corrupt user tensors, killed ranks and Ctrl-C (SPEC §8 "Running"; issue 10 item 3)."""

import json
import os
import signal
import time
import traceback

import pytest
import torch

import pypto.language as pl
from pypto.core.errors import ArgumentTypeError, RuntimeSimError
from pypto.runtime import RunConfig
from pypto.runtime.config import DistributedConfig
from pypto.runtime.dist import DistributedBuild, DistributedWorker, HostParam, RankProcessError, run
from pypto.runtime.dist.rank import WindowArg
from pypto.runtime.dist.world import World, call_on_ranks
from pypto.tools import swimlane as swimlane_tool

ROWS, COLS = 16, 64


@pl.jit
def axpy(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(x, 2.0), w)
    return out


@pytest.fixture(scope="module")
def axpy_program():
    z = torch.zeros(ROWS, COLS)
    return axpy.compile(z, z, z)


def per_rank_host(rt, x, w, out):
    """Host driver: every rank computes its row block out[r] = 2 x[r] + w[r]."""
    for r in range(rt.world_size()):
        rt.dispatch("axpy", r, [x[r], w[r], out[r]])
    rt.sync()
    return out


PARAMS = [HostParam("x", "In", None), HostParam("w", "In", None), HostParam("out", "Out", None)]


def _build(cp, host=per_rank_host, sub_workers=()):
    return DistributedBuild("per_rank", host, PARAMS, {"axpy": cp}, sub_workers=list(sub_workers))


def _cfg(p, **kw):
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(p)), **kw))


def _inputs(p):
    torch.manual_seed(p)
    return torch.randn(p, ROWS, COLS), torch.randn(p, ROWS, COLS), torch.zeros(p, ROWS, COLS)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_one_shot_run(axpy_program, p: int) -> None:
    x, w, out = _inputs(p)
    x0 = x.clone()
    res = run(_build(axpy_program), (x, w, out), _cfg(p))
    assert res is out                                  # the caller's tensor, written in place
    torch.testing.assert_close(out, 2 * x + w)
    assert torch.equal(x, x0) and not x.is_shared()     # one-shot copies: user tensors stay private


def test_prepared_worker_calls_submit_and_records(axpy_program) -> None:
    x, w, out = _inputs(2)
    for t in (x, w, out):
        t.share_memory_()
    with DistributedWorker(_build(axpy_program), _cfg(2)) as rt:
        rt(x, w, out)
        torch.testing.assert_close(out, 2 * x + w)
        first = sorted((t.start, t.end) for r in rt.last_records for t in r.tasks)
        assert rt.last_cycles == max(r.end for r in rt.last_records) == first[-1][1] > 0
        out.zero_()
        h = rt.submit(x, w, out)
        assert h.result(timeout=30) is out and h.done
        torch.testing.assert_close(out, 2 * x + w)
        recs = sorted(rt.last_records, key=lambda r: r.rank)
        assert [r.rank for r in recs] == [0, 1] and all(r.program == "axpy" for r in recs)
        # every call's simulated time starts at 0: the same work, the same times
        assert sorted((t.start, t.end) for r in recs for t in r.tasks) == first
        assert all(t.end > t.start and t.kernel.startswith("axpy") for r in recs for t in r.tasks)
        resident = rt.alloc_tensor([2, ROWS, COLS], torch.float32, init=w)
        out.zero_()
        rt(x, resident, out)
        torch.testing.assert_close(out, 2 * x + w)
        assert torch.equal(resident.to_host(), w)   # read back to the host (docs/distributed.md)
        rt.free_tensor(resident)
    assert "closed" in repr(rt)


def test_prepared_worker_requires_shared_memory(axpy_program) -> None:
    x, w, out = _inputs(2)
    with DistributedWorker(_build(axpy_program), _cfg(2)) as rt:
        with pytest.raises(TypeError, match=r"argument 'x' of 'per_rank' is not in shared memory.*"
                                            r"tensor\.share_memory_\(\)") as ei:
            rt(x, w, out)
        assert isinstance(ei.value, ArgumentTypeError)


def bad_rank_host(rt, x, w, out):
    """Rank 0 runs correctly; rank 1 gets a tensor of the wrong shape."""
    rt.dispatch("axpy", 0, [x[0], w[0], out[0]])
    rt.dispatch("axpy", 1, [x[1][:8], w[1], out[1]])
    rt.sync()


def test_failed_run_names_the_rank_and_leaves_user_tensors_alone(axpy_program) -> None:
    x, w, out = _inputs(2)
    with pytest.raises(ValueError, match=r"rank 1 \(device 5\), running 'axpy': .*'x'"):
        run(_build(axpy_program, bad_rank_host), (x, w, out),
            RunConfig(distributed_config=DistributedConfig(device_ids=[4, 5])))
    assert torch.equal(out, torch.zeros_like(out))    # rank 0 succeeded, but the call did not


def sub_worker_host(rt, x, w, out):
    for r in range(rt.world_size()):
        rt.dispatch("axpy", r, [x[r], w[r], out[r]])
    rt.call_sub_worker("scale", [out])                 # runs after the dispatches finished
    rt.sync()
    return out


@pytest.mark.parametrize("threads", [0, 2])
def test_sub_worker_callback(axpy_program, threads: int) -> None:
    x, w, out = _inputs(2)
    seen = []

    def scale(t):
        seen.append(t.clone())
        t.mul_(10)

    build = _build(axpy_program, sub_worker_host, ["scale"])
    run(build, (x, w, out), _cfg(2, num_sub_workers=threads), callbacks={"scale": scale})
    torch.testing.assert_close(seen[0], 2 * x + w)
    torch.testing.assert_close(out, 10 * (2 * x + w))
    with pytest.raises(ValueError, match="callbacks for unknown SubWorker"):
        DistributedWorker(build, _cfg(2), callbacks={"nope": scale})


def interrupted_host(rt, x, w, out):
    rt.alloc_window_buffer(1024)
    for r in range(rt.world_size()):
        rt.dispatch("axpy", r, [x[r], w[r], out[r]])
    raise KeyboardInterrupt


def test_interrupt_in_host_driver_cleans_up(axpy_program) -> None:
    x, w, out = _inputs(2)
    with pytest.raises(KeyboardInterrupt):
        run(_build(axpy_program, interrupted_host), (x, w, out), _cfg(2))
    assert torch.equal(out, torch.zeros_like(out))     # (the fixture checks /dev/shm and processes)


def wait_forever(comm, sig):
    comm.wait(sig[0], 1, "eq")


def test_killed_rank_fails_the_call_and_frees_the_others() -> None:
    w = World({}, None, DistributedConfig(device_ids=[0, 1, 2], deadlock_timeout=30))
    try:
        spec = w.alloc_window(8)
        sig = WindowArg(spec.wid, 0, (2,), torch.int32)
        call_on_ranks(w, lambda_free_ok, [[sig]] * 3)          # start the world
        w.begin_call()
        for r in range(3):
            w.send(r, "call", wait_forever, [sig])
        time.sleep(0.2)
        os.kill(w.procs[1].pid, signal.SIGKILL)
        t0 = time.monotonic()
        with pytest.raises(RankProcessError, match=r"rank 1 \(device 1, pid \d+\) was killed by SIGKILL "
                                                   r"while running 'wait_forever'") as ei:
            w.wait_all()
        assert time.monotonic() - t0 < 10 and ei.value.rank == 1 and ei.value.signal == "SIGKILL"
        with pytest.raises(RuntimeSimError, match="cannot run any more"):
            w.begin_call()
    finally:
        w.close()


def lambda_free_ok(comm, sig):
    return comm.rank


@pytest.mark.slow
def test_spawned_ranks(axpy_program) -> None:
    x, w, out = _inputs(2)
    run(_build(axpy_program), (x, w, out), _cfg(2, start_method="spawn"))
    torch.testing.assert_close(out, 2 * x + w)


def _stuck_host_process(ready_fd: int) -> None:
    """Body of a forked host process: start 2 ranks blocked in a wait forever, report ready, and
    exit 0 after a KeyboardInterrupt (3 when the wait returns, 4 on another error, whose traceback
    it writes to `ready_fd` after the ready byte)."""
    code = 4
    try:
        w = World({}, None, DistributedConfig(device_ids=[0, 1], deadlock_timeout=60))
        spec = w.alloc_window(8)
        os.write(ready_fd, b"r")
        call_on_ranks(w, wait_forever, [[WindowArg(spec.wid, 0, (2,), torch.int32)]] * 2)
        code = 3
    except KeyboardInterrupt:
        code = 0 if not w.procs else 5      # wait_all closed the world: ranks stopped, segments unlinked
    except BaseException:
        try:     # how this process handled signals then (SigBlk: blocked, SigIgn: ignored, SigCgt: caught)
            with open("/proc/self/status", encoding="ascii") as f:
                sigs = "".join(line for line in f if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")))
        except OSError:
            sigs = ""
        os.write(ready_fd, (traceback.format_exc() + sigs).encode())
    finally:
        os._exit(code)


@pytest.mark.skipif(not os.path.isdir("/dev/shm") or not hasattr(os, "fork"), reason="POSIX only")
def test_ctrl_c_leaves_nothing_in_dev_shm() -> None:
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child is the host process a user presses Ctrl-C in
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.close(r)
        _stuck_host_process(wfd)
    os.close(wfd)
    try:
        assert os.read(r, 1) == b"r"
        prefix = f"pypto_{pid}_"
        assert any(n.startswith(prefix) for n in os.listdir("/dev/shm"))
        time.sleep(0.3)                       # the ranks are blocked in their wait now
        # Ctrl-C, pressed again every 5 s like a user would: on a loaded machine the first one can
        # come while the ranks are still starting (seen twice in loaded full-suite runs, never alone)
        deadline = time.monotonic() + 40
        while True:
            os.kill(pid, signal.SIGINT)
            done, status = os.waitpid(pid, os.WNOHANG)
            t_next = time.monotonic() + 5
            while not done and time.monotonic() < t_next:
                time.sleep(0.05)
                done, status = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > deadline:
                break
        if not done:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        os.set_blocking(r, False)    # what the child wrote before it exited (its ranks may hold the pipe open)
        try:
            said = os.read(r, 1 << 16).decode(errors="replace")
        except BlockingIOError:
            said = ""
    finally:
        os.close(r)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the host process failed:\n{said}"
    assert [n for n in os.listdir("/dev/shm") if n.startswith(prefix)] == []


@pl.jit
def accum(x: pl.Tensor, acc: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc[:] = pl.add(acc, x)
    return acc


def window_host(rt, x, out):
    """acc (a window, one copy per rank) += x[r] on every rank; out[r] = rank r's copy."""
    buf = rt.alloc_window_buffer(ROWS * COLS * 4)
    acc = rt.window(buf, [ROWS, COLS], "FP32")
    for r in range(rt.world_size()):
        rt.dispatch("accum", r, [x[r], acc])
    rt.sync()
    for r in range(rt.world_size()):
        out[r].copy_(acc.on_rank(r))
    return out


@pytest.mark.parametrize("persistent", [False, True])
def test_windows_live_for_a_call_or_the_persistent_worker(persistent: bool) -> None:
    z = torch.zeros(ROWS, COLS)
    build = DistributedBuild("win", window_host, [HostParam("x", "In", None), HostParam("out", "Out", None)],
                             {"accum": accum.compile(z, z)})
    x, out = torch.randn(3, ROWS, COLS).share_memory_(), torch.zeros(3, ROWS, COLS).share_memory_()
    with DistributedWorker(build, _cfg(3), persistent=persistent) as rt:
        rt(x, out)
        torch.testing.assert_close(out, x)
        rt(x, out)
        torch.testing.assert_close(out, 2 * x if persistent else x)
        assert len(rt.world.windows) == (1 if persistent else 0)


def test_dfx_outputs_per_rank_and_dispatch(axpy_program, tmp_path) -> None:
    def twice(rt, x, w, out):
        for _ in range(2):
            for r in range(rt.world_size()):
                rt.dispatch("axpy", r, [x[r], w[r], out[r]])
        rt.sync()

    x, w, out = _inputs(2)
    build = DistributedBuild("twice", twice, PARAMS, {"axpy": axpy_program}, output_dir=tmp_path)
    cfg = RunConfig(enable_chip_swimlane=1, distributed_config=DistributedConfig(device_ids=[0, 1]))
    run(build, (x, w, out), cfg)
    dfx = tmp_path / "dfx_outputs"
    assert sorted(str(p.relative_to(dfx)) for p in dfx.rglob("*.json")) == [
        f"rank{r}/d{k}/swimlane.json" for r in (0, 1) for k in (0, 1)] + ["swimlane_merged.json"]
    merged = json.loads((dfx / "swimlane_merged.json").read_text())["traceEvents"]
    names = {e["args"]["name"] for e in merged if e.get("name") == "process_name"}
    assert names == {"rank 0 (device 0)", "rank 1 (device 1)"}
    slices = [e for e in merged if e.get("cat") == "task"]
    assert len(slices) == 4 and {e["pid"] for e in slices} == {0, 1}
    # the swimlane page of the build folder shows the merged trace: both ranks' tasks
    assert swimlane_tool.main([str(tmp_path), "-o", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert "rank 0 (device 0)" in page and "rank 1 (device 1)" in page
    assert page.count('<rect class="s task"') == 4
    run(build, (x, w, out), RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1])))
    assert not list(dfx.glob("rank*")) and not (dfx / "swimlane_merged.json").exists()   # the last call only


def test_host_runtime_argument_errors(axpy_program) -> None:
    def host(rt, x, w, out):
        kind = int(x[0, 0, 0])
        if kind == 0:
            rt.dispatch("axpy", 2, [x[0], w[0], out[0]])
        elif kind == 1:
            rt.dispatch("nope", 0, [x[0], w[0], out[0]])
        elif kind == 2:
            rt.dispatch("axpy", 0, [torch.zeros(ROWS, COLS), w[0], out[0]])
        elif kind == 3:
            rt.window(rt.alloc_window_buffer(16), [2, 4], "FP32")
        else:
            rt.call_sub_worker("missing", [])

    x, w, out = _inputs(2)
    build = _build(axpy_program, host)
    cases = [(ValueError, r"dispatch of 'axpy': rank 2 is outside \[0, 2\)"),
             (ValueError, r"no chip program 'nope' in this build \(it has axpy\)"),
             (TypeError, r"argument 0 is a host tensor that is not in shared memory"),
             (ValueError, r"window: \[2, 4\] FP32 needs 32 bytes, the buffer has 16"),
             (ValueError, r"SubWorker 'missing' has no callback")]
    with DistributedWorker(build, _cfg(2), _stage_all=True) as rt:
        for kind, (cls, msg) in enumerate(cases):
            x[0, 0, 0] = kind
            with pytest.raises(cls, match=msg):
                rt(x, w, out)


def test_real_npu_platform_is_a_clear_error(axpy_program) -> None:
    x, w, out = _inputs(2)
    cfg = RunConfig(platform="a2a3", distributed_config=DistributedConfig(device_ids=[0, 1]))
    with pytest.raises(RuntimeError, match="platform 'a2a3' runs on a real Ascend NPU"):
        run(_build(axpy_program), (x, w, out), cfg)


def _idle_host_process(ready_fd: int) -> None:
    """Body of a forked host process: a world of 2 ranks that mapped a window, then nothing."""
    try:
        w = World({}, None, DistributedConfig(device_ids=[0, 1]))
        spec = w.alloc_window(8)
        call_on_ranks(w, lambda_free_ok, [[WindowArg(spec.wid, 0, (2,), torch.int32)]] * 2)
        os.write(ready_fd, b"r")
        time.sleep(60)
    finally:
        os._exit(0)


@pytest.mark.skipif(not os.path.isdir("/dev/shm") or not hasattr(os, "fork"), reason="POSIX only")
def test_ranks_clean_up_after_a_killed_host() -> None:
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _idle_host_process(wfd)
    os.close(wfd)
    try:
        assert os.read(r, 1) == b"r"
        prefix = f"pypto_{pid}_"
        assert len([n for n in os.listdir("/dev/shm") if n.startswith(prefix)]) == 2   # control + window
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        deadline = time.monotonic() + 20
        while any(n.startswith(prefix) for n in os.listdir("/dev/shm")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        os.close(r)
    assert [n for n in os.listdir("/dev/shm") if n.startswith(prefix)] == []
