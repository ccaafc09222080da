"""Fingerprints of what the compiler generates, to prove a compiler speed-up changes no output byte.

    python benchmarks/artifact_hashes.py examples OUT.json [--backend 950]
    python benchmarks/artifact_hashes.py tests OUT.json [PYTEST_ARGS ...]
    python benchmarks/artifact_hashes.py diff BEFORE.json AFTER.json

`examples`: every `ir.Program` and every fully annotated `@pl.jit` entry (`specialize()` without
arguments) defined at the top of a module under `examples/` is compiled with pass dumps on
(`dump_passes=True`, `skip_ptoas=True`), and every file of its build is hashed: the `.pto`
kernels, the orchestration C++, `kernel_config.py`, `program.msgpack`, the printed IR after each
pass (`passes_dump/`) and the reports — all but the two timing files (`report/compile_time.json`,
`report/pass_timings.json`, also those of the chip builds of a distributed program); the build
folder's own path is replaced by `<OUT>` first.

`tests`: runs pytest (default: the tensor-level pass tests, tests/passes/test_tile_tensor*.py and
test_push_slices.py; property tests with a fixed hypothesis seed) with the compiler instrumented,
and records, per test, in call order: the hash of every `ir.compile` build (as above), and the
printed IR (`python_print`) of the result of every
`PassManager.run` (what `ir.compile` and `lower` run) and of every direct `TileTensorBlocks().run`.

`diff`: the entries that differ, are missing or are new; exit status 1 when any.

Run `examples` / `tests` before a change and after it (the same arguments) and `diff` the two files.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMING_FILES = {"report/compile_time.json", "report/pass_timings.json"}
# Examples whose programs are built by a function: file -> (module -> {name: Program}).
BUILDERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "examples/models/llama_layer.py": lambda m: {"build_program()": m.build_program()},
    "examples/models/minilm.py": lambda m: {"build_program(2, 32)": m.build_program(2, 32)},
}
DEFAULT_TESTS = ["tests/passes/test_push_slices.py", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "passes").glob("test_tile_tensor*.py"))]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def build_hashes(out: Path) -> dict[str, str]:
    """Relative path -> hash of every file of the build folder `out` but the timing files, with the
    folder's path replaced by `<OUT>`."""
    marks = [os.fsencode(str(out)), os.fsencode(str(out.resolve()))]
    res: dict[str, str] = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if not p.is_file() or any(rel == t or rel.endswith("/" + t) for t in TIMING_FILES):
            continue
        data = p.read_bytes()
        for m in marks:
            data = data.replace(m, b"<OUT>")
        res[rel] = _digest(data)
    return res


def _module_programs(path: Path) -> dict[str, Any]:
    """name -> ir.Program of the module at `path`: its top-level Programs, the `specialize()` of
    its fully annotated @pl.jit entries and what `BUILDERS` builds."""
    from pypto.ir import Program
    from pypto.language.jit import unannotated_params

    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"_ah_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(path.parent))
    found: dict[str, Any] = {}
    for name, obj in sorted(vars(mod).items()):
        if isinstance(obj, Program):
            found[name] = obj
        elif hasattr(obj, "specialize") and hasattr(obj, "__pypto_pyfunc__") \
                and getattr(obj.__pypto_pyfunc__, "__module__", None) == mod.__name__ \
                and not unannotated_params(obj.__pypto_pyfunc__):
            found[name] = obj.specialize()
    build = BUILDERS.get(path.relative_to(ROOT).as_posix())
    return {**found, **build(mod)} if build is not None else found


def hash_examples(backend: str) -> dict[str, Any]:
    """`examples` mode (module docstring): "<file>:<name>" -> {relative path: hash} (or the error)."""
    from pypto import ir
    from pypto.backend import BackendType

    bt = BackendType.Ascend950 if backend == "950" else BackendType.Ascend910B
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        for n, path in enumerate(sorted((ROOT / "examples").rglob("*.py"))):
            rel = path.relative_to(ROOT).as_posix()
            if path.name.startswith("_"):
                continue
            try:
                progs = _module_programs(path)
            except Exception as e:  # noqa: BLE001  (recorded: an example that does not import)
                res[rel] = f"import error: {type(e).__name__}: {e}"
                continue
            for name, program in progs.items():
                out = Path(d) / f"{n}_{name}"
                try:
                    ir.compile(program, output_dir=out, dump_passes=True, skip_ptoas=True, backend_type=bt)
                    res[f"{rel}:{name}"] = build_hashes(out)
                except Exception as e:  # noqa: BLE001  (a refused compile must stay refused alike)
                    res[f"{rel}:{name}"] = f"{type(e).__name__}: {e}".replace(str(out), "<OUT>")
    return res


class _Recorder:
    """Pytest plugin: per test id, the fingerprints of the compiles and pass runs it makes."""

    def __init__(self) -> None:
        self.current = "<collection>"
        self.records: dict[str, list[str]] = {}

    def add(self, what: str) -> None:
        self.records.setdefault(self.current, []).append(what)

    def pytest_runtest_setup(self, item: Any) -> None:
        self.current = item.nodeid

    def install(self) -> None:
        import pypto.compiler as compiler
        from pypto.ir.printer import python_print
        from pypto.passes.manager import PassManager
        from pypto.passes.tile_tensor_blocks import TileTensorBlocks

        def printed(tag: str, run: Callable) -> Callable:
            def wrapper(obj: Any, program: Any, *a: Any, **k: Any) -> Any:
                result = run(obj, program, *a, **k)
                self.add(f"{tag} {program.name}: {_digest(python_print(result).encode())}")
                return result
            return wrapper

        PassManager.run = printed("PassManager.run", PassManager.run)  # type: ignore[method-assign]
        TileTensorBlocks.run = printed("TileTensorBlocks.run", TileTensorBlocks.run)  # type: ignore[method-assign]
        compile_ = compiler.compile

        def compile_wrapper(program: Any, output_dir: Any = None, *a: Any, **k: Any) -> Any:
            result = compile_(program, output_dir, *a, **k)
            hashes = build_hashes(Path(str(result)))
            self.add(f"compile {program.name}: {_digest(json.dumps(hashes, sort_keys=True).encode())}")
            return result

        compiler.compile = compile_wrapper  # type: ignore[assignment]


def hash_tests(args: list[str]) -> dict[str, Any]:
    """`tests` mode (module docstring): test id -> fingerprints, plus the pytest exit status."""
    import pytest

    rec = _Recorder()
    rec.install()
    status = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--hypothesis-seed=0",
                          *(args or DEFAULT_TESTS)], plugins=[rec])
    return {"pytest_status": int(status), **rec.records}


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Lines naming the keys whose values differ between `a` and `b` (or that one lacks)."""
    out = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            out.append(f"{'only after' if k not in a else 'only before'}: {k}")
        elif a[k] != b[k]:
            out.append(f"differs: {k}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["examples", "tests", "diff"])
    ap.add_argument("files", nargs="+", help="OUT.json (examples, tests) or BEFORE.json AFTER.json (diff)")
    ap.add_argument("--backend", choices=["910B", "950"], default="910B", help="examples: the backend")
    ns, rest = ap.parse_known_args(argv)
    if ns.mode == "diff":
        a, b = (json.loads(Path(f).read_text()) for f in ns.files[:2])
        lines = diff(a, b)
        print("\n".join(lines) if lines else f"identical: {len(a)} entries")
        return 1 if lines else 0
    logging.getLogger("pypto.diagnostics").addHandler(logging.NullHandler())
    logging.getLogger("pypto.diagnostics").propagate = False
    sys.path.insert(0, str(ROOT / "examples"))
    res = hash_examples(ns.backend) if ns.mode == "examples" else hash_tests(ns.files[1:] + rest)
    Path(ns.files[0]).write_text(json.dumps(res, indent=1, sort_keys=True))
    print(f"{len(res)} entries -> {ns.files[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
