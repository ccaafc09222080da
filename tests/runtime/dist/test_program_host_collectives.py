"""Host-level collectives (SPEC §8): each call becomes a builtin chip program (from
`pypto.runtime.dist.builtin.builtin_program`) compiled under `next_levels/` and dispatched to every
rank. The collective op and its builtin program are stand-ins here (the real ones belong to the
collectives); what is tested is the compile side: discovery, one build per distinct call, the
driver's per-rank dispatch, and the located error when the builtin programs are missing."""

import os
import sys
import types

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import seq_runtime  # noqa: E402

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.core.enums import ReduceOp  # noqa: E402
from pypto.core.errors import CompileError  # noqa: E402
from pypto.ir.types import DistributedTensorType  # noqa: E402
from pypto.language.op_wrappers import OpRef  # noqa: E402
from pypto.ops import registry  # noqa: E402
from pypto.ops.cost import free  # noqa: E402

FAKE = "pld.test_host_barrier"


def _fake_rule(args, attrs):
    t = args[0].type
    if not isinstance(t, DistributedTensorType):
        raise registry.OpTypeError("argument 'signal' must be a pld.DistributedTensor")
    return t


def _builtin_program(name, arg_types, attrs):
    """A builtin chip program for FAKE: an Orchestration function taking the signal window."""
    assert name == FAKE and attrs == {"rounds": 2}
    shape = ", ".join(str(d.value) for d in arg_types[0].shape)
    text = f"""
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class builtin_test_barrier:
    @pl.function(type=pl.FunctionType.Orchestration)
    def builtin_test_barrier(self, signal: pl.InOut[pld.DistributedTensor[[{shape}], pl.INT32]]):
        return
"""
    return pl.parse(text)


@pytest.fixture
def fake_collective(monkeypatch):
    spec = registry.OpSpec(FAKE, ("signal",), _fake_rule, None, attrs={"rounds": 1},
                           traits=frozenset({"host", "collective"}), cost=free(), family="distributed",
                           doc="A test stand-in for a host-level collective.")
    monkeypatch.setitem(registry._REGISTRY, FAKE, spec)
    monkeypatch.setattr(pld, "test_host_barrier", OpRef(FAKE), raising=False)
    builtin = types.ModuleType("pypto.runtime.dist.builtin")
    builtin.builtin_program = _builtin_program
    _install_builtin(monkeypatch, builtin)
    return builtin


def _install_builtin(monkeypatch, module):
    """Stand `module` in for pypto.runtime.dist.builtin (None: importing it fails), also when the real
    module was imported earlier in this process (then it is an attribute of the package)."""
    import pypto.runtime.dist as dist_pkg

    monkeypatch.setitem(sys.modules, "pypto.runtime.dist.builtin", module)
    if module is None:
        monkeypatch.delattr(dist_pkg, "builtin", raising=False)
    else:
        monkeypatch.setattr(dist_pkg, "builtin", module, raising=False)


def _host_program():
    @pl.jit.host
    def host(xs: pl.Tensor[[2, 4], pl.FP32]):
        sig = pld.window(pld.alloc_window_buffer([2, 1], dtype=pl.INT32), [2, 1], dtype=pl.INT32)
        sig = pld.test_host_barrier(sig, rounds=2)
        pld.test_host_barrier(sig, rounds=2)
        return xs

    return host.specialize()


def test_host_collective_dispatches_its_builtin_program_to_every_rank(fake_collective, tmp_path, monkeypatch):
    cp = ir.compile(_host_program(), tmp_path, skip_ptoas=True, dump_passes=False)
    assert list(cp.chip_programs) == ["builtin_test_barrier"]  # one build serves both calls
    assert (tmp_path / "next_levels" / "builtin_test_barrier" / "compiled_meta.json").is_file()
    text = (tmp_path / "orchestration" / "host_orch.py").read_text()
    assert "    sig = _dispatch_all(rt, 'builtin_test_barrier', [sig], sig)\n" \
           "    _dispatch_all(rt, 'builtin_test_barrier', [sig], sig)\n    rt.sync()\n" in text
    made = seq_runtime.install(monkeypatch, 3)
    x = torch.randn(2, 4)
    assert cp(x) is x
    assert made[0].log == [("builtin_test_barrier", r) for r in (0, 1, 2)] * 2


def test_host_collective_without_builtin_programs_is_a_located_error(fake_collective, tmp_path, monkeypatch):
    _install_builtin(monkeypatch, None)  # `from . import builtin` fails
    prog = _host_program()
    with pytest.raises(CompileError) as ei:
        ir.compile(prog, tmp_path, skip_ptoas=True, dump_passes=False)
    assert ei.value.message.startswith(f"host-level collective '{FAKE}' needs the builtin collective chip programs "
                                       f"(pypto.runtime.dist.builtin)")
    assert ei.value.span.begin_line == _host_program.__code__.co_firstlineno + 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


# ---- a collective whose signal the host call leaves out ------------------------------------------
REDUCE = "pld.test_host_reduce"


def _reduce_program(name, arg_types, attrs):
    assert name == REDUCE and len(arg_types) == 1 and attrs == {"op": ReduceOp.Max}
    shape = ", ".join(str(d.value) for d in arg_types[0].shape)
    return pl.parse(f"""
import pypto.language as pl
import pypto.language.distributed as pld

NR = pl.dynamic("NR")


@pl.program
class builtin_test_reduce:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.InOut[pld.DistributedTensor[[{shape}], pl.FP32]],
             signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]):
        return
""")


@pytest.fixture
def fake_reduce(monkeypatch):
    spec = registry.OpSpec(REDUCE, ("src", "signal"), lambda args, attrs: args[0].type, None,
                           attrs={"op": ReduceOp.Sum}, optional=("signal",),
                           traits=frozenset({"host", "collective"}), cost=free(), family="distributed",
                           doc="A test stand-in for a host-level collective with an optional signal.")
    monkeypatch.setitem(registry._REGISTRY, REDUCE, spec)
    monkeypatch.setattr(pld, "test_host_reduce", OpRef(REDUCE), raising=False)
    builtin = types.ModuleType("pypto.runtime.dist.builtin")
    builtin.builtin_program = _reduce_program
    builtin.implicit_signal = lambda name, arg_types: len(arg_types) == 1
    builtin.signal_shape = lambda name, attrs, world: [world, 1]
    _install_builtin(monkeypatch, builtin)


def test_host_collective_without_a_signal_gets_the_drivers_own(fake_reduce, tmp_path, monkeypatch):
    @pl.jit.host
    def host(xs: pl.Tensor[[2, 4], pl.FP32]):
        acc = pld.window(pld.alloc_window_buffer(64), [1, 16], dtype=pl.FP32)
        pld.test_host_reduce(acc, op=pld.ReduceOp.Max)
        pld.test_host_reduce(acc, op=pld.ReduceOp.Max)
        return xs

    cp = ir.compile(host.specialize(), tmp_path, skip_ptoas=True, dump_passes=False)
    text = (tmp_path / "orchestration" / "host_orch.py").read_text()
    assert "from pypto.core import enums as _enums\n" in text
    assert "    _signal_0 = _signal_window(rt, 'pld.test_host_reduce', {'op': _enums.ReduceOp.Max})\n" \
           "    acc = rt.window(rt.alloc_window_buffer(_pld.window_nbytes(64, None)), [1, 16], 'FP32')\n" \
           "    _dispatch_all(rt, 'builtin_test_reduce', [acc, _signal_0], acc)\n" \
           "    _dispatch_all(rt, 'builtin_test_reduce', [acc, _signal_0], acc)\n" in text
    made = seq_runtime.install(monkeypatch, 3)
    cp(torch.zeros(2, 4))
    assert [b.nbytes for b in made[0].windows] == [3 * 4, 64]  # the signal first: [world, 1] INT32
    assert made[0].log == [("builtin_test_reduce", r) for r in (0, 1, 2)] * 2
