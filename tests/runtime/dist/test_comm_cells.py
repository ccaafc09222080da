"""How the deadlock report names a signal cell: the index of an element from its offset."""

import pytest
import torch

from pypto.runtime.dist.comm import _unravel


@pytest.mark.parametrize("shape", [(4, 1), (1, 4), (6, 4), (3,), (2, 1, 3), (1, 1)])
def test_every_element_of_a_contiguous_tensor_is_named_by_its_own_index(shape):
    t = torch.zeros(shape, dtype=torch.int32)
    for index in torch.cartesian_prod(*[torch.arange(n) for n in shape]).reshape(-1, len(shape)).tolist():
        cell = t[tuple(index)]
        assert _unravel(cell.data_ptr() // 4 - t.data_ptr() // 4, tuple(t.shape), t.stride()) == tuple(index)


def test_a_signal_of_shape_nr_by_1_names_its_row():
    """[NR, 1] has strides (1, 1): the row must come from the size-4 dimension, not the size-1 one."""
    assert _unravel(3, (4, 1), (1, 1)) == (3, 0)
    assert _unravel(1, (4, 1), (1, 1)) == (1, 0)


def test_an_offset_outside_the_tensor_or_between_elements_is_none():
    assert _unravel(8, (4, 2), (2, 1)) is None
    assert _unravel(3, (2, 2), (4, 2)) is None          # a strided view: offset 3 is a gap
    assert _unravel(6, (2, 2), (4, 2)) == (1, 1)
