import numpy as np

from headatlas.store.halves import widen


def test_every_half_is_widened_as_numpy_does():
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    expected = halves.astype(np.float32)
    got = widen(halves)
    assert got.dtype == np.float32
    assert got.view(np.uint32).tobytes() == expected.view(np.uint32).tobytes()  # NaN payloads too


def test_values_by_hand_and_shapes():
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
    from headatlas.store import halves

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
