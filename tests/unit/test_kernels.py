"""The compiled loops of analyses/_kernels.py and the norm view's (store/_widen_kernel.py)
against the numpy arithmetic they replace."""

from __future__ import annotations

import numpy as np
import pytest

from headatlas.analyses import headtypes as ht
from headatlas.analyses.batch import MapBatch
from headatlas.store import halves
from tests.unit.test_headtypes import TOKENS16, example, specials


@pytest.fixture
def compiled(monkeypatch):
    """Switch between the two paths: ``compiled(True)`` takes the loops, ``compiled(False)`` numpy."""
    monkeypatch.setattr(halves, "NUMPY_HALVES", 10 ** 18)

    def switch(on: bool):
        monkeypatch.setattr(halves, "_started", on)
    return switch


def random_maps(shape, seed=0):
    rng = np.random.default_rng(seed)
    maps = rng.random(shape, dtype=np.float32) ** 4  # a spread of magnitudes, as softmax rows have
    return (maps / maps.sum(-1, keepdims=True)).astype(np.float32)


def padded_batch():
    """Two examples of 5 and 3 tokens, 2 layers x 3 heads, zero past each length."""
    attn = np.zeros((2, 2, 3, 5, 5), np.float32)
    attn[0] = random_maps((2, 3, 5, 5), 1)
    attn[1, :, :, :3, :3] = random_maps((2, 3, 3, 3), 2)
    return MapBatch(attn, lengths=[5, 3])


def test_column_mass_and_row_max_by_hand(compiled):
    compiled(True)
    attn = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.125, 0.125, 0.75]], np.float32)
    batch = MapBatch(attn[None, None, None], lengths=[3])
    assert batch.compiled_here()
    assert batch.column_mass()[0, 0, 0].tolist() == [0.625, 1.375, 1.0]
    assert batch.row_max()[0, 0, 0].tolist() == [0.5, 1.0, 0.75]
    assert batch.column_mass().dtype == np.float64 and batch.row_max().dtype == np.float32


def test_column_mass_and_row_max_are_numpy_s_bitwise(compiled):
    for batch_of in (padded_batch, lambda: MapBatch(random_maps((1, 6, 12, 128, 128), 3), lengths=[128])):
        compiled(False)
        numpy = batch_of()
        assert not numpy.compiled_here()
        compiled(True)
        loop = batch_of()
        assert loop.compiled_here()
        for name in ("column_mass", "row_max"):
            expected, got = getattr(numpy, name)(), getattr(loop, name)()
            assert got.shape == expected.shape and got.dtype == expected.dtype
            assert got.tobytes() == expected.tobytes(), name


def test_a_map_that_is_not_finite_is_left_to_numpy(compiled):
    compiled(True)
    attn = random_maps((1, 1, 2, 4, 4))
    attn[0, 0, 1, 2, 3] = np.nan
    batch = MapBatch(attn, lengths=[4])
    assert np.isnan(batch.row_max()[0, 0, 1, 2]) and np.isnan(batch.column_mass()[0, 0, 1, 3])
    assert np.isfinite(batch.row_max()[0, 0, 0]).all()


def test_torch_batches_keep_the_array_api_path(compiled):
    torch = pytest.importorskip("torch")
    compiled(True)
    attn = random_maps((1, 1, 2, 4, 4))
    batch = MapBatch(torch.from_numpy(attn), lengths=[4])
    assert not batch.compiled_here()
    np.testing.assert_array_equal(batch.row_max().numpy(), attn.max(-1))


def test_binned_rows_agree_with_the_numpy_path(compiled):
    bins = np.zeros((2, 5, 5), np.int64)
    bins[0] = ht.key_bins(5, np.eye(4, 5, dtype=bool), 3)
    bins[1, :3, :3] = ht.key_bins(3, np.zeros((4, 3), bool), 3)
    out = {}
    for on in (False, True):
        compiled(on)
        out[on] = ht.binned_rows(padded_batch(), bins, 8)
    assert out[True].shape == (2, 6, 8) and out[True].dtype == np.float32
    np.testing.assert_allclose(out[True], out[False], rtol=1.2e-7, atol=1e-12)  # both sum in float64
    np.testing.assert_allclose(out[True].sum(-1), 1, atol=1e-6)  # every key of a real row is in a bin


def test_key_bins_part_into_bins_by_key_and_by_distance():
    # 4 tokens: [CLS] a , b; [CLS] and the comma are binned by the key, the rest by distance
    special = np.zeros((4, 4), bool)
    special[0, 0] = special[2, 2] = True
    bins = ht.key_bins(4, special, 2)[None]  # windows: distance 1-2 -> 5, 3-4 -> 6
    by_key, by_distance = ht.key_and_distance_bins(bins, np.array([4]), 7)
    assert by_key.tolist() == [[0, -1, 2, -1]]
    assert by_distance.tolist() == [[4, 5, 5, 6]]  # self, then the windows


def test_bins_of_another_form_are_read_by_numpy_alone(compiled, monkeypatch):
    from headatlas.analyses import _kernels

    bins = ht.key_bins(6, np.zeros((4, 6), bool), 3)[None].copy()
    bins[0, 1, 4] = 0  # one pair that neither its key nor its distance decides
    assert ht.key_and_distance_bins(bins, np.array([6]), 8) is None
    calls, loop = [], _kernels.binned_rows
    monkeypatch.setattr(_kernels, "binned_rows", lambda *args: calls.append(args) or loop(*args))
    out = {}
    for on in (False, True):
        compiled(on)
        out[on] = ht.binned_rows(MapBatch(random_maps((1, 1, 2, 6, 6), 7), lengths=[6]), bins, 8)
    assert not calls
    np.testing.assert_array_equal(out[True], out[False])
    bins[0, 1, 4] = bins[0, 0, 3]  # key_bins' own again: the loop reads it
    ht.binned_rows(MapBatch(random_maps((1, 1, 2, 6, 6), 7), lengths=[6]), bins, 8)
    assert len(calls) == 1


def test_binned_rows_of_a_real_sized_input_agree(compiled):
    maps = random_maps((6, 12, 16, 16), 4) * np.float32(0.999)  # rows a little off 1, as float16 leaves them
    bins = ht.key_bins(16, specials(TOKENS16))
    out = {}
    for on in (False, True):
        compiled(on)
        out[on] = ht.distance_features(maps, bins, 21)
    np.testing.assert_allclose(out[True], out[False], rtol=1.2e-7, atol=1e-12)  # one float32 rounding apart at most


def test_a_real_row_of_no_mass_is_refused_on_both_paths(compiled):
    attn = random_maps((1, 1, 1, 4, 4))
    attn[0, 0, 0, 1] = 0
    bins = ht.key_bins(4, np.zeros((4, 4), bool))[None]
    for on in (False, True):
        compiled(on)
        with pytest.raises(ValueError, match="sums to 0"):
            ht.binned_rows(MapBatch(attn.copy(), lengths=[4]), bins, 9)


def test_the_analysis_streams_the_same_features_on_both_paths(compiled):
    from headatlas.analyses.base import run_analysis

    maps = random_maps((2, 3, 16, 16), 5)
    results = {}
    for on in (False, True):
        compiled(on)
        results[on] = run_analysis(ht.DistanceFeatures, [example(TOKENS16, maps, 0)], progress=False)
    np.testing.assert_allclose(results[True].features, results[False].features, rtol=1.2e-7, atol=1e-12)


def test_bins_past_the_features_are_read_by_neither_path(compiled):
    attn = random_maps((1, 1, 2, 6, 6), 6)
    bins = ht.key_bins(6, np.zeros((4, 6), bool), 16)[None]  # bins up to 20
    out = {}
    for on in (False, True):
        compiled(on)
        out[on] = ht.binned_rows(MapBatch(attn.copy(), lengths=[6]), bins, 7)  # bins 0-6 only
    np.testing.assert_allclose(out[True], out[False], rtol=1e-6, atol=1e-7)
    assert (out[True].sum(-1) < 1 - 1e-3).all()  # the far windows' mass is in no feature


@pytest.mark.parametrize("n", [1, 7, 8, 13, 128, 129, 300])
def test_the_norm_view_is_numpy_s_bitwise(compiled, n):
    """Every row length's order of numpy's pairwise sum (blocks of 128 split at multiples of 8,
    eight running sums, the rest one by one), and the rows of no mass left at 0."""
    from headatlas.store.halves import norm_weighted_and_totals

    attn = random_maps((2, 3, n, n), n)
    attn[0, 1, 0] = 0  # a row of no mass
    norms = np.random.default_rng(n).uniform(0.1, 5, (2, 3, n)).astype(np.float32)
    out = {}
    for on in (False, True):
        compiled(on)
        out[on] = norm_weighted_and_totals(attn, norms)
    for expected, got in zip(out[False], out[True]):
        assert got.shape == expected.shape and got.dtype == expected.dtype == np.float32
        assert got.tobytes() == expected.tobytes()
    assert (out[True][0][0, 1, 0] == 0).all() and out[True][1][0, 1, 0, 0] == 0


def test_the_loops_load_from_numba_s_cache():
    """A second process loads every loop from the cache the first one wrote (a recursive loop
    loads broken from it: a segfault, which only a new process shows)."""
    import subprocess
    import sys

    code = ("import numpy as np; from headatlas.store import halves; halves.start_compiled();"
            "from headatlas.store.halves import norm_weighted_and_totals;"
            "from headatlas.analyses.batch import MapBatch; from headatlas.analyses import headtypes as ht;"
            "a = np.full((1, 2, 300, 300), 1 / 300, np.float32);"
            "norm_weighted_and_totals(a, np.ones((1, 2, 300), np.float32));"
            "b = MapBatch(a[None], lengths=[300]); b.column_mass(); b.row_max();"
            "ht.binned_rows(b, ht.key_bins(300, np.zeros((4, 300), bool))[None], 21)")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]


def test_block_sums_take_out_each_pair_with_a_key_aside_once():
    from headatlas.analyses import _kernels, patterns

    n, lengths = 12, np.array([12, 9])
    units = np.zeros((2, n), np.int64)
    units[0, 5:], units[1, 4:] = 1, 1  # two sentences each
    contrast = patterns.block_contrast(units, lengths, n)
    maps = random_maps((2, 3, n, n), 8)
    maps[1, :, 9:], maps[1, :, :, 9:] = 0, 0
    rng = np.random.default_rng(9)
    aside = rng.random((2, 3, n)) < 0.3  # pairs with the key, the mirror or both aside
    example, query, keys, mirror, _ = patterns._contrast_pairs(units, lengths, n)
    expected = np.zeros((2, 3))
    for b, i, j, k in zip(example, query, keys, mirror):
        kept = ~(aside[b, :, j] | aside[b, :, k])
        expected[b] += np.where(kept, maps[b, :, i, j].astype(np.float64) - maps[b, :, i, k], 0.0)
    assert (aside[example, :, keys] & aside[example, :, mirror]).any()  # both ends aside somewhere
    got = np.zeros((2, 3))
    _kernels.block_sums(maps, aside, contrast.astype(np.int8), lengths, got)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
