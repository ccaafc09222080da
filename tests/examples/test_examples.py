"""Every example runs as `python examples/<file>.py`, checks against torch and prints PASS; every
pass dump of every example, for both backends, re-parses to a structurally equal program."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import pypto.compiler as compile_mod
import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


def test_all_issue2_examples_present():
    assert {"quickstart_add", "tile_add", "softmax", "matmul", "loop_accumulate"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_passes(name, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and "FAIL" not in r.stdout


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("backend", [BackendType.Ascend910B, BackendType.Ascend950])
def test_every_pass_dump_reparses(name, backend, examples_dir, monkeypatch):
    """Run the example with ROUNDTRIP verification (print → parse → equal after every pass) and
    forced dumps; then every dump file must load and re-print identically."""
    builds = []
    real_compile = compile_mod.compile

    def compile_with_dumps(program, *args, **kwargs):
        checked = dict(kwargs, dump_passes=True, backend_type=backend,
                       platform="a2a3sim" if backend is BackendType.Ascend910B else "a5sim",
                       verification_level=compile_mod.VerificationLevel.ROUNDTRIP)
        builds.append(real_compile(program, *args, **checked))
        return real_compile(program, *args, **kwargs)  # what the example asked for, to run it

    monkeypatch.setattr(compile_mod, "compile", compile_with_dumps)
    monkeypatch.setattr(ir, "compile", compile_with_dumps, raising=False)
    mod = importlib.import_module(name)
    for v in vars(mod).values():
        if isinstance(v, pl.JITFunction):
            v._cache.clear()  # compile afresh under this test's settings
    mod.main()
    assert builds
    for compiled in builds:
        dumps = sorted((Path(compiled.output_dir) / "passes_dump").glob("*.py"))
        assert dumps[0].name == "00_frontend.py" and len(dumps) > 5
        for f in dumps:
            prog = pl.loads(str(f))
            text = prog.as_python()
            assert text == f.read_text()
            ir.assert_structural_equal(pl.parse(text), prog)
        ir.assert_structural_equal(pl.loads(str(dumps[-1])), compiled.program)
