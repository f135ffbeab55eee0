"""Errors a user can act on: each says what is wrong, where, and how to fix it."""


class HeadAtlasError(Exception):
    """Base class for every error the pipeline raises on bad input or setup."""


class CorpusFormatError(HeadAtlasError):
    """A corpus file is malformed. The message starts with ``file:line``."""

    def __init__(self, path, line, problem, hint=""):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}:{line}" if line else str(path)
        msg = f"{where}: {problem}"
        if hint:
            msg += f"\n  how to fix: {hint}"
        super().__init__(msg)


class SourceError(HeadAtlasError):
    """A corpus source cannot be found, downloaded or verified."""


class ModelError(HeadAtlasError):
    """A model cannot be resolved or loaded, or returns no attentions."""


class StoreError(HeadAtlasError):
    """An attention store is missing, incomplete or of the wrong schema."""


class EmptyStoreError(StoreError):
    """An extraction kept no example, or an analysis was given stores that hold none."""
