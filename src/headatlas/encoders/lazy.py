"""Modules imported at their first use, not when the module naming them is imported.

The analyses that run a model (gradients, probes, ablation, importance) also hold what their
reading rules need: captions, claims, tables read back, the atlas's column declarations. Those
rules never touch torch, whose import is ~1.6 CPU-s of a job that otherwise takes ~0.5 s;
``torch = lazy_import("torch")`` lets them skip it, and the code that does run a model uses
``torch.`` as before.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType


class LazyModule(ModuleType):
    """Stands for the module ``name`` and imports it at the first attribute read."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_target"] = None

    def __getattr__(self, attribute: str):
        target = self.__dict__["_lazy_target"]
        if target is None:
            target = self.__dict__["_lazy_target"] = importlib.import_module(self.__name__)
        return getattr(target, attribute)


def lazy_import(name: str) -> ModuleType:
    """``name``, imported when first used (an ImportError then, not now, if it is missing)."""
    return LazyModule(name)


def inference_mode(function):
    """``@torch.inference_mode()`` that imports torch when ``function`` runs, not when it is
    defined (the decorator itself is evaluated at import)."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        import torch

        with torch.inference_mode():
            return function(*args, **kwargs)

    return run
