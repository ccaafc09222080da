"""`args_dump/`: task arguments as binary tensors plus a JSON index (SPEC §12 runtime DFX,
`enable_dump_args`; the snapshots come from `pypto.runtime.sim.argdump`).

`args_dump/args_dump.json`:
```
{"program", "entry", "level", "byte_order": "little", "layout": "row-major, contiguous",
 "tasks": [{"task_id", "kernel", "core",
            "args": [{"index", "name", "direction", "dtype", "torch_dtype", "shape",
                      "before": "<file>" | null, "after": "<file>" | null}]}]}
```
`before` is the argument as the task found it (In and InOut arguments), `after` as the task left it
(Out and InOut). Each file (named `t<task>_<arg>_<before|after>.bin`, relative to `args_dump/`)
holds the tensor's elements in row-major order, little-endian, with no header; read one back with
`torch.frombuffer(data, dtype=torch.<torch_dtype>).reshape(shape)`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import torch

from ..sim.record import RunRecord
from . import ARGS_DUMP_DIR  # the folder name lives in the package, which loads this module lazily

__all__ = ["ARGS_DUMP_DIR", "write_args_dump"]


def _bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().reshape(-1)
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def write_args_dump(record: RunRecord, level: int, folder: Path) -> Path:
    """Write the argument snapshots of `record` into `folder / "args_dump"` (replacing an older
    dump) and return the index file's path."""
    out = folder / ARGS_DUMP_DIR
    tmp = folder / (ARGS_DUMP_DIR + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tasks: list[dict[str, Any]] = []
    for d in record.arg_dumps:
        args = []
        for a in d["args"]:
            entry = {k: a[k] for k in ("index", "name", "direction", "dtype", "torch_dtype", "shape")}
            stem = f"t{d['task_id']}_{re.sub(r'[^A-Za-z0-9_]', '_', a['name'])}"
            for when in ("before", "after"):
                value = a[when]
                entry[when] = None
                if value is not None:
                    name = f"{stem}_{when}.bin"
                    (tmp / name).write_bytes(_bytes(value))
                    entry[when] = name
            args.append(entry)
        tasks.append({"task_id": d["task_id"], "kernel": d["kernel"], "core": d["core"], "args": args})
    index = {"program": record.program, "entry": record.entry, "level": level, "byte_order": "little",
             "layout": "row-major, contiguous", "tasks": tasks}
    (tmp / "args_dump.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out / "args_dump.json"
