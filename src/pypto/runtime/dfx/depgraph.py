"""Task dependency graph of a run, as Graphviz DOT and as JSON (SPEC §7 runtime DFX).

Nodes are tasks (`t<id>`, labelled with the kernel, task id and core); an edge `t<a> -> t<b>`
means task b waited for task a, labelled with the kind of conflict that made the dependency:
RAW, WAW, WAR (overlapping DDR regions) or explicit.

JSON: `{"program", "entry", "tasks": [{"id", "kernel", "core", "start_cycle", "end_cycle",
"cycles", "deps": [ids]}], "edges": [{"src", "dst", "kind"}]}`.
"""

from __future__ import annotations

from typing import Any

from ..sim.record import RunRecord

__all__ = ["task_graph_json", "task_graph_dot"]


def task_graph_json(record: RunRecord) -> dict[str, Any]:
    """The task graph as a JSON-ready dict."""
    tasks = [{"id": t.task_id, "kernel": t.kernel, "core": t.core, "start_cycle": t.start_cycle,
              "end_cycle": t.end_cycle, "cycles": t.cycles, "deps": sorted(t.deps)} for t in record.tasks]
    edges = [{"src": d, "dst": t.task_id, "kind": k} for t in record.tasks for d, k in sorted(t.deps.items())]
    return {"program": record.program, "entry": record.entry, "tasks": tasks, "edges": edges}


def _quote(s: str) -> str:
    """A DOT string literal: quotes escaped, newlines as DOT's `\\n` line breaks."""
    return '"' + s.replace('"', '\\"').replace("\n", "\\n") + '"'


def task_graph_dot(record: RunRecord) -> str:
    """The task graph in Graphviz DOT."""
    lines = [f"digraph {_quote(record.program + ' tasks')} {{", "  rankdir=LR;",
             "  node [shape=box, fontname=monospace];"]
    for t in record.tasks:
        label = f"{t.kernel}\n#{t.task_id} {t.core or t.core_type}"
        lines.append(f"  t{t.task_id} [label={_quote(label)}];")
    for t in record.tasks:
        for d, kind in sorted(t.deps.items()):
            lines.append(f"  t{d} -> t{t.task_id} [label={_quote(kind)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
