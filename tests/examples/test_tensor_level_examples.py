"""The tensor-level examples (issue 11: no tile, load, store or block loop written by the user)
against torch on both backends, at several sizes, one compile per backend serving every dynamic
row count."""

import pytest
import torch

from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rmsnorm_matmul_with_a_dynamic_row_count(platform, examples_dir):
    import tensor_rmsnorm_matmul as ex

    cfg = RunConfig(platform=platform)
    ex.rmsnorm_matmul._cache.clear()
    for rows in (1, 97, 300):
        torch.manual_seed(rows)
        x = torch.randn(rows, ex.H).half()
        gamma = (torch.rand(1, ex.H) + 0.5).half()
        w = (torch.randn(ex.H, ex.N) / ex.H ** 0.5).half()
        y = torch.full((rows, ex.N), float("nan"))
        ex.rmsnorm_matmul(x, gamma, w, y, config=cfg)
        torch.testing.assert_close(y, ex.reference(x, gamma, w), rtol=2e-3, atol=2e-3)
    assert len(ex.rmsnorm_matmul._cache) == 1     # one compile served every M


def test_softmax_layernorm_linear_on_the_950(examples_dir):
    """examples/tensor_{softmax,layernorm,linear}.py run on a2a3sim by test_examples; here on a5sim."""
    import tensor_layernorm as ln
    import tensor_linear as lin
    import tensor_softmax as sm

    cfg = RunConfig(platform="a5sim")
    torch.manual_seed(0)
    x = torch.randn(sm.R, sm.C) * 4
    y = torch.empty(sm.R, sm.C)
    sm.softmax(x, y, config=cfg)
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)

    x = (torch.randn(ln.R, ln.C) * 2 + 1).half()
    gamma, beta = torch.rand(1, ln.C) + 0.5, torch.randn(1, ln.C)
    y = torch.empty(ln.R, ln.C, dtype=torch.float16)
    ln.layernorm(x, gamma, beta, y, config=cfg)
    want = torch.nn.functional.layer_norm(x.float(), (ln.C,), eps=ln.EPS) * gamma + beta
    torch.testing.assert_close(y, want.half(), rtol=2e-3, atol=2e-3)

    x, w = torch.randn(lin.M, lin.K).half(), (torch.randn(lin.K, lin.N) / lin.K ** 0.5).half()
    bias = torch.randn(1, lin.N)
    y = torch.empty(lin.M, lin.N, dtype=torch.float16)
    lin.linear(x, w, bias, y, config=cfg)
    torch.testing.assert_close(y, torch.relu(x.float() @ w.float() + bias).half(), rtol=2e-3, atol=2e-3)
