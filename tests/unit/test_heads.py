"""Head names and per-head tables (headatlas.heads)."""

import numpy as np
import pytest

from headatlas.heads import head_index, head_name, head_names, head_table, is_head_name, parse_head_name


def test_names_are_one_based_and_layer_major():
    assert head_name(5, 4) == "5-4" and head_name(np.int64(1), np.int64(2)) == "1-2"
    assert head_names(2, 3) == ["1-1", "1-2", "1-3", "2-1", "2-2", "2-3"]
    assert [parse_head_name(n) for n in head_names(2, 2)] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert is_head_name("12-10") and not is_head_name("12") and not is_head_name("a-b")
    with pytest.raises(ValueError, match="not a head name"):
        parse_head_name("head 1")


def test_head_table_flattens_layer_major():
    values = np.array([[1, 2, 3], [4, 5, 6]])
    table = head_table(2, 3, value=values, self=values * 10)  # any column name, "self" too
    assert list(table.columns) == ["layer", "head", "value", "self"]
    assert table[["layer", "head"]].values.tolist() == [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]]
    assert table["value"].tolist() == [1, 2, 3, 4, 5, 6] and table["value"].dtype == float
    layer, head = head_index(2, 3)
    assert [head_name(l, h) for l, h in zip(layer, head)] == head_names(2, 3)
