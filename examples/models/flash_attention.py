"""Flash attention with an online softmax over K/V blocks, checked against torch.

    out = softmax(Q K^T / sqrt(d) + mask) V        per head; Q [Sq, H*d], K, V [Skv, H*d]

The work is split the way an Ascend910B has to split it: the cube unit (AIC) multiplies, the vector
unit (AIV) does the softmax, and on this chip an accumulator (Acc) tile cannot reach the vector
unit nor a vector tile the cube unit except through DDR. So each (head, block of BQ query rows) is
four tasks, each looping over the `nkv` key/value blocks of BK rows (the flash-decoding split):

1. `attn_scores` (AIC): S_j = Q K_j^T for every block j (`matmul(..., b_trans=True)`), to DDR.
2. `attn_softmax` (AIV): per block, the block-local softmax numerator P_j = exp(S_j * scale + bias
   - m_j) with its row max m_j and row sum l_j. Under a causal mask only the diagonal block
   (j == the query block) needs masking: an `if`/`pl.yield_` picks the masked or the plain scores,
   and blocks above the diagonal are never visited (`nkv` = query block + 1).
3. `attn_pv` (AIC): O_j = P_j V_j for every block, to DDR.
4. `attn_combine` (AIV): the online softmax. Running max m, running sum l and the output
   accumulator O are loop-carried tiles; block j folds in as
       m' = max(m, m_j),  a = exp(m - m'),  b = exp(m_j - m'),
       l' = a l + b l_j,  O' = a O + b O_j,
   and the result is O / l. No block ever sees the whole row of scores at once.

`kbias` [1, Skv] is added to every row of the scores (0 for real keys, -1e30 for padding): how
MiniLM masks its padded tokens. The tasks of different heads and query blocks are independent, so
the simulator spreads them over the cores. `attention_function(...)` returns an inline helper that
dispatches all of this from an orchestration function; the LLaMA layer and MiniLM call it.

    python examples/models/flash_attention.py [--platform a5sim]
"""

import argparse
import math
import sys

import torch
from _blocks import Timings, compile_program, report, run_program

import pypto.language as pl

NEG = -1.0e30  # additive mask of a key no query may see (exp() of it is 0; no inf - inf NaNs)


def attention_kernels(BQ: int, BK: int, D: int, SKV: int, dtype, causal: bool):
    """The four InCore kernels for query blocks of BQ rows, key/value blocks of BK rows, head size
    D, Skv keys, Q/K/V/P/output dtype `dtype` (FP16 or FP32); scores and statistics are FP32.

    Raises:
        ValueError: Skv not a multiple of BK, or a causal mask with BQ != BK.
    """
    if SKV % BK:
        raise ValueError(f"Skv={SKV} is not a multiple of the key block {BK}")
    if causal and BQ != BK:
        raise ValueError(f"a causal mask needs square diagonal blocks, got BQ={BQ}, BK={BK}")
    NKV = SKV // BK
    scale = 1.0 / math.sqrt(D)
    cast_out = dtype is not pl.FP32

    @pl.function(type=pl.FunctionType.InCore)
    def attn_scores(q: pl.Tensor[[BQ, D], dtype], k: pl.Tensor[[SKV, D], dtype], nkv: pl.Scalar[pl.INDEX],
                    s: pl.Out[pl.Tensor[[BQ, SKV], pl.FP32]]):
        qa = pl.move(pl.load(q, [0, 0], [BQ, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        for j in pl.range(nkv):
            kb = pl.move(pl.load(k, [j * BK, 0], [BK, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            s = pl.store(pl.matmul(qa, kb, b_trans=True), [0, j * BK], s)

    @pl.function(type=pl.FunctionType.InCore)
    def attn_softmax(s: pl.Tensor[[BQ, SKV], pl.FP32], kbias: pl.Tensor[[1, SKV], pl.FP32],
                     qi: pl.Scalar[pl.INDEX], nkv: pl.Scalar[pl.INDEX], p: pl.Out[pl.Tensor[[BQ, SKV], dtype]],
                     mx: pl.Out[pl.Tensor[[BQ, NKV], pl.FP32]], sm: pl.Out[pl.Tensor[[BQ, NKV], pl.FP32]]):
        scratch = pl.create_tile([BQ, BK], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        if causal:  # a Python constant: decided while parsing
            lower = pl.tile.tri([BQ, BK], 0, dtype=pl.FP32)       # 1 where key <= query
            diag_mask = pl.muls(pl.adds(lower, -1.0), -NEG)       # 0 there, NEG above the diagonal
        for j in pl.range(nkv):
            sj = pl.muls(pl.load(s, [0, j * BK], [BQ, BK]), scale)
            sj = pl.col_expand_add(sj, pl.load(kbias, [0, j * BK], [1, BK]))
            if causal:
                if j == qi:   # the diagonal block: hide the keys after each query
                    masked = pl.add(sj, diag_mask)
                    sj = pl.yield_(masked)
                else:         # blocks below the diagonal are fully visible
                    sj = pl.yield_(sj)
            mj = pl.row_max(sj, scratch)
            pj = pl.exp(pl.row_expand_sub(sj, mj))
            lj = pl.row_sum(pj, scratch)
            if cast_out:
                p = pl.store(pl.cast(pj, dtype), [0, j * BK], p)
            else:
                p = pl.store(pj, [0, j * BK], p)
            mx = pl.store(mj, [0, j], mx)
            sm = pl.store(lj, [0, j], sm)

    @pl.function(type=pl.FunctionType.InCore)
    def attn_pv(p: pl.Tensor[[BQ, SKV], dtype], v: pl.Tensor[[SKV, D], dtype], nkv: pl.Scalar[pl.INDEX],
                o: pl.Out[pl.Tensor[[NKV * BQ, D], pl.FP32]]):
        for j in pl.range(nkv):
            pa = pl.move(pl.load(p, [0, j * BK], [BQ, BK], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            vb = pl.move(pl.load(v, [j * BK, 0], [BK, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            o = pl.store(pl.matmul(pa, vb), [j * BQ, 0], o)

    @pl.function(type=pl.FunctionType.InCore)
    def attn_combine(mx: pl.Tensor[[BQ, NKV], pl.FP32], sm: pl.Tensor[[BQ, NKV], pl.FP32],
                     o: pl.Tensor[[NKV * BQ, D], pl.FP32], nkv: pl.Scalar[pl.INDEX],
                     out: pl.Out[pl.Tensor[[BQ, D], dtype]]):
        m0 = pl.load(mx, [0, 0], [BQ, 1])
        l0 = pl.load(sm, [0, 0], [BQ, 1])
        o0 = pl.load(o, [0, 0], [BQ, D])
        for j, (m_run, l_run, acc) in pl.range(1, nkv, init_values=(m0, l0, o0)):
            mj = pl.load(mx, [0, j], [BQ, 1])
            m_new = pl.maximum(m_run, mj)
            alpha = pl.exp(pl.sub(m_run, m_new))   # rescales what was accumulated so far
            beta = pl.exp(pl.sub(mj, m_new))       # scales block j
            l_new = pl.add(pl.mul(alpha, l_run), pl.mul(beta, pl.load(sm, [0, j], [BQ, 1])))
            oj = pl.load(o, [j * BQ, 0], [BQ, D])
            acc_new = pl.add(pl.row_expand_mul(acc, alpha), pl.row_expand_mul(oj, beta))
            _m_out, l_out, acc_out = pl.yield_(m_new, l_new, acc_new)   # the final max is not needed
        res = pl.row_expand_div(acc_out, l_out)
        if cast_out:
            out = pl.store(pl.cast(res, dtype), [0, 0], out)
        else:
            out = pl.store(res, [0, 0], out)

    return attn_scores, attn_softmax, attn_pv, attn_combine


def attention_function(SQ: int, SKV: int, H: int, D: int, BQ: int, BK: int, dtype, causal: bool):
    """`attention(q, k, v, kbias, out)` for one sequence, an inline helper of Orchestration code:
    q [SQ, H*D], k, v [SKV, H*D] (dtype), kbias [1, SKV] FP32; writes and returns out [SQ, H*D].

    Spliced into the calling orchestration function, it creates the DDR scratch of scores,
    numerators, statistics and partial outputs, and submits the four tasks of every (head, query
    block); different (head, query block) pairs are independent.

    Raises:
        ValueError: Sq not a multiple of BQ, a causal mask with Sq != Skv, or an error of
            `attention_kernels`.
    """
    scores, softmax, pv, combine = attention_kernels(BQ, BK, D, SKV, dtype, causal)
    if SQ % BQ:
        raise ValueError(f"Sq={SQ} is not a multiple of the query block {BQ}")
    if causal and SQ != SKV:
        raise ValueError("a causal mask here needs as many queries as keys")
    NQ, NKV = SQ // BQ, SKV // BK
    HD = H * D

    @pl.inline
    def attention(q: pl.Tensor[[SQ, HD], dtype], k: pl.Tensor[[SKV, HD], dtype], v: pl.Tensor[[SKV, HD], dtype],
                  kbias: pl.Tensor[[1, SKV], pl.FP32], out: pl.Tensor[[SQ, HD], dtype]) -> pl.Tensor[[SQ, HD], dtype]:
        s = pl.create_tensor([H * SQ, SKV], dtype=pl.FP32)
        p = pl.create_tensor([H * SQ, SKV], dtype=dtype)
        mx = pl.create_tensor([H * SQ, NKV], dtype=pl.FP32)   # block row maxima m_j
        sm = pl.create_tensor([H * SQ, NKV], dtype=pl.FP32)   # block row sums l_j
        o = pl.create_tensor([H * SQ * NKV, D], dtype=pl.FP32)
        for h in pl.parallel(H):
            for i in pl.parallel(NQ):
                r = (h * NQ + i) * BQ
                if causal:
                    nkv = i + 1
                else:
                    nkv = NKV
                s_r = pl.slice(s, [BQ, SKV], [r, 0])
                p_r = pl.slice(p, [BQ, SKV], [r, 0])
                m_r = pl.slice(mx, [BQ, NKV], [r, 0])
                l_r = pl.slice(sm, [BQ, NKV], [r, 0])
                o_r = pl.slice(o, [NKV * BQ, D], [r * NKV, 0])
                scores(pl.slice(q, [BQ, D], [i * BQ, h * D]), pl.slice(k, [SKV, D], [0, h * D]), nkv, s_r)
                softmax(s_r, kbias, i, nkv, p_r, m_r, l_r)
                pv(p_r, pl.slice(v, [SKV, D], [0, h * D]), nkv, o_r)
                combine(m_r, l_r, o_r, nkv, pl.slice(out, [BQ, D], [i * BQ, h * D]))
        return out
    return attention


def torch_attention(q, k, v, H, causal, kbias=None):
    """softmax(Q K^T / sqrt(d) + mask) V per head in FP32; q [Sq, H*d], k, v [Skv, H*d]."""
    sq, hd = q.shape
    d = hd // H
    qh, kh, vh = (t.float().view(t.shape[0], H, d).transpose(0, 1) for t in (q, k, v))
    scores = qh @ kh.transpose(1, 2) / math.sqrt(d)
    if kbias is not None:
        scores = scores + kbias.float()
    if causal:
        scores = scores.masked_fill(torch.ones(sq, k.shape[0], dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ vh).transpose(0, 1).reshape(sq, hd)


def run(platform: str = "a2a3sim", causal: bool = True, S: int = 256, H: int = 2, D: int = 64,
        BQ: int = 64, BK: int = 64, pad: int = 0, seed: int = 0, sanitize: bool = False):
    """Compile and simulate attention over S tokens (FP16 Q/K/V), the last `pad` keys masked as
    padding; returns (out, reference, Timings)."""
    attention = attention_function(S, S, H, D, BQ, BK, pl.FP16, causal)

    @pl.program
    class FlashAttention:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, q: pl.Tensor[[S, H * D], pl.FP16], k: pl.Tensor[[S, H * D], pl.FP16],
                 v: pl.Tensor[[S, H * D], pl.FP16], kbias: pl.Tensor[[1, S], pl.FP32],
                 out: pl.Out[pl.Tensor[[S, H * D], pl.FP16]]):
            out = attention(q, k, v, kbias, out)

    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(S, H * D, generator=g).half() for _ in range(3))
    kbias = torch.zeros(1, S)
    kbias[0, S - pad:] = NEG
    out = torch.empty(S, H * D, dtype=torch.float16)
    t = Timings()
    compiled = compile_program(FlashAttention, platform, t)
    run_program(compiled, (q, k, v, kbias, out), t, sanitize)
    return out, torch_attention(q, k, v, H, causal, kbias if pad else None), t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    args = ap.parse_args()
    ok = True
    for causal in (True, False):
        out, ref, t = run(args.platform, causal)
        name = f"flash attention ({'causal' if causal else 'full'}, 256 tokens, 2 heads x 64, fp16, {args.platform})"
        ok &= report(name, out, ref, rtol=1e-2, atol=2e-3)
        print(f"  {t.line()}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
