"""Paper claims as data: every claim the report judges is a record with the rule that decides it.

Each analysis that checks a paper's statement returns :class:`Claim` records
(``paper_claims.csv`` holds them, one per row, in :data:`COLUMNS` order); the
scorecard collects them across analyses and models. A verdict is never typed
by hand: it is computed by the code that states its ``rule``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

import pandas as pd

HOLDS, FAILS, NOT_APPLICABLE = "holds", "does not hold", "not applicable"
VERDICTS = (HOLDS, FAILS, NOT_APPLICABLE)
COLUMNS = ("id", "source", "claim", "paper", "ours", "verdict", "rule", "note")


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


def verdict(holds: bool | None) -> str:
    """``True`` -> holds, ``False`` -> does not hold, ``None`` -> not applicable."""
    return NOT_APPLICABLE if holds is None else HOLDS if holds else FAILS


def claims_table(claims: Iterable[Claim]) -> pd.DataFrame:
    """Claims as a table with :data:`COLUMNS` (the layout of every ``paper_claims.csv``)."""
    return pd.DataFrame([asdict(c) for c in claims], columns=list(COLUMNS))


def read_claims(path) -> list[Claim]:
    """The claims of one ``paper_claims.csv``."""
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    missing = set(COLUMNS) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: not a claims table (missing columns {sorted(missing)})")
    return [Claim(**{k: row[k] for k in COLUMNS}) for row in table.to_dict("records")]
