"""Host orchestration codegen (SPEC §5 "Orchestration facts"): entry, task argument lists from the
parameter directions, AIV/AIC queues, runtime scopes, host control flow and helper functions.

Where a C++ compiler is installed, every generated file is also compiled (`-fsyntax-only`) against
a minimal declaration header of the runtime API (`cpp_check.py`), so the text is valid C++ and not
only plausible.
"""

import re

import pytest
import torch
from cpp_check import compiles_as_cpp
from shared_programs import GROUPED_SRC

import pypto.language as pl
from pypto import ir
from pypto.codegen import CodegenError, emit_orchestration
from pypto.core.dtype import FP32, INDEX
from pypto.core.enums import FunctionType, ParamDirection
from pypto.ir import (
    AssignStmt,
    Call,
    ConstInt,
    Function,
    MakeTuple,
    Program,
    ReturnStmt,
    SeqStmts,
    TensorType,
    Var,
)


def test_tile_add_entry_task_args_and_queue(tmp_path, examples_dir):
    import tile_add

    ir.compile(tile_add.TileAdd, output_dir=tmp_path / "b")
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert 'extern "C" void aicpu_orchestration_entry(PTO2Runtime* rt, uint64_t* args, int32_t arg_count) {' in text
    assert "FUNC_ADD_TILES = 0,  // kernels/aiv/add_tiles.pto" in text
    for i, (n, d) in enumerate([("a", "In"), ("b", "In"), ("c", "Out")]):
        assert f"Tensor {n} = make_external_tensor(args[{i}], {{128, 128}}, DataType::FP32);  // {d}" in text
    task = re.search(r"PTO2_SCOPE\(rt\) \{.*?\n  \}", text, re.S).group(0)
    assert re.findall(r"task0\.(\w+)\((\w+)\);", task) == [("add_input", "a"), ("add_input", "b"),
                                                         ("add_output", "c")]
    assert "submit_aiv_task(rt, FUNC_ADD_TILES, task0);" in task
    assert text.count("PTO2_SCOPE(rt)") == 1
    compiles_as_cpp(text, tmp_path)


@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[16, 32], pl.FP32], s: pl.Scalar[pl.FP32],
              y: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        u = pl.load(y, [0, 0], [16, 32])
        v = pl.add(pl.mul(t, s), u)
        y = pl.store(v, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
           c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a1 = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        c0 = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        c = pl.store(c0, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], s: pl.Scalar[pl.FP32], y: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.range(4):
            xs = pl.slice(x, [16, 32], [i * 16, 0])
            ys = pl.slice(y, [16, 32], [i * 16, 0])
            ys = self.scale(xs, s, ys)
        c = self.mm(a, b, c)
        return y


def test_inout_scalar_aic_queue_loop_and_views(tmp_path):
    compiled = ir.compile(Mixed, output_dir=tmp_path / "b")
    x, y, a, b = torch.randn(64, 32), torch.randn(64, 32), torch.randn(16, 16).half(), torch.randn(16, 16).half()
    y0, c = y.clone(), torch.zeros(16, 16)
    compiled(x, 0.5, y, a, b, c)
    torch.testing.assert_close(y, x * 0.5 + y0)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert "float s = scalar_arg<float>(args[1]);  // In" in text
    assert "for (int64_t i = 0; i < 4; i += 1) {" in text
    assert re.search(r"Tensor xs = tensor_slice\(x, \{16, 32\}, \{\(i \* 16\), 0\}\);", text)
    loop = text.split("for (int64_t i", 1)[1].split("\n    }", 1)[0]
    assert re.findall(r"task0\.(\w+)\((\w+)\);", loop) == [("add_input", "xs"), ("add_scalar", "s"),
                                                         ("add_inout", "ys")]
    assert "submit_aiv_task(rt, FUNC_SCALE, task0);" in loop
    assert "submit_aic_task(rt, FUNC_MM, task1);" in text
    assert "FUNC_MM = 0,  // kernels/aic/mm.pto" in text  # kernel ids follow the sorted function order
    assert (tmp_path / "b" / "kernels" / "aic" / "mm.pto").is_file()
    compiles_as_cpp(text, tmp_path)


M = pl.dynamic("M")


@pl.program
class Scoped:
    @pl.function(type=pl.FunctionType.InCore)
    def square(self, a: pl.Tensor[[M, 32], pl.FP32],
               out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[M, 32], pl.FP32]:
        for i in pl.range(0, M, 16):
            t = pl.load(a, [i, 0], [16, 32])
            out = pl.store(pl.mul(t, t), [i, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(self, a: pl.Tensor[[M, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[M, 32], pl.FP32]:
        with pl.scope():
            out = self.square(a, out)
        return out


def test_manual_scope_and_dynamic_dims(tmp_path):
    compiled = ir.compile(Scoped, output_dir=tmp_path / "b")
    a, out = torch.randn(48, 32), torch.zeros(48, 32)
    compiled(a, out)
    torch.testing.assert_close(out, a * a)
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert text.count("PTO2_SCOPE(rt)") == 1 and "automatic" not in text
    assert "if (arg_count != 3) return;" in text
    assert "const int64_t M = static_cast<int64_t>(args[2]);  // dynamic dim" in text
    assert "Tensor a = make_external_tensor(args[0], {M, 32}, DataType::FP32);  // In" in text
    # the kernel's dynamic dimension is passed after its parameters
    assert re.search(r"task0\.add_output\(out\);\n\s*task0\.add_scalar\(a\.shape\(0\)\);", text)
    pto = (tmp_path / "b" / "kernels" / "aiv" / "square.pto").read_text()
    assert "func.func @square(%a: !pto.ptr<f32>, %out: !pto.ptr<f32>, %M: index)" in pto
    compiles_as_cpp(text, tmp_path)


@pl.program
class Helper:
    @pl.function(type=pl.FunctionType.InCore)
    def two(self, a: pl.Tensor[[16, 32], pl.FP32], o1: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
            o2: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 32], pl.FP32]]:
        t = pl.load(a, [0, 0], [16, 32])
        w = pl.load(o2, [0, 0], [16, 32])
        o1 = pl.store(pl.exp(t), [0, 0], o1)
        o2 = pl.store(pl.add(w, t), [0, 0], o2)
        return o1, o2

    @pl.function
    def helper(self, a: pl.Tensor[[16, 32], pl.FP32], o1: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
               o2: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        r1, r2 = self.two(a, o1, o2)
        return r1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], o1: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
             o2: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        tmp = pl.create_tensor([16, 32], dtype=pl.FP32)
        r = self.helper(a, o1, o2)
        return r


def test_helper_functions_tuples_and_creation(tmp_path):
    compiled = ir.compile(Helper, output_dir=tmp_path / "b")
    a, o1, o2 = torch.randn(16, 32), torch.zeros(16, 32), torch.randn(16, 32)
    o20 = o2.clone()
    compiled(a, o1, o2)
    torch.testing.assert_close(o1, torch.exp(a))
    torch.testing.assert_close(o2, o20 + a)
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert not (tmp_path / "b" / "orchestration" / "helper.cpp").exists()
    assert "static Tensor helper(PTO2Runtime* rt, Tensor a, Tensor o1, Tensor o2) {" in text
    helper = text.split("static Tensor helper(PTO2Runtime* rt, Tensor a", 1)[1].split("\n}\n", 1)[0]
    assert "PTO2_SCOPE" not in helper  # helpers run inside their caller's scope
    assert "auto r1_r2_tuple = std::make_tuple(o1, o2);" in helper
    assert "Tensor r1 = std::get<0>(r1_r2_tuple);" in helper and "return r1;" in helper
    assert "Tensor tmp = tensor_create({16, 32}, DataType::FP32);" in text
    assert "Tensor r = helper(rt, a, o1, o2);" in text
    compiles_as_cpp(text, tmp_path)


def test_data_compute_op_in_host_code_is_an_error():
    a, c = Var("a", TensorType((ConstInt(16, INDEX),), FP32)), Var("c", TensorType((ConstInt(16, INDEX),), FP32))
    r = Var("r", c.type)
    main = Function("main", FunctionType.Orchestration, (a, c), (ParamDirection.In, ParamDirection.Out),
                    (c.type,), SeqStmts((AssignStmt(r, Call("tensor.add", (a, a), (), c.type)), ReturnStmt((r,)))))
    with pytest.raises(CodegenError, match=r"orchestration 'main': op 'tensor\.add' computes on data .* InCore"):
        emit_orchestration(main, Program("P", (main,)), {})
    # a host op is fine: spelled generically from its OpSpec
    t = Var("t", c.type)
    ok = Function("main", FunctionType.Orchestration, (a, c), (ParamDirection.In, ParamDirection.Out), (c.type,),
                  SeqStmts((AssignStmt(t, Call("tensor.create", (MakeTuple((ConstInt(16, INDEX),)),),
                                               (("dtype", FP32),), c.type)), ReturnStmt((c,)))))
    assert "Tensor t = tensor_create({16}, DataType::FP32);" in emit_orchestration(ok, Program("P", (ok,)), {})


Grouped = pl.parse(GROUPED_SRC)


def test_group_kernels_are_one_cluster_task(tmp_path):
    text = emit_orchestration(Grouped.get_function("main"), Grouped, {"mm_aic": 0, "exp_aiv": 1})
    assert "FUNC_MM_AIC = 0,  // kernels/aic/mm_aic.pto" in text and "FUNC_EXP_AIV = 1,  // kernels/aiv/exp_aiv.pto" in text
    group = text.split("static Tensor mm_exp(PTO2Runtime* rt, Tensor a", 1)[1].split("\n}\n", 1)[0]
    assert "submit_aic_task" not in group and "submit_aiv_task" not in group
    assert re.findall(r"task\d\.(\w+)\((\w+)\);", group) == [("add_input", "a"), ("add_input", "b"),
                                                          ("add_output", "p"), ("add_input", "p_1"),
                                                          ("add_output", "c")]
    assert "submit_mixed_task(rt, {{FUNC_MM_AIC, task0}, {FUNC_EXP_AIV, task1}});" in group
    assert group.rstrip().endswith("return c_1;")
    compiles_as_cpp(text, tmp_path)
