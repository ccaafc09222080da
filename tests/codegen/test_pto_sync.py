"""The set_flag / wait_flag pairs of the `.pto` (issue 14 item 1, `codegen/pto/sync.py`): derived from
the buffers and pipes the simulator orders ops by, placed around loops so every set has its wait."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from pto_check import check_pto
from shared_programs import load_example

import pypto.language as pl
from pypto import ir
from pypto.codegen.pto import emit_kernel

R, TC = 16, 512
_FLAG = re.compile(r"pto\.(set|wait)_flag\[<(\w+)>, <(\w+)>, <EVENT_ID(\d)>\]")


_add_loop = load_example("double_buffering").add_blocks   # c = a + b, one block per trip


@pl.program
class Straight:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, TC], pl.FP32], c: pl.Out[pl.Tensor[[R, TC], pl.FP32]]) -> pl.Tensor[[R, TC], pl.FP32]:
        t = pl.load(a, [0, 0], [R, TC])
        e = pl.exp(t)
        c = pl.store(e, [0, 0], c)
        return c


def _pto(prog, tmp_path: Path) -> str:
    ir.compile(prog, output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    (path,) = (tmp_path / "kernels").rglob("*.pto")
    text = path.read_text()
    check_pto(text)                 # structure, SSA and a loc on every line, flags included
    return text


def _outline(text: str) -> list[str]:
    """The pipe ops, flags and loop brackets of a `.pto`, without operands and locations."""
    out, depth = [], 0
    for line in text.splitlines():
        s = line.strip()
        m = _FLAG.search(s)
        if m:
            out.append(f"{m.group(1)} {m.group(2)}->{m.group(3)} #{m.group(4)}")
        elif s.startswith(("pto.tload", "pto.tadd", "pto.tstore", "pto.texp")):
            out.append(s.split()[0][4:])
        elif s.startswith("scf.for"):
            out.append("for {")
            depth += 1
        elif s.startswith("}") and depth:
            out.append("}")
            depth -= 1
    return out


def _balanced(text: str) -> None:
    """Every event is set as often as it is waited, in the kernel and inside each loop body."""
    n = Counter()
    for m in _FLAG.finditer(text):
        n[(m.group(2), m.group(3), m.group(4))] += 1 if m.group(1) == "set" else -1
    assert not +n and not -n, n


def test_straight_line_code_waits_for_the_load_and_the_compute(tmp_path):
    text = _pto(Straight, tmp_path)
    assert _outline(text) == ["tload", "set PIPE_MTE2->PIPE_V #0", "wait PIPE_MTE2->PIPE_V #0", "texp",
                              "set PIPE_V->PIPE_MTE3 #0", "wait PIPE_V->PIPE_MTE3 #0", "tstore"]
    _balanced(text)


def test_one_buffer_set_the_next_load_waits_for_the_add_and_the_store(tmp_path):
    # the sum is computed in place over ta: the next iteration's load into ta waits for the add to
    # read it (V -> MTE2) and for the store to read the sum (MTE3 -> MTE2); the flags are set once
    # before the loop so the first iteration does not wait, and waited once after it
    text = _pto(_add_loop(1), tmp_path)
    assert _outline(text) == [
        "set PIPE_V->PIPE_MTE2 #0", "set PIPE_MTE3->PIPE_MTE2 #0",
        "for {",
        "wait PIPE_V->PIPE_MTE2 #0", "wait PIPE_MTE3->PIPE_MTE2 #0", "tload",
        "tload", "set PIPE_MTE2->PIPE_V #0",        # MTE2 runs in order: the add waits for the last load
        "wait PIPE_MTE2->PIPE_V #0", "tadd",
        "set PIPE_V->PIPE_MTE3 #0", "set PIPE_V->PIPE_MTE2 #0",
        "wait PIPE_V->PIPE_MTE3 #0", "tstore", "set PIPE_MTE3->PIPE_MTE2 #0",
        "}",
        "wait PIPE_V->PIPE_MTE2 #0", "wait PIPE_MTE3->PIPE_MTE2 #0"]
    _balanced(text)


def test_two_buffer_sets_get_their_own_events(tmp_path):
    """Ping-pong: the loads of the second copy wait only for events the second copy's add and store
    set (#1), so MTE2 can run ahead of the first copy's add and store."""
    text = _pto(_add_loop(2), tmp_path)
    body = _outline(text)
    loop = body[body.index("for {") + 1:body.index("}")]
    first = loop[:loop.index("tstore") + 2]
    second = loop[loop.index("tstore") + 2:]          # after the first copy's store and its set
    assert [x for x in first if x.startswith(("set", "wait"))] == [
        "wait PIPE_V->PIPE_MTE2 #0", "wait PIPE_MTE3->PIPE_MTE2 #0", "set PIPE_MTE2->PIPE_V #0",
        "wait PIPE_MTE2->PIPE_V #0", "set PIPE_V->PIPE_MTE3 #0", "set PIPE_V->PIPE_MTE2 #0",
        "wait PIPE_V->PIPE_MTE3 #0", "set PIPE_MTE3->PIPE_MTE2 #0"]
    assert second == [x.replace("#0", "#1") for x in first]     # the same pattern on events #1
    pre = body[:body.index("for {")]
    assert pre == ["set PIPE_V->PIPE_MTE2 #0", "set PIPE_MTE3->PIPE_MTE2 #0",
                   "set PIPE_V->PIPE_MTE2 #1", "set PIPE_MTE3->PIPE_MTE2 #1"]
    _balanced(text)


def test_without_pipes_no_flags_are_emitted(tmp_path):
    ir.compile(Straight, output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    from pypto.runtime.compiled import CompiledProgram

    cp = CompiledProgram.from_dir(str(tmp_path))
    assert "flag" not in emit_kernel(cp.program.get_function("k"), cp.program)


def test_a_matmul_kernel_syncs_all_its_pipes_and_balances_them(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "roofline_bench", Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    ir.compile(bench.matmul_program(2, 1, 512), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    texts = [p.read_text() for p in (tmp_path / "kernels").rglob("*.pto")]
    assert texts
    pairs = set()
    for text in texts:
        check_pto(text)
        _balanced(text)
        pairs |= {(m.group(2), m.group(3)) for m in _FLAG.finditer(text)}
    # L1 loads feed the L1 -> L0 moves, which feed the cube, which is drained by the fixpipe
    assert {("PIPE_MTE2", "PIPE_MTE1"), ("PIPE_MTE1", "PIPE_M"), ("PIPE_M", "PIPE_FIX")} <= pairs
