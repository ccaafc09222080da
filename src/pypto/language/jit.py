"""The `@pl.jit` family (Language Guide "@pl.jit family"; SPEC §7).

`@pl.jit` marks an Orchestration entry. Calling it with torch tensors specialises the source into
an `ir.Program` (bare `pl.Tensor` parameters take the argument's shape and dtype), compiles it once
per cache key (`JITFunction.cache_key`: `pl.dynamic` dimensions and scalar values are run-time
values, not part of it), and runs it on the platform of `config` (default `a2a3sim`), writing
Out/InOut tensors in place. Sub-functions decorated `@pl.jit.incore` / `.opaque` / `.extern` (a
hand-written C++ kernel, SPEC §10) are discovered from the entry's body and specialised at their
call sites; `@pl.jit.inline` bodies are spliced in. A build is also redone when the source of a
hand-written kernel it uses (or a local header of it) changed.
`@pl.jit.incore(level=...)` takes the core-level values of `pl.Level` only (`check_incore_level`;
parser/core_side.py checks that an AIC / AIV kernel does only that core's work). docs/language.md
"`@pl.jit` specialisation and caching" states the rules.
"""

from __future__ import annotations

import ast
import difflib
import inspect
from collections.abc import Callable
from typing import Any

from ..core.dtype import BOOL, FP32, INT64, DataType, dtype_from_torch
from ..core.enums import FunctionType, Level, Role
from ..core.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ParserSyntaxError,
    ParserTypeError,
    user_facing,
)
from ..core.span import Span
from ..ir.expr import ConstInt, Expr, GlobalVar, Var
from ..ir.function import Program
from ..ir.types import DistributedTensorType, ScalarType, TensorType, Type
from .decorators import InlineFunction
from .jit_globals import free_values, source_hash
from .parser.call_binding import positional_call, python_defaults
from .parser.core_side import check_core_level
from .parser.entry import FunctionOptions, parse_function
from .parser.external import ExternalOptions
from .parser.function_parser import ProgramContext
from .typing import RUNTIME, DirectionAnnotation, DynVar, Tensor, TensorAnnotation, to_dim

__all__ = ["JITFunction", "JITSubFunction", "JITExternFunction", "jit"]


def _param_annotations(fn: Callable) -> dict[str, Any]:
    """Each parameter's evaluated annotation, without its pl.Out / pl.InOut wrapper."""
    try:  # `from __future__ import annotations` leaves strings: evaluate them
        params = inspect.signature(fn, eval_str=True).parameters
    except Exception:
        params = inspect.signature(fn).parameters
    out = {}
    for name, p in params.items():
        ann = p.annotation
        out[name] = ann.inner if isinstance(ann, DirectionAnnotation) else ann
    return out


def _is_bare(ann: Any) -> bool:
    """Bare `pl.Tensor`, or bare `pld.DistributedTensor` (SPEC §8): shape and dtype from the call."""
    return ann is Tensor or (isinstance(ann, TensorAnnotation) and getattr(ann, "bare", False) is True)


def _bare_params(fn: Callable) -> list[str]:
    """Names of parameters annotated with bare `pl.Tensor` or `pld.DistributedTensor` (possibly
    inside pl.Out / pl.InOut)."""
    return [name for name, ann in _param_annotations(fn).items() if _is_bare(ann)]


def _bare_type(fn: Callable, name: str, value: Any) -> TensorType:
    """The type of bare-annotated parameter `name` for the call's `value`: a TensorType, or a
    window-bound DistributedTensorType for a bare `pld.DistributedTensor`."""
    t = tensor_type_of(value, name)
    if _param_annotations(fn)[name] is not Tensor:
        return DistributedTensorType(t.shape, t.dtype, t.view)
    return t


def _runtime_params(fn: Callable) -> list[str]:
    """Names of parameters annotated with a bare `pl.RUNTIME` (dtype from the call's value)."""
    return [name for name, ann in _param_annotations(fn).items() if ann is RUNTIME]


def runtime_scalar_dtype(value: Any, param: str) -> DataType:
    """The dtype a bare `pl.RUNTIME` parameter takes from a call's Python value (SPEC §13):
    bool → BOOL, int → INT64, float → FP32. Raises ArgumentTypeError for anything else."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT64
    if isinstance(value, float):
        return FP32
    raise ArgumentTypeError(f"parameter '{param}' is pl.RUNTIME: it expects a Python bool, int or "
                            f"float, got {type(value).__name__}")


def _dim_key(d: Any, n: Any) -> Any:
    """One dimension of a cache key: a dynamic one (`pl.dynamic("M")` or an expression over such)
    by its name, any other by its size `n`."""
    if isinstance(d, (DynVar, Var)):
        return ("dyn", d.name)
    if isinstance(d, Expr) and not isinstance(d, ConstInt):
        from ..ir.printer import python_print

        return ("dyn", python_print(d))
    return n


def _dims_key(ann: Any, shape: tuple[int, ...]) -> tuple:
    """The shape part of a tensor argument's cache key: a dimension the annotation declares
    dynamic (`pl.dynamic("M")` or an expression over such) enters by its name, so one build
    serves every size; a static or bare-`pl.Tensor` dimension enters by the argument's size."""
    dims = ann.shape if isinstance(ann, TensorAnnotation) else None
    if not isinstance(dims, (list, tuple)) or len(dims) != len(shape):
        return shape
    return tuple(_dim_key(d, n) for d, n in zip(dims, shape))


def _annotated_key(ann: Any) -> Any:
    """The cache-key part of a parameter from its annotation alone (`compile()` without sample
    arguments): the same as `cache_key` gives a torch argument of that shape and dtype."""
    if not isinstance(ann, TensorAnnotation):
        return "S"
    dims = tuple(_dim_key(d, d.value if isinstance(d, ConstInt) else d) for d in ann.shape)
    dt = ann.dtype
    return ("T", dims, str(dt.to_torch(strict=False)) if dt.has_torch_dtype else dt.name)


def unannotated_params(fn: Callable) -> list[str]:
    """Parameters of a `@pl.jit` entry whose type only a call's argument gives: no annotation,
    bare `pl.Tensor` (no shape or dtype) or bare `pl.RUNTIME`. `compile()` needs sample
    arguments exactly when this list is not empty (Language Guide "JITFunction.compile()")."""
    out = []
    for name, ann in _param_annotations(fn).items():
        if ann is inspect.Parameter.empty or ann is RUNTIME or ann is Tensor or (
                isinstance(ann, TensorAnnotation) and (ann.shape is None or ann.dtype is None)):
            out.append(name)
    return out


def _param_span(fn: Callable, name: str) -> Span | None:
    """Where parameter `name` is written in the definition of `fn` (None if the source is gone)."""
    found = _definition(fn)
    if found is None:
        return None
    info, fdef = found
    return next((info.span(a) for a in fdef.args.args if a.arg == name), info.span(fdef))


def tensor_type_of(value: Any, param: str) -> TensorType:
    """The TensorType of a torch tensor (or DeviceTensor) argument. Raises ArgumentTypeError (a
    TypeError) for anything else, ArgumentValueError for a tensor with an empty dimension."""
    import torch

    t = getattr(value, "tensor", value)
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError(f"parameter '{param}' expects a torch.Tensor, got {type(value).__name__}")
    try:
        dtype = dtype_from_torch(t.dtype)
    except TypeError:
        raise ArgumentTypeError(f"parameter '{param}' has dtype {t.dtype}, which PyPTO does not support; "
                                f"convert it (e.g. to torch.float32)") from None
    shape = dtype.logical_shape(tuple(int(d) for d in t.shape))   # FP4: two values per element
    if 0 in shape:
        raise ArgumentValueError(f"parameter '{param}' has a dimension of size 0, shape {list(shape)}: a bare "
                                 f"pl.Tensor takes its static shape from the argument, and static dimensions are "
                                 f">= 1; declare a dimension that may be empty as pl.dynamic "
                                 f"(pl.Tensor[[M, ...], dtype] with M = pl.dynamic(\"M\"))")
    return TensorType(tuple(to_dim(d) for d in shape), dtype)


class _Specialisable:
    """Shared by jit sub-functions and entries: specialise the Python function at a call site
    inside another kernel body, by the argument types, and call it by name."""

    __pypto_pyfunc__: Callable
    __name__: str
    func_type: FunctionType
    level: Level | None
    role: Role | None = None

    def specialise_call(self, parser: Any, node: ast.Call) -> Any:
        ctx: ProgramContext | None = parser.program
        if ctx is None:
            raise ParserSyntaxError(f"'{self.__name__}' can only be called from a @pl.jit entry",
                                    parser.span(node))
        names = list(inspect.signature(self.__pypto_pyfunc__).parameters)
        node = positional_call(node, names, self.__name__, parser.span(node), python_defaults(self.__pypto_pyfunc__))
        args = [parser.parse_expr(a) for a in node.args]
        if len(args) != len(names):
            raise ParserTypeError(f"'{self.__name__}' takes {len(names)} arguments, got {len(args)}",
                                  parser.span(node))
        bare = set(_bare_params(self.__pypto_pyfunc__))
        overrides: dict[str, Type] = {n: a.type for n, a in zip(names, args) if n in bare}
        anns = _param_annotations(self.__pypto_pyfunc__)
        for n, t in overrides.items():
            if anns[n] is not Tensor:   # bare pld.DistributedTensor: the argument must be window-bound
                from ..ops.distributed import unbound_window_message

                msg = unbound_window_message(n, self.__name__, t)
                if msg is not None:
                    raise ParserTypeError(msg, parser.span(node))
        name = self._specialised_name(ctx, overrides)
        if name not in ctx.external:
            opts = self.function_options()
            decorator = f"@pl.jit.incore(level={self.level!r})" if self.func_type is FunctionType.InCore else None
            func = parse_function(self.__pypto_pyfunc__, opts, name=name, overrides=overrides, program=ctx,
                                  decorator=decorator)
            ctx.external[name] = func
        return parser.call_function(GlobalVar(name, span=parser.span(node)), node)

    def function_options(self) -> FunctionOptions:
        """The `@pl.function` options the specialised function is parsed with."""
        return FunctionOptions(self.func_type, self.level, self.role)

    def _specialised_name(self, ctx: ProgramContext, overrides: dict[str, Type]) -> str:
        from ..ir.structural import structural_equal

        base = self.__name__
        k = 0
        while True:
            name = base if k == 0 else f"{base}_{k}"
            f = ctx.external.get(name)
            if f is None:
                return name
            same = all(structural_equal(p.type, overrides[p.name]) for p in f.params if p.name in overrides)
            if same:
                return name
            k += 1


class JITSubFunction(_Specialisable):
    """`@pl.jit.incore` / `@pl.jit.opaque`: specialised at each call site by argument types."""

    def __init__(self, fn: Callable, func_type: FunctionType, level: Level | None = None) -> None:
        self.__pypto_pyfunc__ = fn
        self.func_type = func_type
        self.level = level
        self.__name__ = fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"'{self.__name__}' is a @pl.jit sub-function; call it from a @pl.jit entry")

    def __pypto_call__(self, parser: Any, node: ast.Call) -> Any:
        return self.specialise_call(parser, node)


class JITExternFunction(_Specialisable):
    """`@pl.jit.extern(...)`: a hand-written C++ kernel called from a `@pl.jit` entry like any
    kernel (SPEC §10); specialised at each call site by argument types (bare `pl.Tensor`)."""

    def __init__(self, fn: Callable, func_type: FunctionType, external: ExternalOptions) -> None:
        self.__pypto_pyfunc__ = fn
        self.func_type, self.level, self.external = func_type, None, external
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def function_options(self) -> FunctionOptions:
        return FunctionOptions(self.func_type, external=self.external)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"'{self.__name__}' is a @pl.jit.extern kernel; call it from a @pl.jit entry")

    def __pypto_call__(self, parser: Any, node: ast.Call) -> Any:
        return self.specialise_call(parser, node)


def _extern_fingerprint(program: Program) -> tuple[str, ...]:
    """Content hashes of the hand-written kernels of `program` (source, local headers, include
    dirs): a cached build whose kernels were edited since is built again (SPEC §10)."""
    from ..runtime.extern.build import content_fingerprint

    return tuple(content_fingerprint(f.external) for f in program.functions if f.external is not None)


class JITFunction(_Specialisable):
    """A `@pl.jit` entry: call it on torch tensors, or `.compile(*sample_args)` ahead of time."""

    def __init__(self, fn: Callable, func_type: FunctionType = FunctionType.Orchestration,
                 level: Level | None = None, role: Role | None = None, auto_scope: bool = True) -> None:
        self.__pypto_pyfunc__ = fn
        self.func_type, self.level, self.role, self.auto_scope = func_type, level, role, auto_scope
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._cache: dict[tuple, Any] = {}
        self._extern_prints: dict[tuple, tuple[str, ...]] = {}
        self._src_hash = source_hash(fn)

    # ---- specialisation ------------------------------------------------------------------
    def _overrides(self, args: tuple[Any, ...]) -> dict[str, Type]:
        params = list(inspect.signature(self.__pypto_pyfunc__).parameters)
        if len(args) != len(params):
            raise ArgumentTypeError(f"{self.__name__}() takes {len(params)} arguments "
                                    f"({', '.join(params)}), got {len(args)}")
        bare = set(_bare_params(self.__pypto_pyfunc__))
        out: dict[str, Type] = {n: _bare_type(self.__pypto_pyfunc__, n, a) for n, a in zip(params, args) if n in bare}
        for n, a in zip(params, args):
            if n in _runtime_params(self.__pypto_pyfunc__):
                out[n] = ScalarType(runtime_scalar_dtype(a, n))
        return out

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Positional argument tuple for a call with `args` / `kwargs` (Python binding rules).

        Parameters left out take their Python default (`s: pl.Scalar[pl.FP32] = 2.0`).
        Raises ArgumentTypeError (a TypeError) naming a missing, unknown or duplicate parameter."""
        sig = inspect.signature(self.__pypto_pyfunc__)
        if not kwargs and (not args or len(args) >= len(sig.parameters)):
            return args   # (no arguments at all: compile() from the annotations)
        unknown = [k for k in kwargs if k not in sig.parameters]
        if unknown:   # before a missing parameter, which a misspelt keyword usually explains
            near = difflib.get_close_matches(unknown[0], list(sig.parameters), n=1)
            raise ArgumentTypeError(f"{self.__name__}(): got an unexpected keyword argument {unknown[0]!r}"
                                    + (f"; did you mean {near[0]!r}?" if near else ""))
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentTypeError(f"{self.__name__}(): {e}") from None
        bound.apply_defaults()   # a parameter's Python default fills a missing argument
        return tuple(bound.arguments[n] for n in sig.parameters)

    @user_facing
    def specialize(self, *args: Any) -> Program:
        """The `ir.Program` this entry becomes for arguments like `args` (no compilation); with no
        arguments at all, the one its annotations alone give (every parameter fully annotated)."""
        if not args and not unannotated_params(self.__pypto_pyfunc__):
            return self._program({})
        return self._program(self._overrides(args))

    def _program(self, overrides: dict[str, Type]) -> Program:
        """The entry parsed with parameter types `overrides` (none: the annotations alone), plus
        the sub-functions it calls."""
        ctx = ProgramContext(self.__name__)
        opts = FunctionOptions(self.func_type, self.level, self.role, auto_scope=self.auto_scope)
        entry = parse_function(self.__pypto_pyfunc__, opts, overrides=overrides, program=ctx)
        return Program(self.__name__, (entry, *ctx.external.values()), span=entry.span)

    def _annotated_cache_key(self, config: Any) -> tuple:
        """`cache_key` of a call whose arguments match the annotations (`compile()` with none)."""
        parts: list[Any] = [self._src_hash, free_values(self.__pypto_pyfunc__)]
        parts += [_annotated_key(a) for a in _param_annotations(self.__pypto_pyfunc__).values()]
        return tuple(parts) + self._config_key(config)

    def _config_key(self, config: Any) -> tuple:
        return (config.platform, repr(config.strategy), repr(config.backend_type), bool(config.dump_passes),
                _diagnostics_key(config))

    def cache_key(self, args: tuple[Any, ...], config: Any) -> tuple:
        """The specialisation key of a call (SPEC §7; docs/language.md "@pl.jit specialisation").

        Parts: the source; the values of the module globals and closure variables the source
        reads, and the sources of the sub-functions and inline helpers it calls (`jit_globals`),
        so changing `SCALE = 2.0` to `5.0` between calls builds again; per tensor argument its
        dtype and shape, where a dimension the
        parameter's annotation declares dynamic (`pl.dynamic`) enters by name, not size (one build
        serves every size; the run checks sizes agree across parameters), and every other
        dimension by its size; a scalar argument only as "a scalar" — a `pl.Scalar` parameter is a
        run-time value the program reads, never a constant it is specialised to; then the
        platform, strategy, backend, `dump_passes` and the diagnostic options, so a cached build
        has what was asked for.
        """
        anns = list(_param_annotations(self.__pypto_pyfunc__).values())
        parts: list[Any] = [self._src_hash, free_values(self.__pypto_pyfunc__)]
        for i, a in enumerate(args):
            t = getattr(a, "tensor", a)
            if hasattr(t, "shape") and hasattr(t, "dtype"):
                ann = anns[i] if i < len(anns) else None
                parts.append(("T", _dims_key(ann, tuple(t.shape)), str(t.dtype)))
            elif i < len(anns) and anns[i] is RUNTIME:  # the dtype comes from the value
                parts.append(("S", runtime_scalar_dtype(a, f"#{i}").name))
            else:
                parts.append("S")  # the value is read at run time (checked there against the dtype)
        return tuple(parts) + self._config_key(config)

    @user_facing
    def lower(self, *args: Any, config: Any = None, **kwargs: Any) -> Program:
        """The lowered `ir.Program` for arguments like `args` (SPEC §13): `specialize` then the pass
        pipeline of `config`'s strategy and backend, without codegen, files or the JIT cache."""
        args = self.bind(args, kwargs)
        from ..compiler import lower
        from ..runtime.config import RunConfig, check_run_config

        config = check_run_config(config) or RunConfig()
        opts: dict[str, Any] = {"backend_type": config.backend_type}
        if config.strategy is not None:
            opts["strategy"] = config.strategy
        return lower(self.specialize(*args), **opts)

    @user_facing
    def compile(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Compile (or fetch from the cache) the CompiledProgram for `args`; nothing is run.

        With no arguments at all, the parameters' annotations alone give the specialisation
        (every tensor `pl.Tensor[[shape], dtype]`, every scalar `pl.Scalar[dtype]`; `pl.dynamic`
        dimensions are fine); the build is the one a later call with matching tensors uses.
        Raises ArgumentTypeError (a TypeError, located at the first such parameter) naming the
        parameters whose type only an argument gives (bare `pl.Tensor`, `pl.RUNTIME`, none).
        """
        args = self.bind(args, kwargs)
        from ..compiler import compile as ir_compile
        from ..runtime.config import RunConfig, check_run_config

        config = check_run_config(config) or RunConfig()
        n_params = len(inspect.signature(self.__pypto_pyfunc__).parameters)
        annotated_only = not args and n_params > 0
        if annotated_only:
            bare = unannotated_params(self.__pypto_pyfunc__)
            if bare:
                raise ArgumentTypeError(
                    f"{self.__name__}.compile() without sample arguments needs every parameter fully "
                    f"annotated, but {', '.join(repr(b) for b in bare)} "
                    f"{'takes its' if len(bare) == 1 else 'take their'} type from an argument (bare "
                    f"pl.Tensor, pl.RUNTIME or no annotation): annotate "
                    f"{'it' if len(bare) == 1 else 'them'} (e.g. pl.Tensor[[128, 128], pl.FP32]) or "
                    f"pass sample arguments to compile(...)", _param_span(self.__pypto_pyfunc__, bare[0]))
            key = self._annotated_cache_key(config)
        else:
            key = self.cache_key(args, config)
        hit = self._cache.get(key)
        if hit is not None and _extern_fingerprint(hit.program) == self._extern_prints.get(key):
            return hit
        program = self._program({}) if annotated_only else self.specialize(*args)
        opts: dict[str, Any] = dict(dump_passes=config.dump_passes,
                                    backend_type=config.backend_type, platform=config.platform)
        if config.strategy is not None:
            opts["strategy"] = config.strategy
        opts.update(diagnostic_phase=config.diagnostic_phase, disabled_diagnostics=config.disabled_diagnostics)
        if self.level is Level.HOST:  # recorded in distributed_meta.json (SPEC §8)
            opts["distributed_config"] = getattr(config, "distributed_config", None)
        compiled = ir_compile(program, **opts)
        self._cache[key] = compiled
        self._extern_prints[key] = _extern_fingerprint(compiled.program)
        return compiled

    def __repr__(self) -> str:
        kind = "jit.host" if self.level is Level.HOST else "jit"
        return f"<@pl.{kind} {self.__name__}: {len(self._cache)} compiled specialisation(s)>"

    def __pypto_call__(self, parser: Any, node: ast.Call) -> Any:
        """A @pl.jit entry called from a kernel body: only a @pl.jit.host orchestrator may do that
        (Language Guide: plain @pl.jit entries do not discover other @pl.jit entries)."""
        if parser.level is not Level.HOST:
            raise ParserSyntaxError(
                f"'{self.__name__}' is a @pl.jit entry; a @pl.jit kernel cannot call another @pl.jit "
                f"entry (only @pl.jit.host discovers them). Make it @pl.jit.incore, @pl.jit.opaque or "
                f"@pl.jit.inline", parser.span(node))
        return self.specialise_call(parser, node)

    @user_facing
    def __call__(self, /, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Specialise, compile (once per cache key, with `config`'s compile-time fields) and run
        on torch tensors / DeviceTensors / numbers given positionally or by parameter name.

        Raises:
            ArgumentTypeError / ArgumentValueError (TypeError / ValueError): wrong, missing, unknown
                or duplicate arguments, wrong dtypes or shapes, tensors not on the CPU (checked
                before compiling) — with a traceback that ends at the caller's line.
        """
        from ..runtime.binding import check_on_cpu
        from ..runtime.config import check_run_config

        config = check_run_config(config)
        args = self.bind(args, kwargs)
        for name, a in zip(inspect.signature(self.__pypto_pyfunc__).parameters, args):
            check_on_cpu(f"argument '{name}' of '{self.__name__}'", a)
        compiled = self.compile(*args, config=config)
        if self.level is Level.HOST:  # a DistributedCompiledProgram (SPEC §8 one-shot call)
            return compiled(*args, config=config)
        # compile() applied config's compile-time fields, so running must not warn about them
        return compiled.run_on(None, args, config, warn_compile_fields=False)


def _diagnostics_key(config: Any) -> tuple:
    """The diagnostic options of `config` as a hashable part of the cache key."""
    from ..core.diagnostics import diagnostic_options

    d = diagnostic_options(config.diagnostic_phase, config.disabled_diagnostics)
    return d.phase, tuple(sorted(d.disabled))


class _JitDecorator:
    """`pl.jit` and its variants `.host`, `.incore`, `.inline`, `.opaque`."""

    def __call__(self, fn: Callable | None = None, *, auto_scope: bool = True) -> Any:
        def wrap(f: Callable) -> JITFunction:
            return JITFunction(f, FunctionType.Orchestration, auto_scope=auto_scope)
        return wrap(fn) if fn is not None else wrap

    def host(self, fn: Callable | None = None, *, auto_scope: bool = True, **kw: Any) -> Any:
        if "level" in kw:
            raise TypeError("@pl.jit.host does not take level= (HOST is implicit)")
        if kw:
            raise TypeError(f"@pl.jit.host got unexpected arguments {sorted(kw)}")

        def wrap(f: Callable) -> JITFunction:  # specialises into @pl.function(level=HOST, role=Orchestrator)
            return JITFunction(f, FunctionType.Opaque, Level.HOST, Role.Orchestrator, auto_scope)
        return wrap(fn) if fn is not None else wrap

    def incore(self, fn: Callable | None = None, *, level: Level | None = None, **kw: Any) -> Any:
        """`@pl.jit.incore(level=...)`: an InCore kernel. `level` is where it runs — see
        `check_incore_level` (ParserTypeError for any other value, at the decorator)."""
        _reject_auto_scope("incore", kw)

        @user_facing
        def wrap(f: Callable) -> JITSubFunction:
            check_incore_level(f, level)
            return JITSubFunction(f, FunctionType.InCore, level)
        return wrap(fn) if fn is not None else wrap

    def opaque(self, fn: Callable | None = None, **kw: Any) -> Any:
        _reject_auto_scope("opaque", kw)

        def wrap(f: Callable) -> JITSubFunction:
            return JITSubFunction(f, FunctionType.Opaque)
        return wrap(fn) if fn is not None else wrap

    def extern(self, fn: Callable | None = None, *, core_type: str = "aiv", source: Any = None,
               aic_source: Any = None, aiv_source: Any = None, include_dirs: Any = None, cost: Any = None,
               core_num: int = 1) -> Any:
        """`@pl.jit.extern(core_type="aiv"|"aic", source="k.cpp", include_dirs=[...], cost=...,
        core_num=1)`: a hand-written C++ kernel whose body is `...` (SPEC §10; docs/tools.md
        "External C++ kernels"). A relative path is relative to the defining file. Raises
        ParserError at the decorator for a wrong core type, a missing file or a body that is not `...`.
        `core_type="mixed"` (an AIC + AIV pair) is not supported: declare two kernels."""

        @user_facing
        def wrap(f: Callable) -> JITExternFunction:
            return _make_extern(f, core_type, source, aic_source, aiv_source, include_dirs, cost, core_num)
        return wrap(fn) if fn is not None else wrap

    def inline(self, fn: Callable | None = None, *, auto_scope: bool = True) -> Any:
        def wrap(f: Callable) -> InlineFunction:
            return InlineFunction(f, infer_types=True, auto_scope=auto_scope)
        return wrap(fn) if fn is not None else wrap


_CORE_TYPES = {"aiv": FunctionType.AIV, "aic": FunctionType.AIC}


def _make_extern(fn: Callable, core_type: Any, source: Any, aic_source: Any, aiv_source: Any,
                 include_dirs: Any, cost: Any, core_num: Any) -> JITExternFunction:
    """Check a `@pl.jit.extern` declaration now (located errors at the decorator) and wrap it."""
    from .parser.external import check_external_body, external_kernel
    from .parser.source import source_of

    info = source_of(fn)
    fdef = next(n for n in info.tree.body if isinstance(n, ast.FunctionDef))
    if core_type == "mixed" or aic_source is not None or aiv_source is not None:
        raise ParserTypeError(f"@pl.jit.extern '{fn.__name__}': core_type='mixed' (an AIC + AIV pair with "
                              f"aic_source= / aiv_source=) is not supported; declare the two halves as two "
                              f"kernels with core_type='aic' and core_type='aiv'",
                              _decorator_span(fn, "core_type"))
    func_type = _CORE_TYPES.get(core_type) if isinstance(core_type, str) else None
    if func_type is None:
        raise ParserTypeError(f"@pl.jit.extern(core_type={core_type!r}): use 'aiv' (a vector core) or 'aic' "
                              f"(the cube core)", _decorator_span(fn, "core_type"))
    if source is None:
        raise ParserTypeError(f"@pl.jit.extern '{fn.__name__}' needs source=\"kernel.cpp\" (its C++ file)",
                              _decorator_span(fn, "source"))
    opts = ExternalOptions(source, include_dirs or (), cost, core_num, what="@pl.jit.extern")
    params = list(inspect.signature(fn).parameters)
    ext = external_kernel(opts, func_type, fdef, info, params)
    check_external_body(fdef, info)
    # keep the resolved paths: specialisation re-reads them, wherever the caller runs from
    resolved = ExternalOptions(ext.source, list(ext.include_dirs), cost, core_num, what="@pl.jit.extern")
    return JITExternFunction(fn, func_type, resolved)


# ---- @pl.jit.incore(level=...) ----------------------------------------------------------------
# An InCore kernel runs on the cores of one cluster (SPEC §6), so its level is one of the three
# core-level values of pl.Level (SPEC §2.2: all level 0). AIC / AIV pin it to one core kind, which
# the parser checks (parser/core_side.py, shared with @pl.function and pl.at).
def _definition(fn: Callable) -> tuple[Any, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The source info and `def` node of `fn` (None when its source cannot be read)."""
    from .parser.source import source_of

    try:
        info = source_of(fn)
    except Exception:
        return None
    fdef = next((n for n in info.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    return None if fdef is None else (info, fdef)


def _decorator_span(fn: Callable, keyword: str) -> Span | None:
    """Where `keyword=` is written in the decorators of `fn` (else the function's line)."""
    found = _definition(fn)
    if found is None:
        return None
    info, fdef = found
    for dec in fdef.decorator_list:
        for k in getattr(dec, "keywords", ()):
            if k.arg == keyword:
                return info.span(k)
    return info.span(fdef)


def check_incore_level(fn: Callable, level: Any) -> None:
    """Accept `level=` of `@pl.jit.incore` only where an InCore kernel can run (parser/core_side.py
    `check_core_level`). Raises ParserTypeError at the decorator for anything else (e.g. CHIP)."""
    if level is None or level in (Level.CORE_GROUP, Level.AIC, Level.AIV):
        return
    check_core_level(level, "@pl.jit.incore(", _decorator_span(fn, "level"))


def _reject_auto_scope(kind: str, kw: dict[str, Any]) -> None:
    if "auto_scope" in kw:
        raise TypeError(f"@pl.jit.{kind} does not accept auto_scope=: it outlines into a separate kernel; "
                        f"auto_scope=False is accepted on @pl.jit, @pl.jit.host and @pl.jit.inline")
    if kw:
        raise TypeError(f"@pl.jit.{kind} got unexpected arguments {sorted(kw)}")


jit = _JitDecorator()

