"""GloVe lookup (lowercased, OOV = zeros) and the packaged 50-d table."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from headatlas.errors import HeadAtlasError
from headatlas.corpora.glove import GloVe, load_glove


@pytest.fixture
def glove():
    return GloVe(["the", "cat", "n't"], np.array([[1, 0], [0, 1], [2, 2]], np.float32))


def test_lookup_is_lowercased_and_oov_is_zero(glove):
    vectors = glove.vectors(["The", "CAT", "dog", "n't"])
    # The -> the, CAT -> cat, dog unknown -> zeros, n't as is.
    np.testing.assert_array_equal(vectors, [[1, 0], [0, 1], [0, 0], [2, 2]])
    assert glove.dim == 2
    assert glove.ids(["dog"]).tolist() == [glove.oov] == [3]  # the extra zero row


def test_coverage_counts_tokens(glove):
    assert glove.coverage(["the", "the", "dog", "Cat"]) == 0.75  # 3 of 4 tokens known
    assert glove.coverage([]) == 0.0


def test_mismatched_table_is_refused():
    with pytest.raises(ValueError, match="2 words"):
        GloVe(["a", "b"], np.zeros((3, 4)))


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(HeadAtlasError, match="missing GloVe file"):
        load_glove(tmp_path)


def test_packaged_glove_6b_50d():
    glove = load_glove()
    assert glove.table.shape == (400_001, 50)
    # GloVe 6B's vocabulary is frequency-ordered: "the" first, then "," "." "of".
    assert glove.ids(["THE", ",", ".", "of"]).tolist() == [0, 1, 2, 3]
    # The published glove.6B.50d vector of "the" starts 0.418 0.24968 -0.41242.
    np.testing.assert_allclose(glove.vectors(["the"])[0, :3], [0.418, 0.24968, -0.41242], rtol=1e-5)
