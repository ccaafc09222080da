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


def test_backend_type_by_name() -> None:
    # like ir.compile's backend_type: the member or its name
    assert RunConfig(platform="a5sim", backend_type="Ascend950").backend_type is BackendType.Ascend950
    with pytest.raises(ValueError, match="platform 'a2a3sim' targets Ascend910B, but backend_type is Ascend950"):
        RunConfig(platform="a2a3sim", backend_type="Ascend950")
    with pytest.raises(ValueError, match="unknown backend_type 'Ascend910'; allowed: BackendType.Ascend910B, "
                                         "BackendType.Ascend950"):
        RunConfig(backend_type="Ascend910")


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
        cp(a, b, c, config=RunConfig(dump_passes=True, strategy="DebugTileOptimization"))
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


def _assert_located_at(err, line: int) -> None:
    """`err` renders at this file's `line` and its traceback holds no PyPTO frame but the one that
    re-raises it (`errors.user_facing`)."""
    import os
    import traceback

    import pypto

    assert (err.span.filename, err.span.begin_line) == (__file__, line)
    assert str(err).startswith(f"{__file__}:{line}:")
    package = os.path.dirname(os.path.abspath(pypto.__file__))
    frames = [f.filename for f in traceback.extract_tb(err.__traceback__)]
    assert not any(f.startswith(package) and not f.endswith("errors.py") for f in frames), frames


def test_a_misspelled_field_names_the_nearest_one_at_the_call() -> None:
    """A user trial: `RunConfig(sim_replya=False)` gave the dataclass's bare TypeError from inside
    its generated __init__. It is an ArgumentTypeError (still a TypeError) at the user's call,
    naming the keyword and the nearest field; likewise for DistributedConfig."""
    from pypto.core.errors import ArgumentTypeError
    from pypto.runtime.config import DistributedConfig

    with pytest.raises(ArgumentTypeError) as e:
        RunConfig(sim_replya=False)
    _assert_located_at(e.value, _call_line(-1))
    assert isinstance(e.value, TypeError)
    assert e.value.message.startswith("RunConfig has no field 'sim_replya'; did you mean 'sim_replay'? (its "
                                      "fields: platform, device_id, rtol, atol, ")
    with pytest.raises(ArgumentTypeError, match=r"RunConfig has no field 'colour' \(its fields: platform, "):
        RunConfig(colour=1)                                   # nothing near: no guess
    with pytest.raises(ArgumentTypeError) as e:
        DistributedConfig(device_id=[0, 1])
    _assert_located_at(e.value, _call_line(-1))
    assert e.value.message.startswith("DistributedConfig has no field 'device_id'; did you mean 'device_ids'?")


BOOL_FIELDS = ("dump_passes", "save_kernels", "codegen_only", "enable_dep_gen", "enable_scope_stats", "sanitize",
               "auto_deps", "sim_replay")


@pytest.mark.parametrize("name", BOOL_FIELDS)
@pytest.mark.parametrize("value", ["no", "false", "True", 2, -1, None, 0.5])
def test_every_bool_field_rejects_what_is_not_true_or_false(name: str, value) -> None:
    """A user trial: `RunConfig(sim_replay="no")` and `sanitize="no"` were accepted (a non-empty
    string is truthy: both turned the feature on) while `enable_dep_gen="false"` was rejected.
    Every bool field takes True / False (or 0 / 1) only."""
    from pypto.core.errors import ArgumentValueError

    with pytest.raises(ArgumentValueError) as e:
        RunConfig(**{name: value})
    _assert_located_at(e.value, _call_line(-1))
    assert e.value.message == f"RunConfig.{name} must be True or False, got {value!r}"


@pytest.mark.parametrize("name", BOOL_FIELDS)
def test_bool_fields_take_true_false_zero_and_one(name: str) -> None:
    from pypto.runtime.config import _BOOL_FIELDS

    assert set(_BOOL_FIELDS) == set(BOOL_FIELDS)     # derived from the annotations: none is missed
    for value in (True, False, 0, 1):
        got = getattr(RunConfig(**{name: value}), name)
        assert got is bool(value)


@pytest.mark.parametrize("kwargs, message", [
    (dict(platform="a3sim"), "unknown platform 'a3sim'; did you mean 'a2a3sim'? (valid platforms are 'a2a3sim', "
                             "'a2a3', 'a5sim', 'a5')"),
    (dict(platform="npu"), "unknown platform 'npu' (valid platforms are 'a2a3sim', 'a2a3', 'a5sim', 'a5')"),
    (dict(ring_heap=1000), "RunConfig.ring_heap must be a power of 2 >= 1024 (bytes of tensors in flight) or a "
                           "list of 4 such values (one per scope depth), got 1000"),
    (dict(ring_task_window=[16, 16]), "RunConfig.ring_task_window must be a power of 2 >= 4"),
    (dict(device_id=None), "RunConfig.device_id must be an int >= 0, got None"),
    (dict(rtol="tight"), "RunConfig.rtol and RunConfig.atol must be numbers >= 0, got rtol='tight', atol=1e-05"),
    (dict(enable_pmu=3), "RunConfig.enable_pmu must be an int level in 0..2"),
    (dict(diagnostic_phase="later"), "unknown diagnostic_phase 'later'; allowed: "),
])
def test_bad_values_are_argument_value_errors_at_the_call(kwargs, message) -> None:
    """A user trial: a bad platform or ring size raised a ValueError whose traceback ended inside
    config.py / sim/rings.py. Each bad value is an ArgumentValueError (still a ValueError) located
    at the call, naming the field and the allowed values."""
    from pypto.core.errors import ArgumentValueError

    with pytest.raises(ArgumentValueError) as e:
        RunConfig(**kwargs)
    _assert_located_at(e.value, _call_line(-1))
    assert isinstance(e.value, ValueError) and e.value.message.startswith(message), e.value.message


def test_a_bad_distributed_config_value_is_located_at_the_call() -> None:
    from pypto.core.errors import ArgumentValueError
    from pypto.runtime.config import DistributedConfig

    with pytest.raises(ArgumentValueError) as e:
        DistributedConfig(visibility="strong")
    _assert_located_at(e.value, _call_line(-1))
    assert e.value.message == "DistributedConfig.visibility must be 'sc' or 'weak', got 'strong'"
