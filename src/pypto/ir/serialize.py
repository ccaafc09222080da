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
from typing import Any

from ..core.dtype import DataType, dtype_from_name
from ..core.span import Span

__all__ = ["serialize", "deserialize"]

_FORMAT, _VERSION = "pypto-ir", 1
_NODE, _REF, _TUPLE, _DTYPE, _ENUM, _BIGINT, _LIST = range(7)
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


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
            self.class_table.append([cls.__module__, cls.__qualname__,
                                     [f.name for f in dataclasses.fields(cls)]])
        return idx

    def encode(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, str, float)):
            return x
        if isinstance(x, int):
            return x if _INT64_MIN <= x <= _UINT64_MAX else [_BIGINT, str(x)]
        if isinstance(x, DataType):
            return [_DTYPE, x.name]
        if isinstance(x, enum.Enum):
            cls = type(x)
            return [_ENUM, cls.__module__, cls.__qualname__, x.name]
        if isinstance(x, tuple):
            return [_TUPLE, *(self.encode(y) for y in x)]
        if isinstance(x, list):
            return [_LIST, *(self.encode(y) for y in x)]
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            idx = self.objects.get(id(x))
            if idx is not None:
                return [_REF, idx]
            self.objects[id(x)] = len(self.objects)
            self.keep.append(x)
            cls_idx = self.class_index(type(x))
            return [_NODE, cls_idx, *(self.encode(getattr(x, f.name)) for f in dataclasses.fields(x))]
        raise TypeError(f"cannot serialize a value of type {type(x).__name__}: {x!r}")


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
