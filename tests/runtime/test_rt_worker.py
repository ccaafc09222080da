"""The "Running on Device" API (User Manual "JITFunction.compile()"; SPEC §7): ChipWorker, resident
DeviceTensors, registered handles."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, CompiledProgram, DeviceTensor, KernelHandle, RunConfig


@pl.jit
def axpy(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(x, 2.0), w)
    return out


@pl.jit
def accumulate(x: pl.Tensor, acc: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc[:] = pl.add(acc, x)
    return acc


def test_init_close_idempotent_and_context_manager() -> None:
    w = ChipWorker(config=RunConfig(platform="a2a3sim"))
    assert not w.is_open and "not initialised" in repr(w)
    assert w.init() is w and w.init() is w and w.is_open
    dev = w.device
    w.init()
    assert w.device is dev            # init() again keeps the open chip
    w.close()
    w.close()
    assert not w.is_open and "closed" in repr(w)
    with pytest.raises(RuntimeError, match="closed; call init"):
        w.alloc_tensor([4], torch.float32)
    w.init()
    assert w.is_open and w.device is not dev
    w.close()
    with ChipWorker(config=RunConfig(platform="a5sim")) as w5:
        assert w5.is_open and w5.device.backend.name == "Ascend950"
    assert not w5.is_open
    with pytest.raises(TypeError, match="RunConfig"):
        ChipWorker(config="a2a3sim")


def test_alloc_free_and_device_tensor_contents() -> None:
    with ChipWorker() as w:
        z = w.alloc_tensor((2, 3), torch.float16)
        assert isinstance(z, DeviceTensor) and z.shape == (2, 3) and z.dtype == torch.float16
        assert torch.equal(z.to_host(), torch.zeros(2, 3, dtype=torch.float16))
        init = torch.arange(6.0).reshape(2, 3)
        v = w.alloc_tensor([2, 3], pl.FP32, init=init)
        init.zero_()                                     # the device copy is independent
        assert torch.equal(v.to_host(), torch.arange(6.0).reshape(2, 3))
        v.copy_from(torch.ones(2, 3))
        assert torch.equal(v.to_host(), torch.ones(2, 3))
        with pytest.raises(ValueError, match="init has shape"):
            w.alloc_tensor([3, 2], torch.float32, init=torch.ones(2, 3))
        with pytest.raises(TypeError, match="dtype"):
            w.alloc_tensor([2], "float32")
        w.free_tensor(v)
        assert v.freed and "freed" in repr(v)
        with pytest.raises(RuntimeError, match="was freed"):
            v.to_host()
        with pytest.raises(ValueError, match="already freed"):
            w.free_tensor(v)
        with ChipWorker() as other, pytest.raises(ValueError, match="not allocated by this worker"):
            other.free_tensor(z)
    assert z.freed                                       # close() frees what is left


def test_manual_workflow_with_resident_weights_and_a_handle() -> None:
    x, wt, out = torch.randn(32, 64), torch.randn(32, 64), torch.zeros(32, 64)
    compiled = axpy.compile(x, wt, out)
    assert axpy.compile(x, wt, out) is compiled          # the JIT cache holds the same object
    assert torch.equal(out, torch.zeros(32, 64))          # compile() runs nothing
    worker = ChipWorker(config=RunConfig(platform="a2a3sim"))
    w_dev = worker.alloc_tensor(wt.shape, wt.dtype, init=wt)
    handle = worker.register(compiled)
    assert isinstance(handle, KernelHandle) and handle.compiled is compiled
    for _ in range(3):
        xb, ob = torch.randn(32, 64), torch.zeros(32, 64)
        assert handle(xb, w_dev, ob) is ob
        torch.testing.assert_close(ob, 2 * xb + wt)
    assert torch.equal(w_dev.to_host(), wt)                # an In tensor stays as it was
    ob2 = torch.zeros(32, 64)
    worker.run(compiled, x, w_dev, ob2)
    torch.testing.assert_close(ob2, 2 * x + wt)
    worker.free_tensor(w_dev)
    with pytest.raises(RuntimeError, match="freed"):
        handle(x, w_dev, ob2)
    worker.close()


def test_out_results_stay_resident_across_calls() -> None:
    x = torch.randn(16, 32)
    with ChipWorker() as w:
        acc = w.alloc_tensor(x.shape, x.dtype)
        compiled = accumulate.compile(x, acc)
        handle = w.register(compiled)
        for _ in range(3):
            assert handle(x, acc) is acc                  # a DeviceTensor comes back as itself
        torch.testing.assert_close(acc.to_host(), 3 * x)
        # a @pl.jit call and a plain CompiledProgram call accept it too, in place
        accumulate(x, acc)
        compiled(x, acc)
        torch.testing.assert_close(acc.to_host(), 5 * x)


def test_run_checks_programs_and_tensor_owners() -> None:
    x, wt, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    compiled = axpy.compile(x, wt, out)
    with ChipWorker(config=RunConfig(platform="a5sim")) as w5:
        with pytest.raises(ValueError, match="compiled for Ascend910B"):
            w5.register(compiled)
    with ChipWorker() as a, ChipWorker() as b:
        t = b.alloc_tensor(wt.shape, wt.dtype, init=wt)
        with pytest.raises(ValueError, match="argument 'w'.*another ChipWorker"):
            a.run(compiled, x, t, out)
        with pytest.raises(TypeError, match=r"axpy.compile\(\*sample_args\)"):
            a.register(axpy)
        with pytest.raises(TypeError, match="'w'.*float16"):
            a.run(compiled, x, a.alloc_tensor(wt.shape, torch.float16), out)


def test_real_npu_platform_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    w = ChipWorker(config=RunConfig(platform="a5"))
    with pytest.raises(RuntimeError) as e:
        w.init()
    msg = str(e.value)
    assert "CANN" in msg and "ASCEND_HOME_PATH" in msg and "'a5sim'" in msg
    assert not w.is_open
    with pytest.raises(RuntimeError, match="CANN"):
        w.alloc_tensor([2], torch.float32)


def test_compiled_program_exposes_the_spec_fields(tmp_path) -> None:
    x, wt, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    compiled = axpy.compile(x, wt, out)
    assert isinstance(compiled, CompiledProgram) and callable(compiled)
    for name in ("output_dir", "program", "platform", "output_indices", "chip_callable", "runtime_name",
                 "runtime_config", "build_orch_args", "build_call_config"):
        assert hasattr(compiled, name), name
    assert compiled.platform == "a2a3sim" and compiled.output_indices == [2]
    assert isinstance(compiled.program, ir.Program)
    with ChipWorker() as w:
        d = w.alloc_tensor(wt.shape, wt.dtype, init=wt)
        args = compiled.build_orch_args(x, d, out)
        assert [a.name for a in args] == ["x", "w", "out"] and args[1].value is d.tensor


def test_a_tensor_of_a_closed_worker_says_the_worker_was_closed() -> None:
    w = ChipWorker()
    t = w.alloc_tensor([16, 32], torch.float32, init=torch.ones(16, 32))
    freed = w.alloc_tensor([4], torch.float32)
    w.free_tensor(freed)
    w.close()
    assert t.freed and t.release_reason == "closed" and "worker closed" in repr(t)
    for use in (t.to_host, t.numel, lambda: t.copy_from(torch.ones(16, 32))):
        with pytest.raises(RuntimeError) as e:
            use()
        msg = str(e.value)
        assert "its ChipWorker was closed" in msg and "init()" in msg and "alloc_tensor" in msg
        assert "was freed" not in msg
    with pytest.raises(RuntimeError, match="was freed with free_tensor"):
        freed.to_host()                                  # a tensor freed explicitly says so
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    compiled = axpy.compile(x, x, out)
    w.init()
    with pytest.raises(RuntimeError, match="its ChipWorker was closed"):
        w.run(compiled, x, t, out)
    with pytest.raises(ValueError, match="already released: its ChipWorker was closed"):
        w.free_tensor(t)
    w.close()


def test_run_accepts_a_registered_handle_and_keyword_arguments() -> None:
    x, wt, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    compiled = axpy.compile(x, wt, out)
    with ChipWorker() as w, ChipWorker() as other:
        handle = w.register(compiled)
        assert w.run(handle, x, wt, out) is out
        torch.testing.assert_close(out, 2 * x + wt)
        out2 = torch.zeros(16, 32)
        assert other.run(handle, x, wt, out=out2) is out2              # another worker's handle too
        torch.testing.assert_close(out2, 2 * x + wt)
        assert other.register(handle).compiled is compiled
        out3 = torch.zeros(16, 32)
        handle(out=out3, w=wt, x=x)
        torch.testing.assert_close(out3, 2 * x + wt)
        with pytest.raises(TypeError, match="'axpy' got multiple values for argument 'x'"):
            handle(x, wt, out, x=x)
        with pytest.raises(TypeError, match="expected a CompiledProgram or a KernelHandle, got str"):
            w.run("axpy", x, wt, out)


def test_a_handle_takes_its_workers_config_and_says_so_for_a_config_argument() -> None:
    x, wt, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    compiled = axpy.compile(x, wt, out)
    with ChipWorker(config=RunConfig(sim_replay=False)) as w:
        handle = w.register(compiled)
        for call in (lambda: handle(x, wt, out, config=RunConfig()),
                     lambda: w.run(handle, x, wt, out, config=RunConfig())):
            with pytest.raises(TypeError, match=r"a ChipWorker runs every program with its own RunConfig: "
                                                r"pass it as ChipWorker\(config=\.\.\.\)"):
                call()
        handle(x, wt, out)
        assert not compiled.last_run.replayed and w.device.run_plans.replays == 0
    torch.testing.assert_close(out, 2 * x + wt)
