"""Compile generated host orchestration C++ (used by the codegen tests).

`STUB` is a declaration-only header of the runtime API the orchestration code is written against
(`pto_orchestration_api.h`): what the generated text may call, and nothing else. `compiles_as_cpp`
runs the C++ compiler with `-fsyntax-only` over generated files against it (skipping when no C++
compiler is installed), so the text is valid C++, not only plausible.

Facts the stub fixes (and the generator honours):
- `Tensor` is a copyable, default-constructible *handle* (never a tensor's data): `Tensor t;`
  declares an empty handle and `t = u;` makes it name the same tensor, so a value computed inside a
  block may be declared before it and assigned inside.
- A tensor's dimension is read with `x.shape(axis)` (and a stride with `x.stride(axis)`), both for
  the `tensor.dim` op and for the dynamic dimensions passed after a kernel's parameters; there is
  no second spelling.
- Tasks (SPEC §13): `submit_*_task` returns the task's `TaskId`, which `add_dep` accepts as well
  as a tensor; `PTO2_SCOPE(rt, PTO2ScopeMode::MANUAL)` opens a MANUAL scope.
- Host ops without an OpSpec `host` form are free functions `<namespace>_<op>(operands...,
  attrs...)`; `HOST_FUNCTIONS` lists those the header declares.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pypto.core.dtype import ALL_DTYPES

__all__ = ["STUB", "HOST_FUNCTIONS", "cxx", "compiles_as_cpp"]

_HOST_OPS = """Tensor tensor_create(std::initializer_list<int64_t> shape, DataType dt);
Tensor tensor_full(std::initializer_list<int64_t> shape, double value, DataType dt);
Tensor tensor_ci(int64_t start, std::initializer_list<int64_t> shape, DataType dt, bool descending);
Tensor tensor_tri(std::initializer_list<int64_t> shape, int64_t diagonal, DataType dt, bool upper);
Tensor tensor_slice(const Tensor& src, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> offset);
Tensor tensor_slice(const Tensor& src, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> offset,
                    std::initializer_list<int64_t> valid_shape);
Tensor tensor_reshape(const Tensor& x, std::initializer_list<int64_t> shape);
Tensor tensor_view(const Tensor& x, std::initializer_list<int64_t> shape);
Tensor tensor_reinterpret_view(const Tensor& x, DataType dt);
Tensor tensor_transpose_view(const Tensor& x);
Tensor tensor_set_validshape(const Tensor& x, std::initializer_list<int64_t> valid_shape);
double tensor_read(const Tensor& x, std::initializer_list<int64_t> indices);  // waits for the writers
Tensor tensor_write(const Tensor& x, std::initializer_list<int64_t> indices, double value);
"""

HOST_FUNCTIONS = frozenset(line.split("(", 1)[0].split()[-1] for line in _HOST_OPS.splitlines()
                           if line.startswith(("Tensor ", "double ")))

STUB = """#pragma once
#include <cstdint>
#include <initializer_list>
struct PTO2Runtime;
enum class DataType { DTYPES };
enum class MemorySpace { DDR, Vec, Mat, Left, Right, Acc, Bias };
// A handle naming a DDR tensor (or a view of one): copyable, default-constructible (empty).
class Tensor {
 public:
  Tensor();
  Tensor(const Tensor&);
  Tensor& operator=(const Tensor&);
  ~Tensor();
  int64_t shape(int axis) const;   // the one way to read a dimension
  int64_t stride(int axis) const;
};
Tensor make_external_tensor(uint64_t addr, std::initializer_list<int64_t> shape, DataType dt);
template <typename T> T scalar_arg(uint64_t bits);
// The id of a submitted task (SPEC §13): copyable, default-constructible (no task).
struct TaskId { TaskId(); TaskId(const TaskId&); TaskId& operator=(const TaskId&); };
struct TaskArgs {
  // no_dep: the argument takes no part in dependency tracking (no_dep_args=)
  void add_input(const Tensor&, bool no_dep = false); void add_output(const Tensor&, bool no_dep = false);
  void add_inout(const Tensor&, bool no_dep = false);
  template <typename T> void add_scalar(T);
  void add_block_idx_scalar();  // the block index of an SPMD launch, as a scalar argument
  void add_dep(const Tensor&);  // explicit dependency: wait for the earlier writers of a tensor
  void add_dep(const TaskId&);  // explicit dependency: wait for that task
  void set_name(const char*); void set_allow_early_resolve(bool);
  void set_block_num(int32_t); void set_sync_start(bool);  // an SPMD launch of N blocks
};
void push_task_deps(PTO2Runtime*, std::initializer_list<Tensor> tensors);
void pop_task_deps(PTO2Runtime*);
void push_block_num(PTO2Runtime*, int32_t blocks, bool sync_start = false);  // every task until pop: N blocks
void pop_block_num(PTO2Runtime*);
TaskId last_task_id(PTO2Runtime*);
TaskId submit_aiv_task(PTO2Runtime*, int32_t func_id, const TaskArgs&);
TaskId submit_aic_task(PTO2Runtime*, int32_t func_id, const TaskArgs&);
struct MixedPart { int32_t func_id; const TaskArgs& args; };
void submit_mixed_task(PTO2Runtime*, std::initializer_list<MixedPart> parts);
enum class MixedSplit { NONE, UP_DOWN, LEFT_RIGHT };
struct MixedConfig { MixedSplit split; int32_t vector_cores; int32_t c2v_slots; int64_t c2v_slot_bytes;
                     int32_t v2c_slots; int64_t v2c_slot_bytes; int64_t gm_bytes; };
void submit_mixed_task(PTO2Runtime*, std::initializer_list<MixedPart> parts, const MixedConfig&);
enum class PTO2ScopeMode { AUTO, MANUAL };  // MANUAL: no derived dependencies, only add_dep
struct PTO2ScopeGuard { explicit PTO2ScopeGuard(PTO2Runtime*, PTO2ScopeMode = PTO2ScopeMode::AUTO); ~PTO2ScopeGuard(); };
#define PTO2_SCOPE(...) if (PTO2ScopeGuard pto2_scope_guard{__VA_ARGS__}; true)
""".replace("DTYPES", ", ".join(d.name for d in ALL_DTYPES)) + _HOST_OPS


def cxx() -> str:
    """The C++ compiler to use; skips the calling test when none is installed."""
    found = shutil.which("g++") or shutil.which("clang++")
    if found is None:
        pytest.skip("no C++ compiler")
    return found


def compiles_as_cpp(text: str | list[Path], tmp_path: Path) -> None:
    """Compile generated C++ — one text, or several files in one compiler run — with `-fsyntax-only`
    against `STUB`; fails with the compiler's messages (skips when no C++ compiler is installed)."""
    compiler = cxx()
    (tmp_path / "pto_orchestration_api.h").write_text(STUB)
    if isinstance(text, str):
        src = tmp_path / "orch.cpp"
        src.write_text(text)
        files = [src]
    else:
        files = list(text)
    assert files
    r = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-variable",
                        "-Wno-unused-but-set-variable", "-I", str(tmp_path), *map(str, files)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
