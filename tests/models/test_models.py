"""The model examples (`examples/models/`) on the simulator against their torch references.

Tolerances follow the dtypes: FP16 matmul operands (FFN, flash attention, the LLaMA layer) carry
FP16 rounding of their activations into the result; MiniLM runs in FP32 and must match to ~1e-6.
"""

import math

import pytest
import torch

from pypto.ir.stmt import ForStmt, IfStmt
from pypto.ir.visitor import IRVisitor

PLATFORMS = ["a2a3sim", "a5sim"]


def _statements(func, kind) -> list:
    """Every statement of class `kind` in `func`'s body."""
    found = []

    class Finder(IRVisitor):
        def visit_stmt(self, st):
            if isinstance(st, kind):
                found.append(st)
            super().visit_stmt(st)

    Finder().visit_function(func)
    return found


def _overlapped(compiled) -> bool:
    """True when independent tasks overlapped in simulated time (the makespan is shorter than the
    tasks' cycles added up)."""
    run = compiled.last_run
    return run.makespan_cycles < sum(t.cycles for t in compiled.tasks)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ffn(platform):
    import ffn

    y, ref, t = ffn.run(platform)
    torch.testing.assert_close(y, ref, rtol=5e-3, atol=5e-3)
    compiled = t.extra["compiled"]
    kernels = [k.kernel for k in compiled.tasks]
    assert kernels.count("linear") == 2 * 8 + 4 and kernels.count("swiglu") == 8
    assert _overlapped(compiled)


@pytest.mark.parametrize(("causal", "pad", "sanitize"), [(True, 0, True), (False, 0, False), (False, 100, False)])
def test_flash_attention(causal, pad, sanitize):
    """Four K/V blocks of 64; `pad` masks the last 100 keys (the last block entirely), which the
    online softmax must weigh with zero. The causal run is sanitized (no uninitialised on-chip
    read, no overlapping live buffers, no out-of-bounds DDR access, no unordered conflict)."""
    import flash_attention

    out, ref, t = flash_attention.run("a2a3sim", causal=causal, pad=pad, sanitize=sanitize)
    assert out.dtype == torch.float16 and not torch.isnan(out).any()
    # FP16 rounding of P and of the output; a wrong rescaling of the running sum or output by
    # exp(m - m') would be off by far more
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=2e-3)
    program = t.extra["compiled"].program
    # the diagonal-block if/yield (only under the causal mask) ...
    ifs = _statements(program.get_function("attn_softmax"), IfStmt)
    assert len(ifs) == (1 if causal else 0) and all(len(s.return_vars) == 1 for s in ifs)
    # ... and the running max, running sum and output accumulator carried over the K/V blocks
    (loop,) = _statements(program.get_function("attn_combine"), ForStmt)
    assert [len(a.type.shape) for a in loop.iter_args] == [2, 2, 2]
    assert [a.type.shape[1].value for a in loop.iter_args] == [1, 1, 64]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_llama_layer(platform):
    import llama_layer

    out, ref, t = llama_layer.run(platform)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=5e-3)
    kernels = {k.kernel for k in t.extra["compiled"].tasks}
    assert {"rmsnorm", "linear", "rope_qkv", "attn_scores", "attn_softmax", "attn_pv", "attn_combine",
            "add_rmsnorm", "swiglu", "add"} <= kernels


def test_llama_rope_matches_complex_rotation():
    """The reference's RoPE (rotate-half form) is the complex rotation of (x1 + i x2) by angle
    pos * theta^(-2j/d), computed here independently."""
    import llama_layer as ll

    cos, sin = ll.rope_tables(8, 64)
    pos = torch.arange(8, dtype=torch.float64)[:, None]
    ang = pos * 10000.0 ** (-torch.arange(32, dtype=torch.float64) / 32)
    rot = torch.polar(torch.ones_like(ang), ang)
    torch.testing.assert_close(cos, rot.real.float())
    torch.testing.assert_close(sin, rot.imag.float())


@pytest.fixture(scope="module")
def checkpoint():
    import minilm

    return minilm.load_checkpoint()


def test_minilm_checkpoint_and_tokenizer(checkpoint):
    import minilm

    assert checkpoint["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert sum(k.startswith("encoder.layer.") for k in checkpoint) == 6 * 16
    ids, counts = minilm.tokenize(["A man is eating food.", "Hello"])
    assert ids.shape == (2, 16) and counts == [8, 3]
    assert ids[0, :8].tolist() == [101, 1037, 2158, 2003, 5983, 2833, 1012, 102]   # [CLS] a man ... [SEP]
    assert ids[1, 3:].eq(0).all()
    packed = minilm.pack_weights(checkpoint)
    torch.testing.assert_close(packed["w_qkv"][384:768, 384:768],
                               checkpoint["encoder.layer.1.attention.self.key.weight"].t())


def test_minilm_two_sentences(checkpoint):
    """All six layers on the simulator for two short sentences (the CI-sized run)."""
    import minilm

    sentences = ["A man is eating food.", "A man is eating a piece of bread."]
    emb, ids, counts, t = minilm.encode(sentences, "a2a3sim", checkpoint)
    ref = minilm.torch_minilm(checkpoint, ids, counts)
    cos = torch.nn.functional.cosine_similarity(emb, ref, dim=1)
    assert (cos >= 0.999).all(), cos
    torch.testing.assert_close(emb, ref, rtol=1e-4, atol=2e-6)
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(2))
    # sentence-transformers 6.2.0 gives 0.7553 for this pair with this checkpoint
    assert math.isclose((emb[0] @ emb[1]).item(), 0.7553, abs_tol=5e-4)
    kernels = {k.kernel for k in t.extra["compiled"].tasks}
    assert {"embed", "add_layernorm", "linear_bias", "attn_scores", "attn_softmax", "attn_pv", "attn_combine",
            "gelu", "mean_pool"} <= kernels


def test_minilm_padded_blocks_on_a5sim(checkpoint):
    """Sentences of different lengths padded to 32 tokens: two K/V blocks per sentence, the second
    partly or entirely padding (masked by the key bias, skipped by the pooling)."""
    import minilm

    sentences = ["Hello world.", "Two men pushed carts through the woods while the rain kept falling on them."]
    emb, ids, counts, _ = minilm.encode(sentences, "a5sim", checkpoint)
    assert ids.shape[1] == 32 and counts[0] < 16 < counts[1]
    ref = minilm.torch_minilm(checkpoint, ids, counts)
    assert (torch.nn.functional.cosine_similarity(emb, ref, dim=1) >= 0.999).all()
    torch.testing.assert_close(emb, ref, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("module", ["ffn", "flash_attention", "llama_layer", "minilm"])
def test_example_main_prints_pass(module, monkeypatch, capsys):
    mod = __import__(module)
    monkeypatch.setattr("sys.argv", [f"{module}.py"])
    with pytest.raises(SystemExit) as e:
        mod.main()
    out = capsys.readouterr().out
    assert e.value.code == 0, out
    assert "PASS" in out and "FAIL" not in out
    if module == "minilm":
        assert "A cheetah is running behind its prey." in out and "1.00" in out   # the similarity matrix


@pytest.mark.parametrize("module", ["llama_layer", "minilm"])
def test_model_programs_round_trip(module):
    """Every pass dump of the two largest programs (the LLaMA layer holds the FFN and the flash
    attention too) prints and re-parses to a structurally equal program."""
    from pypto import ir
    from pypto.compiler import VerificationLevel

    mod = __import__(module)
    program = mod.build_program() if module == "llama_layer" else mod.build_program(2, 32)
    ir.compile(program, dump_passes=False, verification_level=VerificationLevel.ROUNDTRIP)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_level_ffn(platform):
    """examples/models/tensor_ffn.py: the SwiGLU FFN with no tile, load, store or move in the source,
    blocked by the compiler into many tasks; one compile serves every (dynamic) row count."""
    from pathlib import Path

    import tensor_ffn

    from pypto.runtime import RunConfig

    source = Path(tensor_ffn.__file__).read_text()
    assert not any(f"pl.{word}(" in source for word in ("load", "store", "move", "create_tile"))
    tensor_ffn.tensor_ffn._cache.clear()
    for rows in (1, 97, 300):
        y, ref = tensor_ffn.run(platform, rows)
        torch.testing.assert_close(y, ref, rtol=5e-3, atol=5e-3)
    assert len(tensor_ffn.tensor_ffn._cache) == 1
    x, w1, w3, w2 = tensor_ffn.inputs(300)
    compiled = tensor_ffn.tensor_ffn.compile(x, w1, w3, w2, torch.empty(300, tensor_ffn.D),
                                             config=RunConfig(platform=platform))
    assert len(compiled.last_run.tasks) > 3 * 4     # blocked: several tasks per region
