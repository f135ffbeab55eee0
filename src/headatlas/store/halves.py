"""float16 -> float32 at memory speed, for reading stores; and what a lookup of the halves
gives faster than arithmetic on the widened maps (row entropies).

numpy's cast of float16 takes a slow path for subnormal halves, and attention weights below
6.1e-5 are subnormal in float16 (about a tenth of a 128-token map's): 3.6 ms for one
``[6, 12, 128, 128]`` map. :func:`widen` looks every half up in a table of numpy's own cast of
all 65,536 bit patterns instead, bitwise numpy's result by construction
(tests/unit/test_halves.py checks all 65,536): numpy's ``take`` of the table, then, once a
process has widened enough halves to pay for it, a compiled loop 2.6x faster per half. A process
that has imported torch already (an extraction) lets torch convert them, with the CPU's own
instruction where it has one (F16C): 3x the compiled loop, the same values (a signalling NaN
comes back quiet: a NaN still, with another payload).

The compiled loop costs about 0.7 CPU-s of a job to start (numba's import and the load of its
cached kernel): a quarter of what a tiny store's analysis job took in all. Each process therefore
widens its first :data:`NUMPY_HALVES` halves with numpy, which costs about as much more as the
start would, and only then starts the loop: never more than twice the cheaper of the two,
without knowing the job's size in advance (``benchmarks/job_start.py`` measures both). A job
that knows it will read many maps and has numba loaded already (a fused extraction: the value
norms' kernel) starts the loops at once (:func:`start_compiled`).
"""

from __future__ import annotations

import sys

import numpy as np

# the smallest normal float32: zeros are clamped to it before a log (0 * log(tiny) is exactly 0,
# so 0 log 0 = 0; the log stays on its fast path: a masked log is ~1.5x slower, a denormal
# clamp ~5x)
TINY = float(np.finfo(np.float32).tiny)
# numpy's float32 value of every float16 bit pattern (256 KB: stays in a core's L2 cache).
TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
# about the break-even of benchmarks/job_start.py: 0.72 CPU-s of start / 0.6 ns more per half
# with take = 1.2e9 halves, about 1,000 maps of a 128-token MiniLM segment (2026-11-27)
NUMPY_HALVES = 1_000_000_000
# -x log x of every half's float32 value x (0 log 0 = 0), computed in float64 and rounded once:
# a map's row entropies are then a lookup and a sum (numpy's float32 log has no SIMD loop on
# AVX2 machines: 3.5 of 5.5 ms per 128-token MiniLM map; the lookup and sum 2.9)
with np.errstate(divide="ignore", invalid="ignore"):
    _X = TABLE.astype(np.float64)
    ENTROPY_TERMS = np.where(_X > 0, -_X * np.log(np.where(_X > 0, _X, 1.0)), 0.0).astype(np.float32)
    # log x of every half's value (float64; 0 where x <= 0: such a term has no mass)
    LOGS = np.where(_X > 0, np.log(np.where(_X > 0, _X, 1.0)), 0.0)
del _X
_widened = 0  # halves this process has widened with numpy
_started = False  # whether start_compiled() was called


def start_compiled() -> None:
    """Take the compiled loops from now on in this process, whatever it has widened so far."""
    global _started
    _started = True


def compiled() -> bool:
    """Whether this process takes the compiled loops (:data:`NUMPY_HALVES`, :func:`start_compiled`)."""
    return _started or _widened >= NUMPY_HALVES


def exact_halves(values: np.ndarray) -> np.ndarray | None:
    """``values`` as float16 when every one is a float16's (maps and value norms as a store or a
    fused run holds them: half the bytes, nothing lost), else None."""
    half = values.astype(np.float16)
    return half if np.array_equal(half, values, equal_nan=True) else None


def widen(halves: np.ndarray) -> np.ndarray:
    """``halves.astype(np.float32)``: a new C-contiguous array of the same shape (any other dtype
    than float16 is cast by numpy)."""
    global _widened
    if halves.dtype != np.float16:
        return halves.astype(np.float32)
    bits = np.ascontiguousarray(halves).view(np.uint16)
    by_table = not compiled()  # decided before this call's halves count
    if by_table:
        _widened += bits.size
    torch = sys.modules.get("torch")
    if torch is not None and bits.flags.writeable and bits.size:
        return torch.from_numpy(bits.view(np.float16)).float().numpy().reshape(halves.shape)
    if by_table:
        return np.take(TABLE, bits).reshape(halves.shape)  # ascontiguousarray makes 0-d 1-d
    from headatlas.store._widen_kernel import lookup  # numba: ~0.7 s to start, once per process

    out = np.empty(halves.shape, np.float32)
    lookup(bits.reshape(-1), TABLE, out.reshape(-1))
    return out


def arithmetic_row_entropy(maps: np.ndarray) -> np.ndarray:
    """float32 ``[...]``: ``-Σ_k a log a`` over the last axis of float32 maps, computed."""
    return -np.vecdot(maps, np.log(np.clip(maps, TINY, None)))


def row_entropy(halves: np.ndarray) -> np.ndarray:
    """float32 ``[...]``: ``-Σ_k a log a`` over the last axis of float16 maps ``halves`` (nats,
    0 log 0 = 0), each term from :data:`ENTROPY_TERMS`, summed in float64 (so the numpy and the
    compiled path round alike). Equal to the arithmetic on the widened maps
    (:meth:`headatlas.analyses.batch.MapBatch.row_entropy`) to float32 rounding
    (tests/unit/test_halves.py); the compiled loop once :func:`widen` has started it (4x)."""
    bits = np.ascontiguousarray(halves, dtype=np.float16).view(np.uint16)
    if not compiled() or bits.shape[-1] == 0:
        return np.take(ENTROPY_TERMS, bits).sum(axis=-1, dtype=np.float64).astype(np.float32)
    from headatlas.store._widen_kernel import entropy_rows

    out = np.empty(bits.shape[:-1], np.float32)
    entropy_rows(bits.reshape(-1, bits.shape[-1]), ENTROPY_TERMS, out.reshape(-1))
    return out


def norm_row_entropy(halves: np.ndarray, norm_view: np.ndarray, value_norms: np.ndarray,
                     totals: np.ndarray) -> np.ndarray:
    """float32 ``[...]``: each row's entropy of the norm view ``p = a v / S``
    (:func:`headatlas.weightings.norm_weighted_and_totals` of the maps ``a`` widened from
    ``halves`` and the ``value_norms`` ``v``; ``totals`` its row sums ``S``).

    The compiled loop reads it from the logs of the parts: ``log p_j = log a_j + log v_j - log S``,
    so ``H = P log S - Σ_j p_j (log a_j + log v_j)`` with ``P = Σ_j p_j``: a lookup (:data:`LOGS`)
    and a multiply-add per entry, in float64, instead of a float32 log per entry (4.5 of 5 ms per
    128-token MiniLM map; numpy's float32 log has no SIMD loop on AVX2). Before the loop starts
    (:func:`compiled`) numpy does the arithmetic on ``p``, which the lookup cannot beat in numpy.
    The two differ by ``p``'s own float32 rounding, about 1e-7 nats a row
    (tests/unit/test_halves.py)."""
    bits = np.ascontiguousarray(halves, dtype=np.float16).view(np.uint16)
    if not (bits.shape == norm_view.shape and value_norms.shape == bits.shape[:-2] + bits.shape[-1:]
            and totals.shape == bits.shape[:-1] + (1,)):
        raise ValueError(f"maps {bits.shape}, norm view {norm_view.shape}, value norms {value_norms.shape} "
                         f"and row sums {totals.shape} are not of one example")
    if not compiled() or bits.shape[-1] == 0:
        return arithmetic_row_entropy(norm_view)
    from headatlas.store._widen_kernel import norm_entropy_rows

    rows, n = bits.shape[-2:]
    out = np.empty(bits.shape[:-1], np.float32)
    norm_entropy_rows(bits.reshape(-1, rows, n), np.ascontiguousarray(norm_view, np.float32).reshape(-1, rows, n),
                      np.ascontiguousarray(value_norms, np.float32).reshape(-1, n),
                      np.ascontiguousarray(totals, np.float32).reshape(-1, rows), LOGS, out.reshape(-1, rows))
    return out


def norm_weighted_and_totals(attn: np.ndarray, value_norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`headatlas.weightings.norm_weighted_and_totals` (the norm view and its row sums),
    from the compiled loop once the process takes them (:func:`compiled`) for numpy float32
    maps: one pass per row where numpy makes four (0.6 against 1.3 ms per 128-token MiniLM
    map), bitwise numpy's result, its row sums in numpy's pairwise order
    (tests/unit/test_kernels.py)."""
    from headatlas.weightings import norm_weighted_and_totals as numpy_path

    if not (compiled() and isinstance(attn, np.ndarray) and attn.dtype == np.float32 and attn.ndim >= 2
            and value_norms.shape == attn.shape[:-2] + attn.shape[-1:]):
        return numpy_path(attn, value_norms)  # which also refuses norms that do not fit
    from headatlas.store._widen_kernel import norm_weighted

    maps = np.ascontiguousarray(attn).reshape(-1, *attn.shape[-2:])
    out, totals = np.empty_like(maps), np.empty(maps.shape[:-1], np.float32)
    norm_weighted(maps, np.ascontiguousarray(value_norms, dtype=np.float32).reshape(len(maps), -1), out, totals)
    return out.reshape(attn.shape), totals.reshape(*attn.shape[:-1], 1)
