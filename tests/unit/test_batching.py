"""Padding a batch and packing it back: each example's block without padding, back to back."""

import numpy as np
import pytest
import torch

from headatlas.encoders.batching import HostArray, equal_runs, pack_examples


def test_equal_runs_by_hand():
    assert equal_runs([2, 2, 3, 5, 5, 5]) == [(0, 2, 2), (2, 3, 3), (3, 6, 5)]
    assert equal_runs([4]) == [(0, 1, 4)]
    assert equal_runs([3, 2, 3]) == [(0, 1, 3), (1, 2, 2), (2, 3, 3)]  # unsorted: runs of neighbours


def test_pack_maps_by_hand():
    # 2 layers, 1 head, width 3; example 0 has 2 tokens, example 1 all 3.
    layer0 = torch.arange(18, dtype=torch.float32).view(2, 1, 3, 3)
    layer1 = 100 + layer0
    packed = pack_examples([layer0, layer1], [2, 3], token_dims=2, dtype=torch.float32)
    expected = [0, 1, 3, 4, 100, 101, 103, 104,  # example 0: layer 0 then layer 1, 2 x 2 each
                *range(9, 18), *range(109, 118)]  # example 1: whole 3 x 3 maps
    assert packed.tolist() == expected


def test_pack_vectors_by_hand():
    # per-token values [batch, heads, width]: 1 layer, 2 heads, width 3; lengths 1 and 3.
    layer = torch.tensor([[[1., 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]])
    assert pack_examples([layer], [1, 3], token_dims=1, dtype=torch.float32).tolist() == \
        [1, 4, 7, 8, 9, 10, 11, 12]


@pytest.mark.parametrize("lengths", [[3, 5, 5, 7], [7, 7, 7, 7], [7, 2, 7, 1]])
def test_pack_equals_slicing_each_example_of_the_float16_stack(lengths):
    generator = torch.Generator().manual_seed(0)
    layers = [torch.rand(4, 3, 7, 7, generator=generator) for _ in range(2)]
    stacked = torch.stack([a.to(torch.float16) for a in layers], dim=1).numpy()  # the old capture
    expected = np.concatenate([stacked[row, :, :, :n, :n].ravel() for row, n in enumerate(lengths)])
    packed = pack_examples(layers, lengths, token_dims=2)
    assert packed.dtype == torch.float16
    assert packed.numpy().tobytes() == expected.tobytes()  # bitwise: one float16 rounding either way


def test_host_array_on_the_cpu_is_the_tensor_itself():
    tensor = torch.arange(4, dtype=torch.float16)
    host = HostArray(tensor)
    assert host.numpy().tolist() == [0, 1, 2, 3]
    assert np.shares_memory(host.numpy(), tensor.numpy())  # no copy on the CPU
