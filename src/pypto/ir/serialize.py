"""MessagePack serialization of IR nodes (SPEC §4 "Serialization").

Layout: a msgpack map `{"format": "pypto-ir", "version": 1, "classes": [...], "root": value}`.
`classes` lists every node class used, once, as `[module, qualname, [field names]]`, so a node
records only its field values and decoding matches them by field name. Values are plain msgpack
scalars (None, bool, int, float, str) or tagged arrays:

    [0, class_index, field values...]   a node (dataclass), entered into the object table
    [1, object_index]                   a back-reference to a node already written (sharing)
    [2, items...]                       a tuple
    [3, name]                           a DataType singleton
    [4, module, qualname, member name]  an enum member
    [5, decimal string]                 an int too wide for msgpack
    [6, items...]                       a list

Object indices count nodes in the order their encoding starts (pre-order), so the same Var
referenced from many places deserializes to one object referenced from those places.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import operator
from collections.abc import Callable
from typing import Any

from ..core.dtype import DataType, dtype_from_name
from ..core.span import Span

__all__ = ["serialize", "deserialize"]

_FORMAT, _VERSION = "pypto-ir", 1
_NODE, _REF, _TUPLE, _DTYPE, _ENUM, _BIGINT, _LIST = range(7)
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


# How a value is encoded, by its class (decided once per class, in the order the format lists).
_PLAIN, _INT, _DT, _EN, _TUP, _LST, _DC = range(7)
_KINDS: dict[type, int] = {type(None): _PLAIN, bool: _PLAIN, str: _PLAIN, float: _PLAIN, int: _INT}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_FIELD_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {}  # a node class -> its field values, in order
_CONSTS: dict[Any, list[Any]] = {}  # the encoding of each enum member / DataType met (singletons)


def _kind_of(x: Any) -> int:
    """The encoding of `x`'s class, remembered in `_KINDS`. Raises TypeError for a value the format
    has no encoding for."""
    cls = type(x)
    if isinstance(x, (bool, str, float)):
        kind = _PLAIN
    elif isinstance(x, int):
        kind = _INT
    elif isinstance(x, DataType):
        kind = _DT
    elif isinstance(x, enum.Enum):
        kind = _EN
    elif isinstance(x, tuple):
        kind = _TUP
    elif isinstance(x, list):
        kind = _LST
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        kind = _DC
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(x))
        if len(names) > 1:
            _FIELD_VALUES[cls] = operator.attrgetter(*names)
        elif names:
            one = operator.attrgetter(names[0])
            _FIELD_VALUES[cls] = lambda node: (one(node),)
        else:
            _FIELD_VALUES[cls] = lambda node: ()
    else:
        raise TypeError(f"cannot serialize a value of type {cls.__name__}: {x!r}")
    _KINDS[cls] = kind
    return kind


class _Encoder:
    def __init__(self) -> None:
        self.objects: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps ids stable while encoding
        self.classes: dict[type, int] = {}
        self.class_table: list[list[Any]] = []

    def class_index(self, cls: type) -> int:
        idx = self.classes.get(cls)
        if idx is None:
            if not cls.__module__.startswith("pypto."):
                raise TypeError(f"cannot serialize {cls.__qualname__}: not a pypto IR class")
            idx = self.classes[cls] = len(self.class_table)
            self.class_table.append([cls.__module__, cls.__qualname__, list(_FIELD_NAMES[cls])])
        return idx

    def encode(self, x: Any) -> Any:
        kind = _KINDS.get(type(x))
        if kind is None:
            kind = _kind_of(x)
        if kind == _PLAIN:
            return x
        if kind == _DC:
            objects = self.objects
            idx = objects.get(id(x))
            if idx is not None:
                return [_REF, idx]
            objects[id(x)] = len(objects)
            self.keep.append(x)
            cls = type(x)
            cls_idx = self.classes.get(cls)
            out = [_NODE, self.class_index(cls) if cls_idx is None else cls_idx]
            kinds, encode, consts = _KINDS, self.encode, _CONSTS
            for v in _FIELD_VALUES[cls](x):
                k = kinds.get(type(v))
                if k == _PLAIN:
                    out.append(v)
                elif k == _EN or k == _DT:
                    c = consts.get(v)
                    if c is None:
                        c = consts[v] = encode(v)
                    out.append(c)
                else:
                    out.append(encode(v))
            return out
        if kind == _TUP:
            return [_TUPLE, *[self.encode(y) for y in x]]
        if kind == _INT:
            return x if _INT64_MIN <= x <= _UINT64_MAX else [_BIGINT, str(x)]
        if kind == _DT:
            return [_DTYPE, x.name]
        if kind == _EN:
            cls = type(x)
            return [_ENUM, cls.__module__, cls.__qualname__, x.name]
        return [_LIST, *[self.encode(y) for y in x]]


def serialize(node: Any) -> bytes:
    """Encode an IR node (Program, Function, Stmt, Expr, Type, MemRef, views, Span) as MessagePack.

    Spans are kept; objects referenced several times (e.g. a Var) are written once and referenced
    back, so `deserialize` restores the sharing (SPEC §4). Plain values (None, bool, int, float,
    str, tuples, lists, DataTypes, pypto enums) may appear anywhere, including at the root.

    Raises:
        TypeError: for a value that is none of the above (e.g. a dict or a non-pypto object).
    """
    import msgpack  # loaded by the first (de)serialization, not by `import pypto.ir`

    enc = _Encoder()
    root = enc.encode(node)
    return msgpack.packb({"format": _FORMAT, "version": _VERSION, "classes": enc.class_table,
                          "root": root}, use_bin_type=True)


def _resolve(module: str, qualname: str) -> Any:
    if not module.startswith("pypto."):
        raise ValueError(f"refusing to load {module}.{qualname}: not a pypto class")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class _Decoder:
    def __init__(self, class_table: list[Any]) -> None:
        self.classes: list[tuple[type, list[str]]] = []
        for module, qualname, names in class_table:
            cls = _resolve(module, qualname)
            if not dataclasses.is_dataclass(cls):
                raise ValueError(f"{module}.{qualname} is not an IR node class")
            self.classes.append((cls, names))
        self.objects: list[Any] = []

    def decode(self, x: Any) -> Any:
        if not isinstance(x, list):
            return x
        tag = x[0]
        if tag == _NODE:
            return self.node(x)
        if tag == _REF:
            return self.objects[x[1]]
        if tag == _TUPLE:
            return tuple(self.decode(y) for y in x[1:])
        if tag == _LIST:
            return [self.decode(y) for y in x[1:]]
        if tag == _DTYPE:
            return dtype_from_name(x[1])
        if tag == _ENUM:
            cls = _resolve(x[1], x[2])
            if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
                raise ValueError(f"{x[1]}.{x[2]} is not an enum")
            return cls[x[3]]
        if tag == _BIGINT:
            return int(x[1])
        raise ValueError(f"unknown tag {tag!r} in serialized IR")

    def node(self, x: list[Any]) -> Any:
        slot = len(self.objects)
        self.objects.append(None)
        cls, names = self.classes[x[1]]
        if len(names) != len(x) - 2:
            raise ValueError(f"{cls.__name__}: {len(x) - 2} values for {len(names)} fields")
        values = dict(zip(names, (self.decode(y) for y in x[2:])))
        flds = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(values) - set(flds)
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        obj = cls(**{k: v for k, v in values.items() if flds[k].init})
        for k, v in values.items():
            if not flds[k].init:
                object.__setattr__(obj, k, v)
        if cls is Span and obj == Span.unknown():
            obj = Span.unknown()
        self.objects[slot] = obj
        return obj


def deserialize(data: bytes) -> Any:
    """Decode bytes written by `serialize` back into IR nodes (SPEC §4), restoring shared objects.

    Raises:
        ValueError: if `data` is not a pypto IR payload of a supported version or is malformed.
    """
    import msgpack

    try:
        payload = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=False)
    except Exception as e:  # msgpack raises several unrelated exception types
        raise ValueError(f"not a MessagePack IR payload: {e}") from e
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError("not a pypto IR payload")
    if payload.get("version") != _VERSION:
        raise ValueError(f"unsupported pypto IR payload version {payload.get('version')!r}")
    try:
        return _Decoder(payload["classes"]).decode(payload["root"])
    except (KeyError, IndexError, TypeError, AttributeError, ImportError) as e:
        raise ValueError(f"malformed pypto IR payload: {e}") from e
