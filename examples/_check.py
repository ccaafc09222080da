"""Shared result check for the examples: compare against torch, print a pass line, exit non-zero."""

from __future__ import annotations

import sys

import torch


def check(name: str, got: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Print `PASS <name>` if `got` matches `expected` within tolerances, else exit with status 1."""
    if got.shape == expected.shape and torch.allclose(got.float(), expected.float(), rtol=rtol, atol=atol):
        print(f"PASS {name}: max abs error {(got.float() - expected.float()).abs().max().item():.3g}")
        return
    diff = (got.float() - expected.float()).abs().max().item() if got.shape == expected.shape else "shape"
    print(f"FAIL {name}: result differs from torch (max abs error {diff})")
    sys.exit(1)
