"""Build a hand-written C++ kernel into a host shared library, cached by content (SPEC §10).

`build_library(func)` compiles `func.external.source` with the host C++ compiler:

    <c++> -std=c++17 -O2 -shared -fPIC -I<pypto/include> -I<include_dirs...> -o <lib>.so <source>

The compiler is `$CXX` when set, else the first of `c++`, `g++`, `clang++` on PATH. Libraries are
cached under `$PYPTO_EXTERN_CACHE`, else `$XDG_CACHE_HOME/pypto/extern`, else
`~/.cache/pypto/extern`, as `<stem>-<key>.so`. The key (`source_key`) hashes the compiler and its
flags, the source, every local header it includes (`#include "..."` resolved from the including
file's folder, then the include dirs; `#include <...>` found in the include dirs; recursively) and
the shipped `pypto_kernel.h`: editing any of them builds a new library, while system headers are
not part of it. The library is written to a temporary name and renamed into place, so concurrent
builds never see a partial file and a failed build leaves nothing.

Errors: `ExternalCompileError` (the compiler's message, the kernel's file) and
`ExternalToolchainError` (no compiler: what to install), both CompileErrors located at the
kernel's declaration.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from ...core.errors import CompileError
from ...ir.function import ExternalKernel, Function

__all__ = ["ExternalCompileError", "ExternalToolchainError", "include_dir", "cache_dir", "find_compiler",
           "source_key", "content_fingerprint", "local_headers", "build_library", "COMPILE_TIMEOUT_S", "CXX_FLAGS"]

COMPILE_TIMEOUT_S = 300
CXX_FLAGS = ("-std=c++17", "-O2", "-shared", "-fPIC")
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)


class ExternalCompileError(CompileError):
    """The host C++ compiler rejected a hand-written kernel; the message holds its output."""


class ExternalToolchainError(CompileError):
    """No host C++ compiler was found to build a hand-written kernel for the simulator."""


def include_dir() -> Path:
    """The folder holding the shipped `pypto_kernel.h` (package data of `pypto`)."""
    return Path(__file__).resolve().parents[2] / "include"


def cache_dir() -> Path:
    """Where built kernel libraries are kept (see the module docstring); created on demand."""
    env = os.environ.get("PYPTO_EXTERN_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "pypto" / "extern"


def find_compiler() -> str | None:
    """The host C++ compiler: `$CXX`, else `c++`, `g++` or `clang++` on PATH; None when absent."""
    env = os.environ.get("CXX")
    if env:
        return shutil.which(env) or (env if os.path.isfile(env) else None)
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    return None


@lru_cache(maxsize=8)
def _compiler_identity(cxx: str) -> str:
    try:
        r = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
        return cxx + "\n" + r.stdout
    except (OSError, subprocess.SubprocessError):
        return cxx


def local_headers(source: str | os.PathLike, include_dirs: tuple[str, ...] = ()) -> list[Path]:
    """The headers `source` includes that exist in its own folder tree or in `include_dirs` (plus
    the shipped include folder), recursively, in first-seen order; system headers are left out."""
    dirs = [Path(d) for d in include_dirs] + [include_dir()]
    seen: dict[Path, None] = {}
    todo = [Path(source).resolve()]
    while todo:
        f = todo.pop()
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for quote, name in _INCLUDE.findall(text):
            where = ([f.parent] if quote == '"' else []) + dirs
            for d in where:
                cand = (d / name).resolve()
                if cand.is_file():
                    if cand not in seen:
                        seen[cand] = None
                        todo.append(cand)
                    break
    return list(seen)


def source_key(ext: ExternalKernel, cxx: str) -> str:
    """Hex digest identifying the library of `ext` built by `cxx` (see the module docstring)."""
    h = hashlib.sha256()
    h.update(_compiler_identity(cxx).encode())
    h.update(" ".join(CXX_FLAGS).encode())
    for d in ext.include_dirs:
        h.update(b"\0dir\0" + d.encode())
    for f in [Path(ext.source).resolve(), *local_headers(ext.source, ext.include_dirs)]:
        h.update(b"\0file\0" + str(f).encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def content_fingerprint(ext: ExternalKernel) -> str:
    """Hash of the kernel's source, local headers and include dirs (no compiler): what the
    `@pl.jit` cache compares to notice an edited kernel. A missing file hashes as missing."""
    h = hashlib.sha256()
    for d in ext.include_dirs:
        h.update(b"\0dir\0" + d.encode())
    src = Path(ext.source)
    files = [src, *local_headers(src, ext.include_dirs)] if src.is_file() else [src]
    for f in files:
        h.update(b"\0file\0" + str(f).encode() + b"\0")
        h.update(f.read_bytes() if f.is_file() else b"<missing>")
    return h.hexdigest()


def build_library(func: Function) -> Path:
    """The shared library of external kernel `func`, compiled now unless cached.

    Raises:
        ExternalToolchainError: no C++ compiler (says what to install).
        ExternalCompileError: the source is missing or does not compile (with the compiler's output
            and the kernel's file), located at the kernel's declaration.
    """
    ext = func.external
    assert ext is not None, f"{func.name} is not an external kernel"
    where = func.span if func.span.is_known() else None
    if not os.path.isfile(ext.source):
        raise ExternalCompileError(f"C++ source of external kernel '{func.name}' not found: {ext.source}", where)
    cxx = find_compiler()
    if cxx is None:
        raise ExternalToolchainError(
            f"external kernel '{func.name}' ({ext.source}) runs on the simulator as host code, which needs a "
            f"C++ compiler, and none was found ($CXX, c++, g++, clang++): install one, e.g. "
            f"'apt-get install g++' (Debian/Ubuntu: build-essential), or point $CXX at a compiler", where)
    key = source_key(ext, cxx)
    out_dir = cache_dir()
    lib = out_dir / f"{Path(ext.source).stem}-{key[:24]}.so"
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{lib.stem}-", suffix=".so", dir=out_dir)
    os.close(fd)
    cmd = [cxx, *CXX_FLAGS, "-I", str(include_dir())]
    for d in ext.include_dirs:
        cmd += ["-I", d]
    cmd += ["-o", tmp, ext.source]
    try:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                               cwd=os.path.dirname(ext.source))
        except subprocess.TimeoutExpired:
            raise ExternalCompileError(f"compiling external kernel '{func.name}' ({ext.source}) took more than "
                                       f"{COMPILE_TIMEOUT_S} s", where) from None
        if r.returncode != 0:
            msg = (r.stderr or r.stdout).strip()
            shown = " ".join(cmd[:-3] + ["-o", "<lib>.so", ext.source])
            raise ExternalCompileError(
                f"external kernel '{func.name}': {ext.source} does not compile (exit status {r.returncode} "
                f"of: {shown}):\n{msg}", where)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib
