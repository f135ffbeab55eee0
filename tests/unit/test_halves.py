import importlib

import numpy as np
import pytest

from headatlas.store.halves import widen


@pytest.mark.parametrize("converter", ["table", "torch"])
def test_every_half_is_widened_as_numpy_does(converter, monkeypatch):
    import sys

    if converter == "table":  # a process without torch: the table, NaN payloads too
        monkeypatch.delitem(sys.modules, "torch", raising=False)
    else:  # a process that has imported torch: torch converts
        monkeypatch.setitem(sys.modules, "torch", importlib.import_module("torch"))
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    expected = halves.astype(np.float32)
    got = widen(halves)
    assert got.dtype == np.float32 and got.shape == expected.shape
    number = ~np.isnan(expected)
    assert got[number].view(np.uint32).tobytes() == expected[number].view(np.uint32).tobytes()
    assert np.isnan(got[~number]).all()
    if converter == "table":
        assert got.view(np.uint32).tobytes() == expected.view(np.uint32).tobytes()
    else:  # torch quiets the signalling NaNs: 0x7c01 -> 0x7fc02000, not numpy's 0x7f802000
        assert (got.view(np.uint32) != expected.view(np.uint32)).sum() == 1022


@pytest.mark.parametrize("converter", ["table", "torch"])
def test_values_by_hand_and_shapes(converter, monkeypatch):
    import sys

    if converter == "table":
        monkeypatch.delitem(sys.modules, "torch", raising=False)
    else:
        monkeypatch.setitem(sys.modules, "torch", importlib.import_module("torch"))
    halves = np.array([[1.0, -2.0], [0.0, 6e-8]], dtype=np.float16)  # 6e-8 -> the smallest subnormal
    got = widen(halves)
    assert got.shape == (2, 2) and got.flags.c_contiguous
    assert got.tolist() == [[1.0, -2.0], [0.0, 2.0 ** -24]]
    assert widen(halves[:, 1]).tolist() == [-2.0, 2.0 ** -24]  # a strided view
    assert widen(np.zeros((0, 3), np.float16)).shape == (0, 3)
    assert widen(np.float16(0.5)[()]).shape == () and widen(np.array(0.5, np.float16)).shape == ()


def test_other_dtypes_are_cast_by_numpy():
    values = np.array([0.1, 2.5], dtype=np.float64)
    assert widen(values).dtype == np.float32
    assert widen(values).tolist() == values.astype(np.float32).tolist()


def test_the_compiled_loop_gives_numpy_s_take(monkeypatch):
    import sys

    from headatlas.store import halves

    monkeypatch.delitem(sys.modules, "torch", raising=False)  # a process without torch: the table, the loop
    monkeypatch.setattr(halves, "_started", False)  # whatever a fused test in this process started
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    taken = widen(patterns)
    monkeypatch.setattr(halves, "NUMPY_HALVES", 0)  # a process past the threshold: the loop
    looped = widen(patterns)
    assert looped.shape == (256, 256) and looped.flags.c_contiguous
    assert looped.view(np.uint32).tobytes() == taken.view(np.uint32).tobytes()
    assert widen(patterns[:, 1]).view(np.uint32).tobytes() == taken[:, 1].view(np.uint32).tobytes()


def test_a_small_job_does_not_start_numba():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from headatlas.store.halves import widen; "
            "widen(np.ones((6, 12, 128, 128), np.float16)); print('numba' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_row_entropy_of_halves_by_hand_and_against_the_arithmetic():
    from headatlas.store.halves import ENTROPY_TERMS, row_entropy

    # a row of two halves of 0.5 has entropy log 2; a one-hot row 0 (0 log 0 = 0); 0.25 x 4: log 4
    maps = np.array([[0.5, 0.5, 0, 0], [0, 1, 0, 0], [0.25] * 4], np.float16)
    assert np.allclose(row_entropy(maps), [np.log(2), 0.0, np.log(4)], rtol=1e-7, atol=0)
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
    finite = np.isfinite(every) & (every > 0)
    assert (ENTROPY_TERMS[every <= 0] == 0).all()  # zeros (and halves no map holds) add nothing
    assert np.allclose(ENTROPY_TERMS[finite], -every[finite] * np.log(every[finite]), rtol=1e-7, atol=1e-45)
    # real-looking rows (Dirichlet, float16 as a store holds them): the arithmetic's value
    rng = np.random.default_rng(0)
    rows = rng.dirichlet(np.full(128, 0.2), size=(6, 12, 128)).astype(np.float16)
    wide = rows.astype(np.float32)
    arithmetic = -np.vecdot(wide, np.log(np.clip(wide, np.finfo(np.float32).tiny, None)))
    assert np.allclose(row_entropy(rows), arithmetic, rtol=2e-6, atol=1e-6)


def test_row_entropy_s_compiled_loop_gives_the_numpy_path_s(monkeypatch):
    from headatlas.store import halves

    monkeypatch.setattr(halves, "_started", False)  # whatever a fused test in this process started
    rows = np.random.default_rng(1).dirichlet(np.full(64, 0.3), size=(3, 4, 64)).astype(np.float16)
    numpy_path = halves.row_entropy(rows)
    monkeypatch.setattr(halves, "NUMPY_HALVES", 0)  # a process past the threshold: the loop
    looped = halves.row_entropy(rows)
    assert looped.shape == (3, 4, 64) and looped.dtype == np.float32
    np.testing.assert_array_equal(looped, numpy_path)
    assert halves.row_entropy(np.zeros((2, 0), np.float16)).tolist() == [0.0, 0.0]


def test_the_norm_view_s_row_entropy_from_its_parts_by_hand_and_against_the_arithmetic(monkeypatch):
    from headatlas.store import halves
    from headatlas.weightings import norm_weighted_and_totals

    # a = (0.5, 0.5), v = (1, 3): p = (0.25, 0.75), H = -(0.25 ln 0.25 + 0.75 ln 0.75);
    # a = (1, 0), v = (2, 5): p = (1, 0), H = 0; a row of no mass: 0
    cases = [([0.5, 0.5], [1.0, 3.0], -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))),
             ([1.0, 0.0], [2.0, 5.0], 0.0), ([0.0, 0.0], [1.0, 3.0], 0.0)]
    monkeypatch.setattr(halves, "_started", False)  # whatever a fused test in this process started
    for compiled in (False, True):
        monkeypatch.setattr(halves, "NUMPY_HALVES", 0 if compiled else 10 ** 12)
        for row, values, expected in cases:
            a = np.array([[row]], np.float16)  # [1 map, 1 row, 2 keys]
            v = np.array([values], np.float32)
            p, totals = norm_weighted_and_totals(a.astype(np.float32), v)
            got = halves.norm_row_entropy(a, p, v, totals)
            assert got.shape == (1, 1) and got[0, 0] == pytest.approx(expected, abs=1e-7), (row, values, compiled)
    monkeypatch.setattr(halves, "NUMPY_HALVES", 10 ** 12)
    # real-looking maps and norms: the arithmetic on the view's maps; the compiled loop: the same
    rng = np.random.default_rng(2)
    maps = rng.dirichlet(np.full(96, 0.2), size=(2, 3, 96)).astype(np.float16)
    norms = rng.uniform(0.1, 8.0, (2, 3, 96)).astype(np.float16).astype(np.float32)
    p, totals = norm_weighted_and_totals(maps.astype(np.float32), norms)
    numpy_path = halves.norm_row_entropy(maps, p, norms, totals)
    arithmetic = -np.vecdot(p, np.log(np.clip(p, np.finfo(np.float32).tiny, None)))
    np.testing.assert_allclose(numpy_path, arithmetic, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(halves, "NUMPY_HALVES", 0)  # the compiled loop: from the parts
    np.testing.assert_allclose(halves.norm_row_entropy(maps, p, norms, totals), numpy_path, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="not of one example"):
        halves.norm_row_entropy(maps, p[:1], norms, totals)
