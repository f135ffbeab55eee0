import numpy as np
import pytest

from headatlas.store.wordlevel import units, word_level, word_units

# Tokens: [CLS] play ##ing ball [SEP]  -> units: [CLS] playing ball [SEP]
WORD_IDS = np.array([-1, 0, 0, 1, -1])
ATTN = np.array([
    [0.2, 0.2, 0.2, 0.2, 0.2],
    [0.1, 0.1, 0.4, 0.3, 0.1],
    [0.0, 0.5, 0.1, 0.2, 0.2],
    [0.3, 0.3, 0.1, 0.2, 0.1],
    [0.1, 0.1, 0.1, 0.1, 0.6],
])


def test_units_and_words():
    np.testing.assert_array_equal(units(WORD_IDS), [0, 1, 1, 2, 3])
    np.testing.assert_array_equal(word_units(WORD_IDS), [-1, 0, 1, -1])
    # two segments: [CLS] a [SEP] b [SEP]: every special is a unit of its own
    np.testing.assert_array_equal(units([-1, 0, -1, 1, -1]), [0, 1, 2, 3, 4])


def test_mean_sums_to_and_averages_from():
    out = word_level(ATTN, WORD_IDS, "mean")
    # to "playing" = sum of columns 1, 2; from "playing" = mean of rows 1, 2
    # row 1 -> [0.1, 0.5, 0.3, 0.1]; row 2 -> [0.0, 0.6, 0.2, 0.2]; mean -> [0.05, 0.55, 0.25, 0.15]
    expected = np.array([
        [0.2, 0.4, 0.2, 0.2],
        [0.05, 0.55, 0.25, 0.15],
        [0.3, 0.4, 0.2, 0.1],
        [0.1, 0.2, 0.1, 0.6],
    ])
    np.testing.assert_allclose(out, expected)
    np.testing.assert_allclose(out.sum(-1), 1.0)


def test_first_and_max():
    np.testing.assert_allclose(word_level(ATTN, WORD_IDS, "first")[1], [0.1, 0.5, 0.3, 0.1])
    # max of rows [0.1,0.5,0.3,0.1] and [0.0,0.6,0.2,0.2] = [0.1,0.6,0.3,0.2] / 1.2
    np.testing.assert_allclose(word_level(ATTN, WORD_IDS, "max")[1], np.array([0.1, 0.6, 0.3, 0.2]) / 1.2)


def test_batched_layers_heads_and_bad_mode():
    stacked = np.stack([ATTN, ATTN])[None]  # [1, 2, 5, 5]
    out = word_level(stacked, WORD_IDS)
    assert out.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(out[0, 1], word_level(ATTN, WORD_IDS))
    with pytest.raises(ValueError, match="choose one of"):
        word_level(ATTN, WORD_IDS, "median")
