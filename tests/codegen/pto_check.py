"""A small structural checker for generated PTO MLIR text (used by the codegen tests).

`check_pto(text)` verifies: one `module { func.func @name(...) { ... } }`; balanced regions; every
SSA value used is defined earlier in an enclosing region (parameters, op results, loop induction
variables, iter_args, while block arguments); every op carries a `loc(...)`. It returns a `Pto`
record with the ops (name, loc) in order, the constants and the `pto.alloc_tile` addresses, so
tests can compare them with the IR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SSA = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*")
_LOC = re.compile(r'loc\((?:"([^"]*)":(\d+):(\d+)|unknown)\)$')
_OP = re.compile(r"^(?:%[A-Za-z0-9_]+(?::\d+)?\s*=\s*)?([a-z_]+\.[a-z_.]+|return)\b")


@dataclass
class Pto:
    func: str
    params: list[str]
    ops: list[tuple[str, tuple[str, int, int] | None]] = field(default_factory=list)
    consts: dict[str, str] = field(default_factory=dict)            # %name -> literal
    allocs: list[tuple[str, int, str]] = field(default_factory=list)  # (%name, addr, tile_buf type)

    def op_names(self) -> list[str]:
        return [n for n, _ in self.ops]


def _defs_of_opener(line: str) -> tuple[list[str], list[str]]:
    """(outer definitions, inner definitions) of a line that opens a region."""
    outer, inner = [], []
    m = re.match(r"^(%[A-Za-z0-9_]+)(?::\d+)?\s*=", line)
    if m:
        outer.append(m.group(1))
    m = re.search(r"scf\.for (%[A-Za-z0-9_]+) =", line)
    if m:
        inner.append(m.group(1))
    for m in re.finditer(r"(%[A-Za-z0-9_]+) = %", line.split("iter_args(", 1)[1] if "iter_args(" in line else ""):
        inner.append(m.group(1))
    if "scf.while (" in line:
        for m in re.finditer(r"(%[A-Za-z0-9_]+) = %", line.split("scf.while (", 1)[1]):
            inner.append(m.group(1))
    return outer, inner


def check_pto(text: str) -> Pto:
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("//")]
    assert lines[0] == "module {" and lines[-1] == "}", "expected one module { ... }"
    m = re.match(r"^func\.func @([A-Za-z0-9_]+)\((.*)\) \{$", lines[1])
    assert m, f"expected a func.func header, got {lines[1]!r}"
    params = re.findall(r"(%[A-Za-z0-9_]+):", m.group(2))
    out = Pto(m.group(1), params)
    scopes: list[set[str]] = [set(params)]
    pending_results: list[list[str]] = []

    def defined(name: str) -> bool:
        return any(name in s for s in scopes)

    def check_uses(line: str, exclude: set[str]) -> None:
        for u in _SSA.findall(line.split(" loc(")[0]):
            if u not in exclude:
                assert defined(u), f"{u} used before definition in: {line}"

    for line in lines[2:-2]:
        if line == "} else {" or line == "} do {":
            scopes.pop()
            scopes.append(set())
            continue
        if line.startswith("^bb0("):
            scopes[-1].update(re.findall(r"(%[A-Za-z0-9_]+):", line))
            continue
        if line.startswith("}"):
            assert _LOC.search(line) or line == "}", f"region end without loc: {line}"
            scopes.pop()
            scopes[-1].update(pending_results.pop())
            continue
        if line.endswith("{"):
            outer, inner = _defs_of_opener(line)
            check_uses(line, set(outer) | set(inner))
            name = _OP.match(line)
            out.ops.append((name.group(1) if name else line.split()[0], None))
            pending_results.append(outer)
            scopes.append(set(inner))
            continue
        lm = _LOC.search(line)
        assert lm, f"op without loc(...): {line}"
        om = _OP.match(line)
        assert om, f"not an op: {line}"
        res = re.match(r"^(%[A-Za-z0-9_]+)(?::\d+)?\s*=", line)
        check_uses(line, {res.group(1)} if res else set())
        if res:
            assert not defined(res.group(1)), f"{res.group(1)} defined twice"
            scopes[-1].add(res.group(1))
        loc = (lm.group(1), int(lm.group(2)), int(lm.group(3))) if lm.group(1) is not None else None
        out.ops.append((om.group(1), loc))
        if om.group(1) == "arith.constant":
            out.consts[res.group(1)] = line.split("arith.constant ", 1)[1].split(" ")[0]
        if om.group(1) == "pto.alloc_tile":
            addr = re.search(r"addr = (%[A-Za-z0-9_]+)", line).group(1)
            tb = re.search(r"(!pto\.tile_buf<[^>]*>)", line).group(1)
            out.allocs.append((res.group(1), int(out.consts[addr]), tb))
    assert lines[-2] == "}" and len(scopes) == 1, "unbalanced regions"
    return out
