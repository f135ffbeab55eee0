"""Paper claims as data: every claim the report judges is a record with the rule that decides it.

Each analysis that checks a paper's statement returns :class:`Claim` records
(``paper_claims.csv`` holds them, one per row, in :data:`COLUMNS` order); the
scorecard (:mod:`headatlas.report.scorecard`) collects them across analyses and models.
A verdict is never typed by hand: it is computed by the code that states its
``rule``, and the rule is written so that it reads the same for every model
(layer ranges as relative depth, thresholds as numbers), so one scorecard row
compares models of any depth.

Helpers shared by the analyses' claims: :func:`depth_layers` maps a paper's
layer range onto a model of another depth (relative depth ``layer / n_layers``),
:func:`beats_paired` is the "clearly better" test of two accuracies measured on the
same units, from the paired bootstrap interval of their difference (:func:`beats`,
the older test on two unpaired intervals, is kept for comparisons of different
units), :func:`pct` formats shares.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Iterable

import pandas as pd

HOLDS, FAILS, NOT_APPLICABLE = "holds", "does not hold", "not applicable"
VERDICTS = (HOLDS, FAILS, NOT_APPLICABLE)
COLUMNS = ("id", "source", "claim", "paper", "ours", "verdict", "rule", "note")
# Clark et al.'s model depth (BERT-base); their layer ranges are mapped from it by relative depth.
PAPER_LAYERS = 12
# beats(): "clearly better" = at least this many points ahead, 95% intervals apart.
MARGIN = 5.0
# A number printed from NaN ("nan", "nan%", "-nan") in a claim's `ours`: the claim is undefined.
_UNDEFINED = re.compile(r"(?<![\w.])-?nan(?![\w])", re.IGNORECASE)
UNDEFINED_NOTE = ("not applicable: a number it needs is undefined (nan: an empty or one-member "
                  "group, or nothing to compare)")


@dataclass(frozen=True)
class Claim:
    """One paper claim beside our measurement.

    Attributes
    ----------
    id : str
        Stable key, the same for every model (e.g. ``"clark.s3.sep_middle_layers"``).
    source : str
        Paper and section, e.g. ``"Clark et al. 2019 §3.2"``.
    claim : str
        The paper's statement, in a few words.
    paper : str
        The paper's number or wording.
    ours : str
        What we measured, as text (numbers with their unit).
    verdict : str
        One of :data:`VERDICTS`.
    rule : str
        How the verdict was decided, e.g. "mean attention to [SEP] > 50% in the middle layers".
    note : str
        Deviations that matter for this row (model depth, corpus, ...).
    """

    id: str
    source: str
    claim: str
    paper: str
    ours: str
    verdict: str
    rule: str
    note: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id}: verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.verdict != NOT_APPLICABLE and _UNDEFINED.search(self.ours):
            # A comparison with NaN is False, which would read "does not hold": the claim cannot be
            # judged, whatever the analysis computed from the undefined number.
            object.__setattr__(self, "verdict", NOT_APPLICABLE)
            object.__setattr__(self, "note", "; ".join(filter(None, [self.note, UNDEFINED_NOTE])))


def verdict(holds: bool | None) -> str:
    """``True`` -> holds, ``False`` -> does not hold, ``None`` -> not applicable."""
    return NOT_APPLICABLE if holds is None else HOLDS if holds else FAILS


def claims_table(claims: Iterable[Claim]) -> pd.DataFrame:
    """Claims as a table with :data:`COLUMNS` (the layout of every ``paper_claims.csv``)."""
    return pd.DataFrame([asdict(c) for c in claims], columns=list(COLUMNS))


# Renamed claims: old id -> new, read under the new id for one release (a claims file an earlier
# release wrote still joins its scorecard row).
ALIASES = {
    # it tests the model's own sink, [SEP] or not (renamed in 0.4)
    "clark.s3_2.sep_gradient_where_attended": "clark.s3_2.sink_gradient_where_attended",
}


def read_claims(path) -> list[Claim]:
    """The claims of one ``paper_claims.csv`` (a renamed claim under its new id: :data:`ALIASES`)."""
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    missing = set(COLUMNS) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: not a claims table (missing columns {sorted(missing)})")
    table["id"] = table["id"].replace(ALIASES)
    return [Claim(**{k: row[k] for k in COLUMNS}) for row in table.to_dict("records")]


def undefined(value) -> bool:
    """Whether a number is missing: None or NaN (a Python, numpy or pandas scalar)."""
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except TypeError:
        return False


def above(low: float, high: float, threshold: float) -> bool | None:
    """Whether a quantity is above ``threshold``, from its interval: True when all of the interval
    is, False when none of it is (``high <= threshold``), None (undecided) when it straddles it."""
    if high <= threshold:
        return False
    return True if low > threshold else None


def holds_if(condition, *numbers) -> str:
    """:func:`verdict` of a condition that may be missing (None or NaN -> not applicable).

    ``numbers``: the values the condition was computed from; when any is undefined
    (:func:`undefined`) the claim is not applicable, never "does not hold", since every
    comparison with NaN is False.
    """
    if undefined(condition) or any(undefined(x) for x in numbers):
        return NOT_APPLICABLE
    return verdict(bool(condition))


# --- layers by relative depth -----------------------------------------------------------------

def depth_layers(first: int, last: int, n_layers: int, paper_layers: int = PAPER_LAYERS) -> tuple[int, int]:
    """The layers of an ``n_layers``-deep model at the relative depth of the paper's ``first..last``.

    Layer ``l`` of ``L`` sits at relative depth ``l / L``; each end of the paper's
    range is mapped to the nearest layer (halves round up), and the range keeps
    at least one layer: layers 6-10 of 12 are 3-5 of 6 and 12-20 of 24.
    """
    lo = max(1, math.floor(first * n_layers / paper_layers + 0.5))
    hi = min(n_layers, max(lo, math.floor(last * n_layers / paper_layers + 0.5)))
    return lo, hi


def depth_text(first: int, last: int, paper_layers: int = PAPER_LAYERS) -> str:
    """The paper's layer range as relative depth, e.g. ``depth 0.50-0.83 (layers 6-10 of 12)``."""
    span = f"layer {first}" if first == last else f"layers {first}-{last}"
    if first == last:
        return f"depth {first / paper_layers:.2f} ({span} of {paper_layers})"
    return f"depth {first / paper_layers:.2f}-{last / paper_layers:.2f} ({span} of {paper_layers})"


def span_text(span: tuple[int, int]) -> str:
    """``layer 3`` or ``layers 3-5``."""
    return f"layer {span[0]}" if span[0] == span[1] else f"layers {span[0]}-{span[1]}"


# --- comparing measurements -------------------------------------------------------------------

def beats(a: float, a_interval: tuple[float, float] | None, b: float,
          b_interval: tuple[float, float] | None, margin: float = MARGIN) -> bool | None:
    """Whether ``a`` is clearly above ``b``: by at least ``margin`` and with disjoint intervals.

    ``a_interval`` and ``b_interval`` are 95% intervals ``(low, high)`` in the
    same unit; without them only the margin is tested. None when either value
    is missing (NaN).
    """
    if any(isinstance(x, float) and math.isnan(x) for x in (a, b)) or a is None or b is None:
        return None
    apart = True
    if a_interval is not None and b_interval is not None:
        apart = a_interval[0] > b_interval[1]
    return bool(a - b >= margin and apart)


BEATS_RULE = f"ahead by >= {MARGIN:g} points with 95% intervals that do not overlap"


def beats_paired(difference: float, interval: tuple[float, float] | None,
                 margin: float = MARGIN) -> bool | None:
    """Whether a system is clearly above another, judged on their *paired* difference.

    ``difference`` is ``a - b`` measured on the same units (sentences,
    documents), ``interval`` the 95% interval of that difference from a paired
    bootstrap (both systems scored on the same resamples,
    :func:`headatlas.stats.bootstrap_ratio` of the per-unit differences). Clearly
    above: ``difference >= margin`` and the interval's low end above 0. Two
    unpaired intervals that overlap say little when the two systems succeed and
    fail on the same units: the paired interval is the one of the difference.
    None when the difference or an end of its interval is undefined (NaN), or
    when no interval is given.
    """
    if interval is None or any(undefined(x) for x in (difference, *interval)):
        return None
    return bool(difference >= margin and interval[0] > 0)


PAIRED_RULE = (f"ahead by >= {MARGIN:g} points, with the paired bootstrap 95% interval of the "
               "difference above 0")


def difference_text(difference: float, low: float, high: float) -> str:
    """A difference in points with its interval, e.g. ``+6.7 [2.1, 11.2]``; ``n/a`` when undefined."""
    if any(undefined(x) for x in (difference, low, high)):
        return "n/a (no paired interval)"
    return f"{difference:+.1f} [{low:.1f}, {high:.1f}]"


def pct(x: float, digits: int = 0) -> str:
    """A share (0..1) as a percentage, e.g. ``0.423 -> '42%'``; NaN as ``n/a``."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"


def against(value: float, threshold: float, digits: int = 2, significant: bool = False) -> str:
    """``value`` printed beside a rule's ``threshold`` with enough decimals that the printed number
    compares with the threshold as the value does (-0.2996 against -0.3 is ``-0.2996``, not
    ``-0.30``, which would read as meeting "<= -0.3"); ``digits`` decimals at least (significant
    digits with ``significant``, as p-values are printed); ``n/a`` when undefined."""
    if undefined(value):
        return "n/a"
    kind = "g" if significant else "f"
    for places in range(digits, 10):
        shown = float(f"{value:.{places}{kind}}")
        if (shown < threshold) == (value < threshold) and (shown == threshold) == (value == threshold):
            break
    return f"{value:.{places}{kind}}"
