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
