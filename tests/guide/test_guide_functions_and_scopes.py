"""Language Guide: Programs and Functions, the @pl.jit family, InCore scopes, Memory and Data
Movement, Compilation — every example that is not distributed, run where it computes values."""

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import ParserSyntaxError

SCALE = 2.0  # a module global used inside kernel bodies


@pl.function(type=pl.FunctionType.InCore)
def compute_kernel(x: pl.Tensor[[64], pl.FP32], out: pl.Out[pl.Tensor[[64], pl.FP32]]) -> pl.Tensor[[64], pl.FP32]:
    t = pl.load(x, [0], [64])
    out = pl.store(pl.mul(t, SCALE), [0], out)
    return out


def test_function_types():
    @pl.function(type=pl.FunctionType.Orchestration)
    def task_graph(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        return x

    @pl.function
    def my_func(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        return x

    assert compute_kernel.func_type is pl.FunctionType.InCore
    assert task_graph.func_type is pl.FunctionType.Orchestration
    assert my_func.func_type is pl.FunctionType.Opaque


@pl.program
class MyProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[64], pl.FP32],
               out: pl.Out[pl.Tensor[[64], pl.FP32]]) -> pl.Tensor[[64], pl.FP32]:
        t = pl.load(x, [0], [64])
        out = pl.store(pl.add(t, 1.0), [0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64], pl.FP32],
             out: pl.Out[pl.Tensor[[64], pl.FP32]]) -> pl.Tensor[[64], pl.FP32]:
        result = self.kernel(x, out)   # cross-function call
        return result


def test_program_rules_and_cross_function_call():
    assert isinstance(MyProgram, ir.Program)
    assert MyProgram.name == "MyProgram"
    assert MyProgram.function_names == ("kernel", "main")
    assert [p.name for p in MyProgram.get_function("kernel").params] == ["x", "out"]  # self stripped
    x, out = torch.randn(64), torch.zeros(64)
    ir.compile(MyProgram, dump_passes=False)(x, out)
    torch.testing.assert_close(out, x + 1.0)


def test_method_without_self_is_rejected():
    with pytest.raises(ParserSyntaxError, match="must take 'self' first"):
        @pl.program
        class Bad:
            @pl.function
            def f(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:  # noqa: N805
                return x


@pl.inline
def normalize(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
    return result


@pl.inline
def normalize_twice(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    y: pl.Tensor[[64], pl.FP32] = normalize(x)   # an inline helper calling another
    return normalize(y)


def test_inline_functions_are_spliced_including_nested():
    @pl.program
    class Prog:
        @pl.function
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = normalize_twice(x)  # body inlined here
            return y

    assert Prog.function_names == ("main",)
    assert Prog.as_python().count("pl.tensor.muls(") == 2
    x = torch.randn(64)
    torch.testing.assert_close(ir.compile(Prog, dump_passes=False)(x), x * 4.0)


@pl.function
def softmax(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    e = pl.exp(x)
    return e


def test_external_function_is_added_to_the_program():
    @pl.program
    class Model:
        @pl.function
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = softmax(x)  # call to external function
            return y

    assert Model.function_names == ("main", "softmax")
    text = Model.as_python()
    assert "self.softmax(x)" in text
    ir.assert_structural_equal(pl.parse(text), Model)


def test_globals_and_closure_constants_inside_kernels():
    factor = 3.0
    rows = 16

    @pl.function
    def f(x: pl.Tensor[[rows, 8], pl.FP32]) -> pl.Tensor[[rows, 8], pl.FP32]:
        y = pl.mul(x, factor)
        z = pl.mul(y, SCALE)
        return z

    x = torch.randn(16, 8)
    torch.testing.assert_close(ir.compile(ir.Program("f", (f,)), dump_passes=False)(x), x * 6.0)
    x2, out = torch.randn(64), torch.zeros(64)
    ir.compile(ir.Program("k", (compute_kernel,)), dump_passes=False)(x2, out)
    torch.testing.assert_close(out, x2 * SCALE)


# ---- the @pl.jit family ----------------------------------------------------------------------

@pl.jit.incore
def tile_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [16, 32])
    tb = pl.load(b, [0, 0], [16, 32])
    out = pl.store(pl.add(ta, tb), [0, 0], out)
    return out


@pl.jit.opaque
def add_then_scale(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = tile_add(a, b, out)   # discovered transitively
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(out, 2.0)
    return out


@pl.jit.inline(auto_scope=False)
def layer(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.scope():                   # lands in the caller after inlining
        out = tile_add(a, b, out)
    return out


@pl.jit(auto_scope=False)              # Orchestration entry
def orchestrator(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.scope():
        out = tile_add(a, b, out)
    return out


def test_jit_entry_with_manual_scope_and_incore_subfunction():
    a, b, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    orchestrator(a, b, out)
    torch.testing.assert_close(out, a + b)
    prog = orchestrator.specialize(a, b, out)
    assert prog.function_names == ("orchestrator", "tile_add")
    assert not prog.get_function("orchestrator").auto_scope
    assert "with pl.scope():" in prog.as_python()


def test_jit_opaque_and_inline_and_transitive_discovery():
    @pl.jit
    def entry(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
        out = add_then_scale(a, b, out)
        out2 = layer(a, b, out2)
        return out, out2

    a, b = torch.randn(16, 32), torch.randn(16, 32)
    out, out2 = torch.zeros(16, 32), torch.zeros(16, 32)
    entry(a, b, out, out2)
    torch.testing.assert_close(out, (a + b) * 2.0)
    torch.testing.assert_close(out2, a + b)
    prog = entry.specialize(a, b, out, out2)
    kinds = {f.name: f.func_type for f in prog.functions}
    assert kinds["add_then_scale"] is pl.FunctionType.Opaque and kinds["tile_add"] is pl.FunctionType.InCore
    assert "layer" not in kinds  # inline bodies are spliced


def test_plain_jit_does_not_discover_other_jit_entries():
    @pl.jit
    def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out

    @pl.jit
    def outer(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = inner(a, out)
        return out

    with pytest.raises(ParserSyntaxError, match="only @pl.jit.host discovers them"):
        outer(torch.randn(8, 8), torch.zeros(8, 8))


def test_jit_host_discovers_chip_entries_and_rejects_level():
    @pl.jit
    def chip_orch(inp: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(inp, 3.0)
        return out

    @pl.jit.host
    def host_orch(inputs: pl.Tensor[[1, 16, 32], pl.FP32], outputs: pl.Out[pl.Tensor[[1, 16, 32], pl.FP32]]):
        for r in pl.range(pld.world_size()):       # one rank without a DistributedConfig
            chip_orch(inputs[r], outputs[r], device=r)
        return outputs

    x, y = torch.randn(1, 16, 32), torch.zeros(1, 16, 32)
    host_orch(x, y)
    torch.testing.assert_close(y, x * 3.0)
    prog = host_orch.specialize(x, y)
    host = prog.get_function("host_orch")
    assert host.level is pl.Level.HOST and host.role is pl.Role.Orchestrator
    with pytest.raises(TypeError, match="level="):
        pl.jit.host(level=pl.Level.HOST)


@pytest.mark.parametrize("decorator", ["incore", "opaque"])
def test_auto_scope_false_rejected_on_incore_and_opaque(decorator):
    with pytest.raises(TypeError, match="auto_scope"):
        getattr(pl.jit, decorator)(auto_scope=False)


# ---- InCore scopes ---------------------------------------------------------------------------

@pytest.mark.parametrize("opts", [
    "",
    ", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]",
    ", optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]",
    ", optimizations=[pl.cross_core_slot(slot_num=4), pl.split(pl.SplitMode.LEFT_RIGHT)]",
])
def test_incore_scopes_parse_print_round_trip_and_run(opts):
    src = f'''
import pypto.language as pl

@pl.function(type=pl.FunctionType.Orchestration)
def f(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP{opts}):
        y: pl.Tensor[[64], pl.FP32] = pl.add(x, x)
    return y
'''
    fn = pl.parse(src)
    text = fn.as_python()
    if opts:
        assert opts.split("=", 1)[1] in text
    ir.assert_structural_equal(pl.parse(text), fn)
    x = torch.randn(64)
    torch.testing.assert_close(ir.compile(ir.Program("f", (fn,)), dump_passes=False)(x), x + x)


# ---- memory and data movement ----------------------------------------------------------------

def test_data_movement_operations():
    @pl.function(type=pl.FunctionType.InCore)
    def k(tensor: pl.Tensor[[64, 64], pl.FP32], output: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
          ) -> pl.Tensor[[64, 64], pl.FP32]:
        tile = pl.load(tensor, [0, 0], [64, 64])                              # DDR → Vec
        tile_l1 = pl.load(tensor, [0, 0], [32, 32], target_memory=pl.Mem.Mat) # DDR → Mat
        tile_l0a = pl.move(tile_l1, target_memory=pl.Mem.Left)                # Mat → Left
        out = pl.store(tile, [0, 0], output)                                  # Tile → DDR
        return out

    types = [s.var.type for s in k.body.stmts if isinstance(s, ir.AssignStmt)]
    assert [t.memory_space for t in types[:3]] == [pl.Mem.Vec, pl.Mem.Mat, pl.Mem.Left]
    x, o = torch.randn(64, 64), torch.zeros(64, 64)
    ir.compile(ir.Program("k", (k,)), dump_passes=False)(x, o)
    torch.testing.assert_close(o, x)


def test_memory_space_alias():
    assert pl.Mem is pl.MemorySpace
    assert [m.name for m in pl.Mem] == ["DDR", "Vec", "Mat", "Left", "Right", "Acc", "Bias"]


# ---- compilation -----------------------------------------------------------------------------

def test_ir_compile_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    output_dir = ir.compile(
        MyProgram,
        output_dir=None,                           # auto-generated if None
        strategy=ir.OptimizationStrategy.Default,  # or DebugTileOptimization
        dump_passes=True,                          # dump IR snapshots under output_dir/passes_dump/
        backend_type=BackendType.Ascend910B,
    )
    out = str(output_dir)
    assert out.startswith(str(tmp_path / "builds" / "MyProgram_"))
    assert (tmp_path / "builds").exists()
    import os

    dumps = sorted(os.listdir(os.path.join(out, "passes_dump")))
    assert dumps[0] == "00_frontend.py" and dumps[1].startswith("01_after_")
    compiled = ir.compile(MyProgram, strategy=ir.OptimizationStrategy.DebugTileOptimization,
                          verification_level=ir.VerificationLevel.ROUNDTRIP, dump_passes=False)
    x, o = torch.randn(64), torch.zeros(64)
    compiled(x, o)
    torch.testing.assert_close(o, x + 1.0)
    with pytest.raises(ValueError, match="unknown optimization strategy"):
        ir.compile(MyProgram, strategy="Fast")


def test_verify_level_from_environment(monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    from pypto.passes.manager import VerificationLevel

    assert VerificationLevel.from_env() is VerificationLevel.ROUNDTRIP
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "paranoid")
    with pytest.raises(ValueError, match="PYPTO_VERIFY_LEVEL"):
        ir.compile(MyProgram, dump_passes=False)


def test_static_print_and_debugging_helpers(capsys, tmp_path):
    @pl.function
    def f(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        y = pl.add(x, 1.0)
        pl.static_print(y)
        pl.static_assert(64 % 16 == 0, "64 splits into 16-element tiles")
        return y

    assert "static_print: y: pl.Tensor[[64], pl.FP32]" in capsys.readouterr().out
    assert "y = pl.tensor.adds(x, 1.0)" in f.as_python(concise=True)
    path = tmp_path / "f.py"
    path.write_text(f.as_python())
    ir.assert_structural_equal(pl.loads(str(path)), f)
