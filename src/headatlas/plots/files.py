"""The files of one figure, by name alone (no matplotlib: the workflow reads it when parsing).

A figure declared as ``<name>.svg`` is written there with its caption (the
report's copy) and, for each format of `plots.formats`, as ``<name>.<format>``
with its caption and ``<name>.nocaption.<format>`` without it (for a paper,
where the caption is the paper's own text). All are written from one drawing by
:func:`headatlas.plots.base.atomic_savefig`, which tells them apart by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

FORMATS = ("svg", "png", "pdf")
CAPTION_FREE = "nocaption"  # the name part marking the caption-free copy


def figure_files(path: str, formats: Sequence[str]) -> list[str]:
    """``path`` first (the report's copy), then the figure in each of ``formats`` with and
    without its caption, each file once. ``path`` may hold wildcards (``{analysis}.svg``)."""
    stem, own = split_format(path)
    captioned = [f"{stem}.{fmt}" for fmt in formats]
    caption_free = [f"{stem}.{CAPTION_FREE}.{fmt}" for fmt in formats]
    return list(dict.fromkeys([path, *captioned, *caption_free]))


def split_format(path: str | Path) -> tuple[str, str]:
    """``("<name>", "<format>")`` of ``<name>.<format>``; a ValueError names an unknown format."""
    stem, _, fmt = str(path).rpartition(".")
    if fmt.lower() not in FORMATS or not stem:
        raise ValueError(f"{path}: figure format {fmt!r} not supported; use one of {FORMATS}")
    return stem, fmt.lower()


def is_caption_free(path: str | Path) -> bool:
    """Whether ``path`` names a caption-free copy (``<name>.nocaption.<format>``)."""
    return split_format(path)[0].endswith(f".{CAPTION_FREE}")
