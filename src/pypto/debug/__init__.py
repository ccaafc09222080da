"""Debugging tools (User Manual "Torch Codegen Debug Guide"): `torch_codegen` turns a program at any
pass stage into a standalone PyTorch script; `validate_ir` runs that script for every pass dump of a
build and names the first pass whose numbers diverge."""

from .torch_codegen import torch_codegen
from .validate import StageResult, ValidationReport, validate_ir

__all__ = ["torch_codegen", "validate_ir", "ValidationReport", "StageResult"]
