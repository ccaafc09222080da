"""`validate_ir` checks its inputs before running any stage, and says plainly when the source program
itself (the 00_frontend stage) already disagrees with the expected values."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ArgumentTypeError, ArgumentValueError


@pl.program
class AddOne:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        c = pl.store(pl.add(t, 1.0), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        c = self.k(a, c)
        return c


@pytest.fixture(scope="module")
def cp(tmp_path_factory):
    return ir.compile(AddOne, output_dir=tmp_path_factory.mktemp("addone"), dump_passes=True)


def test_wrong_number_of_inputs_is_one_clear_error(cp) -> None:
    a = torch.randn(16, 32)
    with pytest.raises(ArgumentTypeError) as e:
        cp.validate_ir([a], a + 1)
    assert str(e.value) == ("validate_ir: 'main' takes 2 arguments (a, c), got 1 input(s); pass every "
                            "argument in order, Out/InOut tensors included")
    with pytest.raises(ArgumentTypeError, match="inputs must be a list of the arguments of 'main'"):
        cp.validate_ir(a, a + 1)


def test_inputs_and_expected_are_checked_up_front(cp) -> None:
    a, c = torch.randn(16, 32), torch.zeros(16, 32)
    with pytest.raises(TypeError, match=r"argument 'a' of 'main' has dtype torch.float16"):
        cp.validate_ir([a.half(), c], a + 1)
    with pytest.raises(ValueError, match=r"argument 'c' of 'main' has shape \[16, 16\]"):
        cp.validate_ir([a, torch.zeros(16, 16)], a + 1)
    with pytest.raises(ArgumentValueError, match=r"expected value of output 'c' has shape \[32, 16\], but "
                                                 r"argument 'c' has shape \[16, 32\]"):
        cp.validate_ir([a, c], torch.zeros(32, 16))
    with pytest.raises(ArgumentTypeError, match="expected value of output 'c' must be a torch.Tensor, got list"):
        cp.validate_ir([a, c], [[1.0]])


def test_source_disagreeing_with_expected_is_not_called_a_pass_divergence(cp) -> None:
    a, c = torch.randn(16, 32), torch.zeros(16, 32)
    good = cp.validate_ir([a, c], a + 1)
    assert good.ok and not good.source_disagrees
    assert str(good).splitlines()[-1] == "every stage matches the expected outputs"
    rep = cp.validate_ir([a, c], a + 2)
    assert rep.first_divergent == "frontend" and rep.source_disagrees
    last = str(rep).splitlines()[-1]
    assert last.startswith("the source program (00_frontend, before any compiler pass) already disagrees "
                           "with the expected values")
    assert "no pass diverged" in last and "first divergent pass" not in str(rep)


def test_a_frontend_stage_that_fails_is_reported_as_the_source(cp, tmp_path) -> None:
    import shutil

    from pypto.runtime import CompiledProgram

    shutil.copytree(cp.output_dir + "/passes_dump", tmp_path / "passes_dump")
    (tmp_path / "passes_dump" / "00_frontend.py").write_text("this is not a program\n")
    rep = CompiledProgram(cp.program, tmp_path, None).validate_ir([torch.ones(16, 32), torch.zeros(16, 32)],
                                                                  torch.full((16, 32), 2.0))
    assert [s.status for s in rep.stages][:2] == ["error", "ok"] and rep.source_disagrees
    last = str(rep).splitlines()[-1]
    assert last.startswith("the source program (00_frontend, before any compiler pass) could not be run")
    assert last.endswith("; no pass diverged")
