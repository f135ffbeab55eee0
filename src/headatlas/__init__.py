"""headatlas: what do the attention heads of BERT-family encoders look at?

Packages in data-flow order: :mod:`~headatlas.corpora` -> :mod:`~headatlas.encoders` (extraction)
-> :mod:`~headatlas.store` -> :mod:`~headatlas.analyses` (and :mod:`~headatlas.plots`) ->
:mod:`~headatlas.tasks` and :mod:`~headatlas.interventions` -> :mod:`~headatlas.report`, glued
into the workflow by :mod:`~headatlas.pipeline`. The modules at this level are shared leaves
(errors, io, heads, stats, provenance, claims, weightings) and the console script (cli).

Notebook entry points: :func:`atlas` and :func:`head`.
"""

from headatlas.provenance import package_version as _package_version

__version__ = _package_version()  # from git tags at install time (setuptools-scm)


def atlas(results="results", model="minilm"):
    """``results/<model>/heads.csv`` as a DataFrame: one row per (weighting, layer, head), every
    per-head table of the run joined (:func:`headatlas.report.atlas.load`).

    >>> headatlas.atlas("results", "minilm")  # doctest: +SKIP
    """
    from headatlas.report.atlas import load  # pandas: imported when asked, not with the package

    return load(results, model)


def head(model, layer, head, results="results", weighting=None):
    """One head's profile from ``results/<model>/heads.csv`` (``layer``, ``head`` 1-based):
    a frame with one column per weighting, or a Series under ``weighting``.

    >>> headatlas.head("minilm", 3, 9, results="results")  # doctest: +SKIP
    """
    from headatlas.report.atlas import head_profile

    return head_profile(model, layer, head, results, weighting)
