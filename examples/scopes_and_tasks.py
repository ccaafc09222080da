"""Scopes and tasks (SPEC §13): a MANUAL runtime scope ordered only by TaskIds, run on the simulator
with the sanitizer; then the same program with one dependency left out, which the sanitizer
reports as a race naming both source lines.

    python examples/scopes_and_tasks.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.runtime.sim.sanitizer import SanitizerError


@pl.jit.incore
def scale(a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    o[:] = pl.mul(a, 2.0)
    return o


# --- doc: scopes-and-tasks ---
@pl.jit
def three_stages(a: pl.Tensor, b: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.manual_scope():                          # the runtime derives no order in here
        b, t0 = pl.submit(scale, a, b, name_hint="first")
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]) as t1:
            c[:] = pl.add(b, 1.0)                    # waits for t0: it reads b
        d, t2 = pl.submit(scale, c, d, deps=[t1])    # waits for t1: it reads c
    return d
# --- end doc ---


@pl.jit
def forgets_a_dependency(a: pl.Tensor, b: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.manual_scope():
        b, t0 = pl.submit(scale, a, b)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]) as t1:
            c[:] = pl.add(b, 1.0)
        d, t2 = pl.submit(scale, c, d)               # no deps=[t1]: races the region's write of c
    return d


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(64, 128)
    b, c, d = torch.empty(64, 128), torch.empty(64, 128), torch.empty(64, 128)
    three_stages(a, b, c, d, config=RunConfig(sanitize=True))
    check("manual scope ordered by TaskIds (sanitized)", d, (2 * a + 1) * 2)
    tasks = three_stages.compile(a, b, c, d).last_run.tasks
    assert [dict(t.deps) for t in tasks] == [{}, {0: "explicit"}, {1: "explicit"}], tasks
    print(f"PASS task order: {' -> '.join(t.name_hint or t.kernel for t in tasks)}")

    try:
        forgets_a_dependency(a, b, c, d, config=RunConfig(sanitize=True))
    except SanitizerError as err:
        assert "[unordered-conflict]" in str(err), err
        print("PASS the sanitizer reports the missing dependency:")
        print("    " + str(err.findings[0]).splitlines()[0])
    else:
        print("FAIL the sanitizer did not report the missing dependency")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
