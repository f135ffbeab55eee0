"""headatlas: what do the attention heads of BERT-family encoders look at?

Data flow: corpora -> extraction -> HDF5 store -> analyses -> report.
"""

from headatlas.provenance import package_version as _package_version

__version__ = _package_version()  # from git tags at install time (setuptools-scm)


# Notebook entry points (the head atlas). Kept lazy: this package is imported when the Snakefile
# is parsed, so nothing heavy (pandas) is imported here. The module is imported by name, not with
# an import statement: headatlas.codedeps reads import statements, and one here would make
# atlas.py a code input of every rule.
def __getattr__(name):
    """``headatlas.atlas``: the module :mod:`headatlas.atlas`, callable as
    ``headatlas.atlas("results", "minilm")`` -> that model's ``heads.csv`` as a DataFrame."""
    if name == "atlas":
        import importlib

        return importlib.import_module(f"{__name__}.atlas")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def head(model, layer, head, results="results", weighting=None):
    """One head's profile from ``results/<model>/heads.csv`` (``layer``, ``head`` 1-based):
    a frame with one column per weighting, or a Series under ``weighting``.

    >>> headatlas.head("minilm", 3, 9, results="results")  # doctest: +SKIP
    """
    import importlib

    profile = importlib.import_module(f"{__name__}.atlas").head_profile
    return profile(model, layer, head, results, weighting)
