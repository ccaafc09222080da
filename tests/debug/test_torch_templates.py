"""Every PyTorch template of `pypto.debug.torch_ops` against the simulator, which runs each op's
OpSpec semantics: one small tile-level kernel per op, run both ways on the same inputs; and the
registry check that no op lacks a template."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.debug import torch_codegen
from pypto.debug.torch_ops import TEMPLATES, UNSUPPORTED, template_for
from pypto.ops.registry import all_ops

M, N = 16, 32
T = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32, "UINT8": torch.uint8}


def program(body: str, ins: list[tuple[str, str, tuple]], out: tuple[str, tuple]):
    def ty(dt, shape):
        return f"pl.Tensor[[{', '.join(map(str, shape))}], pl.{dt}]"

    params = ", ".join(f"{n}: {ty(dt, s)}" for n, dt, s in ins)
    odt, oshape = out
    sig = f"self, {params}, y: pl.Out[{ty(odt, oshape)}]) -> {ty(odt, oshape)}"
    args = ", ".join(n for n, _, _ in ins)
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return pl.parse(f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k({sig}:
{lines}
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main({sig}:
        y = self.k({args}, y)
        return y
""")


def rand(dt, shape, kind):
    """Inputs of `dt`; `kind` is comma-separated: "pos" (positive), "ties" (few distinct float
    values), "permK" (INT32 rows of distinct indices below K)."""
    kinds = kind.split(",")
    perm = next((int(k[4:]) for k in kinds if k.startswith("perm")), None)
    if dt == "INT32" and perm is not None:
        return torch.stack([torch.randperm(perm)[:shape[1]] for _ in range(shape[0])]).to(torch.int32)
    if dt == "INT32":
        return torch.randint(1 if "pos" in kinds else -20, 20, shape, dtype=torch.int32)
    x = torch.randn(*shape)
    if "ties" in kinds:   # sorting must order equal values by index
        x = torch.round(x * 2) / 2
    if "pos" in kinds:
        x = x.abs() + 0.5
    return x.to(T[dt])


LOAD = f"t = pl.load(x, [0, 0], [{M}, {N}])"
LOAD2 = f"{LOAD}\nu = pl.load(z, [0, 0], [{M}, {N}])"
TMP = f"tmp = pl.create_tile([{M}, {N}], dtype=pl.FP32, target_memory=pl.Mem.Vec)"
X, XZ = [("x", "FP32", (M, N))], [("x", "FP32", (M, N)), ("z", "FP32", (M, N))]
XI, XZI = [("x", "INT32", (M, N))], [("x", "INT32", (M, N)), ("z", "INT32", (M, N))]
COL = [("x", "FP32", (M, N)), ("v", "FP32", (M, 1))]
ROW = [("x", "FP32", (M, N)), ("v", "FP32", (1, N))]
MM = [("a", "FP16", (M, M)), ("b", "FP16", (M, N))]
MM_BODY = (f"a1 = pl.load(a, [0, 0], [{M}, {M}], target_memory=pl.Mem.Mat)\n"
           f"b1 = pl.load(b, [0, 0], [{M}, {N}], target_memory=pl.Mem.Mat)\n"
           "a0 = pl.move(a1, target_memory=pl.Mem.Left)\nb0 = pl.move(b1, target_memory=pl.Mem.Right)\n")

#  case id            body (result in r)                                     inputs  output      input kind
CASES = [
    *[(op, f"{LOAD}\nr = pl.tile.{op}(t)", X, ("FP32", (M, N)), kind)
      for op, kind in (("exp", ""), ("log", "pos"), ("sqrt", "pos"), ("rsqrt", "pos"), ("recip", "pos"),
                       ("neg", ""), ("abs", ""), ("relu", ""), ("sin", ""), ("cos", ""))],
    *[(op, f"{LOAD2}\nr = pl.tile.{op}(t, u)", XZ, ("FP32", (M, N)), "pos")
      for op in ("add", "sub", "mul", "div", "maximum", "minimum", "fmod", "rem")],
    *[(op, f"{LOAD}\nr = pl.tile.{op}(t, 1.5)", X, ("FP32", (M, N)), "")
      for op in ("adds", "subs", "muls", "divs", "maximums", "minimums", "fmods", "rems")],
    *[(op, f"{LOAD2}\nr = pl.tile.{op}(t, u)", XZI, ("INT32", (M, N)), "pos")
      for op in ("and_", "or_", "xor", "div", "rem")],
    ("shls", f"{LOAD}\nr = pl.tile.shls(t, 2)", XI, ("INT32", (M, N)), ""),
    ("shrs", f"{LOAD}\nr = pl.tile.shrs(t, 1)", XI, ("INT32", (M, N)), ""),
    ("not_", f"{LOAD}\nr = pl.tile.not_(t)", XI, ("INT32", (M, N)), ""),
    ("lrelu", f"{LOAD}\nr = pl.tile.lrelu(t, 0.1)", X, ("FP32", (M, N)), ""),
    ("prelu", f"{LOAD2}\nr = pl.tile.prelu(t, u)", XZ, ("FP32", (M, N)), ""),
    *[(f"{side}_{red}", f"{LOAD}\n{TMP}\nr = pl.tile.{side}_{red}(t, tmp)", X,
       ("INT32" if red.startswith("arg") else "FP32", (M, 1) if side == "row" else (1, N)), "pos")
      for side in ("row", "col") for red in ("sum", "max", "min", "prod", "argmax", "argmin")],
    *[(f"row_expand{s}", f"{LOAD}\nw = pl.load(v, [0, 0], [{M}, 1])\nr = pl.tile.row_expand{s}(t, w)", COL,
       ("FP32", (M, N)), "pos")
      for s in ("", "_add", "_sub", "_mul", "_div", "_max", "_min", "_expdif")],
    *[(f"col_expand{s}", f"{LOAD}\nw = pl.load(v, [0, 0], [1, {N}])\nr = pl.tile.col_expand{s}(t, w)", ROW,
       ("FP32", (M, N)), "pos")
      for s in ("", "_add", "_mul", "_div")],
    ("expands", f"{LOAD}\nr = pl.tile.expands(t, 3.0)", X, ("FP32", (M, N)), ""),
    ("cast_fp16", f"{LOAD}\nr = pl.tile.cast(t, target_type=pl.FP16)", X, ("FP16", (M, N)), ""),
    ("cast_floor", f"{LOAD}\nr = pl.tile.cast(t, target_type=pl.INT32, mode=\"floor\")", X, ("INT32", (M, N)), ""),
    ("cmp", f"{LOAD2}\nr = pl.tile.cmp(t, u, cmp_type=\"lt\")", XZ, ("UINT8", (M, N)), ""),
    ("cmps", f"{LOAD}\nr = pl.tile.cmps(t, 0.0, cmp_type=\"ge\")", X, ("UINT8", (M, N)), ""),
    ("sel", f"{LOAD2}\nm = pl.tile.cmp(t, u, cmp_type=\"gt\")\nr = pl.tile.sel(m, t, u)", XZ, ("FP32", (M, N)), ""),
    ("full", f"r = pl.tile.full([{M}, {N}], 2.5, dtype=pl.FP32)\n{LOAD}", X, ("FP32", (M, N)), ""),
    ("ci", f"r = pl.tile.ci(3, [{M}, {N}], dtype=pl.INT32)\n{LOAD}", X, ("INT32", (M, N)), ""),
    ("tri", f"r = pl.tile.tri([{M}, {N}], 1, dtype=pl.FP32)\n{LOAD}", X, ("FP32", (M, N)), ""),
    ("transpose", f"t = pl.load(x, [0, 0], [{N}, {M}])\nr = pl.tile.transpose(t)", [("x", "FP32", (N, M))],
     ("FP32", (M, N)), ""),
    ("concat", f"t = pl.load(x, [0, 0], [{M}, 16])\nu = pl.load(z, [0, 0], [{M}, 16])\nr = pl.tile.concat(t, u)",
     [("x", "FP32", (M, 16)), ("z", "FP32", (M, 16))], ("FP32", (M, N)), ""),
    ("fillpad", f"t = pl.load(x, [0, 0], [{M}, {N}], valid_shape=[{M}, 20])\nr = pl.tile.fillpad(t)", X,
     ("FP32", (M, N)), ""),
    ("matmul", f"{MM_BODY}r = pl.matmul(a0, b0)", MM, ("FP32", (M, N)), ""),
    ("matmul_acc", f"{MM_BODY}c0 = pl.matmul(a0, b0)\nr = pl.matmul_acc(c0, a0, b0)", MM, ("FP32", (M, N)), ""),
    ("gather", f"{LOAD}\ni = pl.load(idx, [0, 0], [{M}, 8])\nr = pl.tile.gather(t, i)",
     [*X, ("idx", "INT32", (M, 8))], ("FP32", (M, 8)), f"perm{N}"),
    ("gather_int", f"t = pl.load(x, [0, 0], [{M}, {N}])\ni = pl.load(idx, [0, 0], [{M}, 8])\nr = pl.tile.gather(t, i)",
     [*XI, ("idx", "INT32", (M, 8))], ("INT32", (M, 8)), f"perm{N}"),
    ("gather_row", f"{LOAD}\ni = pl.load(idx, [0, 0], [4, 1])\nr = pl.tile.gather_row(t, i)",
     [*X, ("idx", "INT32", (4, 1))], ("FP32", (4, N)), f"perm{M}"),
    ("scatter", f"{LOAD}\ni = pl.load(idx, [0, 0], [{M}, 8])\nu = pl.load(z, [0, 0], [{M}, 8])\n"
     "r = pl.tile.scatter(t, i, u)", [*X, ("idx", "INT32", (M, 8)), ("z", "FP32", (M, 8))], ("FP32", (M, N)),
     f"perm{N}"),
    ("scatter_update", f"{LOAD}\ni = pl.load(idx, [0, 0], [4, 1])\nu = pl.load(z, [0, 0], [4, {N}])\n"
     "r = pl.tile.scatter_update(t, i, u)", [*X, ("idx", "INT32", (4, 1)), ("z", "FP32", (4, N))],
     ("FP32", (M, N)), f"perm{M}"),
    ("sort32", "t = pl.load(x, [0, 0], [8, 64])\ni = pl.tile.ci(0, [8, 64], dtype=pl.INT32)\nr = pl.tile.sort32(t, i)",
     [("x", "FP32", (8, 64))], ("FP32", (8, 128)), "ties"),
    ("sort32_idx", "t = pl.load(x, [0, 0], [8, 64])\ni = pl.load(idx, [0, 0], [8, 64])\nr = pl.tile.sort32(t, i)",
     [("x", "FP32", (8, 64)), ("idx", "INT32", (8, 64))], ("FP32", (8, 128)), "ties,perm64"),
    ("mrgsort", "t = pl.load(x, [0, 0], [8, 64])\ni = pl.tile.ci(0, [8, 64], dtype=pl.INT32)\n"
     "p = pl.tile.sort32(t, i)\nr = pl.tile.mrgsort(p, block_len=32)", [("x", "FP32", (8, 64))],
     ("FP32", (8, 128)), "ties"),
]


@pytest.mark.parametrize("case,body,ins,out,kind", CASES, ids=[c[0] for c in CASES])
def test_template_matches_the_simulator(case, body, ins, out, kind) -> None:
    compiled = ir.compile(program(body, ins, out), dump_passes=False)
    inputs = [rand(dt, shape, kind) for _, dt, shape in ins]
    y_sim = torch.zeros(*out[1], dtype=T[out[0]])
    compiled(*inputs, y_sim)
    ns: dict = {}
    exec(torch_codegen(compiled.program), ns)   # noqa: S102
    y_ref = torch.zeros(*out[1], dtype=T[out[0]])
    ns["run"](*[t.clone() for t in inputs], y_ref)
    tol = 1e-3 if out[0] == "FP16" or case.startswith("matmul") else 1e-5
    torch.testing.assert_close(y_ref, y_sim, rtol=tol, atol=tol, equal_nan=True)


def test_every_op_with_semantics_has_a_template() -> None:
    """The registry against `torch_ops.TEMPLATES`: an op the simulator can run (`compute`) is
    expressible in a script, or excluded in `UNSUPPORTED` with a reason."""
    missing = [s.name for s in all_ops() if s.compute is not None and template_for(s.name) is None
               and s.name not in UNSUPPORTED]
    assert missing == []
    for name, reason in UNSUPPORTED.items():
        assert template_for(name) is None and len(reason) > 20, name
    # every table key names a registered op (full name) or the leaf of one
    names = {s.name for s in all_ops()}
    leaves = {n.split(".", 1)[1] for n in names}
    assert [k for k in TEMPLATES if k not in names and k not in leaves] == []
    assert len(names) > 200


def test_sort_and_gather_scripts_match_torch() -> None:
    """A tensor-level program of the whole family through every pass dump, against plain torch."""
    @pl.jit
    def family(x: pl.Tensor, idx: pl.Tensor, ridx: pl.Tensor, ci: pl.Tensor, z: pl.Tensor, u: pl.Tensor,
               g: pl.Out[pl.Tensor], r: pl.Out[pl.Tensor], sc: pl.Out[pl.Tensor], su: pl.Out[pl.Tensor],
               p: pl.Out[pl.Tensor], m: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            g[:] = pl.gather(x, idx)
            r[:] = pl.gather_row(x, ridx)
            sc[:] = pl.scatter(x, idx, z)
            su[:] = pl.scatter_update(x, ridx, u)
            pairs = pl.sort32(x, ci)
            p[:] = pairs
            m[:] = pl.mrgsort(pairs, block_len=32)
        return m

    from pypto.runtime import RunConfig

    x = torch.round(torch.randn(16, 64) * 4) / 4     # ties too
    idx = rand("INT32", (16, 8), "perm64")
    ridx = torch.tensor([[3], [0], [15], [7]], dtype=torch.int32)
    ci = torch.arange(64, dtype=torch.int32).expand(16, 64).contiguous()
    z, u = torch.randn(16, 8), torch.randn(4, 64)
    outs = [torch.zeros(16, 8), torch.zeros(4, 64), torch.zeros(16, 64), torch.zeros(16, 64),
            torch.zeros(16, 128), torch.zeros(16, 128)]
    want_g = torch.gather(x, 1, idx.long())
    want_su = x.clone()
    want_su[ridx[:, 0].long()] = u
    pairs = []
    for blk in range(2):
        v, i = torch.sort(x[:, blk * 32:(blk + 1) * 32], dim=1, descending=True, stable=True)
        pairs.append(torch.stack([v, (i + blk * 32).float()], dim=-1).flatten(1))
    v, i = torch.sort(x, dim=1, descending=True, stable=True)
    want = [want_g, x[ridx[:, 0].long()], x.clone().scatter_(1, idx.long(), z), want_su,
            torch.cat(pairs, dim=1), torch.stack([v, i.float()], dim=-1).flatten(1)]
    cp = family.compile(x, idx, ridx, ci, z, u, *outs, config=RunConfig(dump_passes=True))
    rep = cp.validate_ir([x, idx, ridx, ci, z, u, *outs], want, rtol=0, atol=0)
    assert {s.status for s in rep.stages} == {"ok"}, str(rep)
    assert len(rep.stages) > 15
