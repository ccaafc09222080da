"""The per-architecture native cast tables and the chains that legalize other pairs (SPEC §5)."""

import pytest

from pypto.backend import NATIVE_CASTS, BackendType, cast_chain, expanded_casts, get_soc
from pypto.backend.casts import cast_refusal, holds_all_values
from pypto.core import dtype as D

BACKENDS = [b.name for b in BackendType]


def test_seed_example_int32_to_fp16():
    assert (D.INT32, D.FP16) in NATIVE_CASTS["Ascend910B"]
    assert (D.INT32, D.FP16) not in NATIVE_CASTS["Ascend950"]
    assert cast_chain("Ascend910B", D.INT32, D.FP16) == (D.FP16,)
    assert cast_chain("Ascend950", D.INT32, D.FP16) == (D.FP32, D.FP16)
    assert get_soc(BackendType.Ascend950).cast_chain(D.INT32, D.FP16) == (D.FP32, D.FP16)


def test_fp8_is_native_only_on_ascend950():
    assert cast_chain("Ascend950", D.FP32, D.FP8E4M3FN) == (D.FP8E4M3FN,)
    assert cast_chain("Ascend910B", D.FP32, D.FP8E4M3FN) is None
    assert cast_chain("Ascend950", D.FP16, D.FP8E5M2) == (D.FP32, D.FP8E5M2)


def test_widening_first_gives_exact_chains():
    for b in BACKENDS:
        assert cast_chain(b, D.INT8, D.INT32) == (D.FP16, D.INT32)  # every INT8 value survives FP16
        assert cast_chain(b, D.BF16, D.FP16) == (D.FP32, D.FP16)


def test_holds_all_values():
    assert holds_all_values(D.INT16, D.FP32) and not holds_all_values(D.INT32, D.FP32)
    assert holds_all_values(D.FP16, D.FP32) and holds_all_values(D.BF16, D.FP32)
    assert not holds_all_values(D.BF16, D.FP16) and not holds_all_values(D.FP32, D.INT64)
    assert holds_all_values(D.UINT8, D.INT16) and not holds_all_values(D.INT8, D.UINT8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_expanded_chain_is_native_hops_through_safe_types(backend):
    native = NATIVE_CASTS[backend]
    chains = expanded_casts(backend)
    assert chains  # some pairs need more than one hop
    for (src, dst), chain in chains.items():
        assert (src, dst) not in native and chain[-1] is dst and len(chain) >= 2
        hops = list(zip((src,) + chain[:-1], chain))
        assert all(h in native for h in hops), (src, dst, chain)
        for mid in chain[:-1]:  # no intermediate wraps or overflows what the direct cast keeps
            assert holds_all_values(src, mid) or holds_all_values(dst, mid), (src, dst, chain)


# ---- what each architecture converts (the facts the tables encode) ------------------------------

SUPPORTED_ON_BOTH = [(D.BOOL, D.FP32), (D.BOOL, D.FP16), (D.BOOL, D.INT32), (D.INDEX, D.FP32),
                     (D.FP32, D.INDEX), (D.UINT8, D.FP32), (D.INT4, D.FP32), (D.FP32, D.INT4)]
REFUSED_ON_BOTH = [(D.UINT16, D.FP32), (D.UINT32, D.FP32), (D.UINT64, D.FP32), (D.FP32, D.UINT16),
                   (D.FP32, D.UINT32), (D.FP32, D.UINT64), (D.FP32, D.BOOL), (D.INT32, D.BOOL),
                   (D.FP32, D.FP8E8M0), (D.FP32, D.UINT4), (D.HF4, D.FP32)]
ONLY_ON_950 = [(D.FP8E8M0, D.FP32), (D.FP8E4M3FN, D.FP32), (D.FP8E5M2, D.FP32), (D.FP4, D.FP32),
               (D.FP32, D.FP4), (D.FP32, D.FP8E4M3FN), (D.BF16, D.FP4), (D.FP4, D.BF16)]


def test_the_tables_match_what_each_architecture_converts():
    for src, dst in SUPPORTED_ON_BOTH:
        assert all(cast_chain(b, src, dst) is not None for b in BACKENDS), (src, dst)
    for src, dst in REFUSED_ON_BOTH:
        assert all(cast_chain(b, src, dst) is None for b in BACKENDS), (src, dst)
    for src, dst in ONLY_ON_950:
        assert cast_chain("Ascend950", src, dst) is not None and cast_chain("Ascend910B", src, dst) is None
    assert cast_chain("Ascend950", D.FP4, D.FP32) == (D.BF16, D.FP32)      # exact: BF16 holds FP4
    assert cast_chain("Ascend910B", D.BOOL, D.FP32) == (D.UINT8, D.FP16, D.FP32)


@pytest.mark.parametrize("backend,src,dst,reason", [
    ("Ascend910B", D.FP32, D.BOOL, "a mask is the result of a comparison, e.g. pl.cmps(x, 0, cmp_type=\"ne\")"),
    ("Ascend910B", D.UINT32, D.FP32, "Ascend910B has no conversion instruction from UINT32"),
    ("Ascend910B", D.FP8E4M3FN, D.FP32, "Ascend910B has no conversion instruction from FP8E4M3FN "
                                        "(Ascend950 has one)"),
    ("Ascend950", D.FP32, D.FP8E8M0, "Ascend950 has no conversion instruction to FP8E8M0"),
])
def test_a_refused_cast_says_why(backend, src, dst, reason):
    assert reason in cast_refusal(backend, src, dst)
