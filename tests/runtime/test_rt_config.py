"""RunConfig, platforms and the real-NPU error (SPEC §7)."""

import pytest
import torch
from rt_ir import add_program

from pypto.backend import BackendType
from pypto.runtime import CompiledProgram, RunConfig
from pypto.runtime.toolchain import find_ptoas


def test_defaults() -> None:
    c = RunConfig()
    assert c.platform == "a2a3sim" and c.device_id == 0
    assert c.rtol == 1e-5 and c.atol == 1e-5
    assert c.strategy is None and c.backend_type is BackendType.Ascend910B
    assert not (c.dump_passes or c.save_kernels or c.codegen_only or c.enable_dep_gen
                or c.enable_scope_stats or c.sanitize)
    assert c.auto_deps
    assert c.enable_chip_swimlane == 0 and c.enable_pmu == 0
    assert c.is_simulator


@pytest.mark.parametrize("platform, backend", [("a2a3sim", BackendType.Ascend910B),
                                                ("a2a3", BackendType.Ascend910B),
                                                ("a5sim", BackendType.Ascend950),
                                                ("a5", BackendType.Ascend950)])
def test_backend_derived_from_platform(platform: str, backend: BackendType) -> None:
    assert RunConfig(platform=platform).backend_type is backend


def test_unknown_platform_lists_valid_ones() -> None:
    with pytest.raises(ValueError) as e:
        RunConfig(platform="a3sim")
    for p in ("a2a3sim", "a2a3", "a5sim", "a5"):
        assert repr(p) in str(e.value)


def test_backend_platform_mismatch() -> None:
    with pytest.raises(ValueError, match="Ascend950"):
        RunConfig(platform="a2a3sim", backend_type=BackendType.Ascend950)


def test_bad_numbers() -> None:
    with pytest.raises(ValueError, match="device_id"):
        RunConfig(device_id=-1)
    with pytest.raises(ValueError, match="rtol"):
        RunConfig(rtol=-1.0)


def _args():
    return torch.ones(16, 32), torch.ones(16, 32), torch.zeros(16, 32)


def test_real_npu_platform_fails_naming_the_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    cp = CompiledProgram(add_program(), "out", BackendType.Ascend910B)
    a, b, c = _args()
    with pytest.raises(RuntimeError) as e:
        cp(a, b, c, config=RunConfig(platform="a2a3"))
    msg = str(e.value)
    assert "CANN" in msg and "ASCEND_HOME_PATH" in msg and "a2a3sim" in msg
    assert torch.equal(c, torch.zeros(16, 32))
    cp2 = CompiledProgram(add_program(), "out", None, platform="a2a3")
    with pytest.raises(RuntimeError, match="NPU"):
        cp2(a, b, c)


def _call_line(frame_offset: int) -> int:
    import inspect

    return inspect.currentframe().f_back.f_lineno + frame_offset  # type: ignore[union-attr]


def test_a_missing_vendor_toolkit_is_a_located_pypto_error_without_internal_frames(monkeypatch) -> None:
    """A user trial: platform="a2a3" without the toolkit raised a bare RuntimeError whose traceback
    ran through PyPTO's internals. It is a PlatformUnavailableError (still a RuntimeError) at the
    user's call, saying what is missing and what to use instead, for every way of running."""
    import os
    import traceback

    import pypto.language as pl
    from pypto.core.errors import PlatformUnavailableError
    from pypto.runtime import ChipWorker

    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.setattr("glob.glob", lambda pattern: [])  # no /dev/davinci* on any machine
    want = ("platform 'a2a3' runs on a real Ascend NPU, which needs the Ascend CANN toolkit "
            "(ASCEND_HOME_PATH is not set; source the toolkit's set_env.sh) and an Ascend NPU driver and "
            "device (no /dev/davinci* device nodes); use platform='a2a3sim' to run on the simulator")
    cp = CompiledProgram(add_program(), "out", BackendType.Ascend910B)

    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)
        return c

    runs = [(lambda: cp(*_args(), config=RunConfig(platform="a2a3")), _call_line(0)),
            (lambda: add(*_args(), config=RunConfig(platform="a2a3")), _call_line(0)),
            (lambda: ChipWorker(RunConfig(platform="a2a3")).init(), _call_line(0))]
    for run, line in runs:
        with pytest.raises(PlatformUnavailableError) as e:
            run()
        assert isinstance(e.value, RuntimeError) and e.value.message == want
        assert (e.value.span.filename, e.value.span.begin_line) == (__file__, line)
        assert str(e.value).startswith(f"{__file__}:{line}:")
        package = os.path.dirname(os.path.abspath(pl.__file__)).rsplit(os.sep, 1)[0]
        frames = [f.filename for f in traceback.extract_tb(e.value.__traceback__)]
        assert not any(f.startswith(package) and not f.endswith("errors.py") for f in frames), frames


def test_config_platform_must_match_program_backend() -> None:
    cp = CompiledProgram(add_program(), "out", BackendType.Ascend910B)
    with pytest.raises(ValueError, match="Ascend950"):
        cp(*_args(), config=RunConfig(platform="a5sim"))


def test_codegen_only_checks_args_but_does_not_run() -> None:
    cp = CompiledProgram(add_program(), "out", None)
    a, b, c = _args()
    assert cp(a, b, c, config=RunConfig(codegen_only=True)) is None
    assert torch.equal(c, torch.zeros(16, 32)) and cp.tasks == []


def test_find_ptoas_absent(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("PTOAS_ROOT", raising=False)
    assert find_ptoas() is None
    exe = tmp_path / "bin" / "ptoas"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PTOAS_ROOT", str(tmp_path))
    assert find_ptoas() == str(exe)


def test_compile_time_fields_at_call_time_warn_once_per_field() -> None:
    import warnings

    cp = CompiledProgram(add_program(), "", None)
    a, b, c = _args()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cp(a, b, c, config=RunConfig(dump_passes=True))
        cp(a, b, c, config=RunConfig(dump_passes=True, save_kernels=True))
        cp(a, b, c, config=RunConfig(dump_passes=True, strategy="whatever"))
        cp(a, b, c, config=RunConfig(enable_pmu=0, sanitize=True))      # run-time fields: silent
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 3, msgs
    assert [m.split("=")[0] for m in msgs] == ["RunConfig.dump_passes", "RunConfig.save_kernels",
                                              "RunConfig.strategy"]
    assert "compile-time" in msgs[0] and "ir.compile(..., dump_passes=...)" in msgs[0]
    assert "JITFunction.compile(..., config=RunConfig(dump_passes=...))" in msgs[0]
    assert "kernels under <output_dir>/kernels/ anyway" in msgs[1]
    assert all(x.filename == __file__ for x in w)                       # points at the call
    torch.testing.assert_close(c, a + b)


def test_compile_time_fields_of_a_worker_config_warn_too() -> None:
    import warnings

    from pypto.runtime import ChipWorker

    cp = CompiledProgram(add_program(), "", None)
    with warnings.catch_warnings(record=True) as w, ChipWorker(config=RunConfig(dump_passes=True)) as worker:
        warnings.simplefilter("always")
        handle = worker.register(cp)
        handle(*_args())
        handle(*_args())
    assert [str(x.message).split("=")[0] for x in w] == ["RunConfig.dump_passes"]
    assert w[0].filename == __file__


def test_config_must_be_a_run_config() -> None:
    cp = CompiledProgram(add_program(), "", None)
    with pytest.raises(TypeError, match="config= expects a pypto.runtime.RunConfig, got str"):
        cp(*_args(), config="a2a3sim")
