"""Moved to :mod:`headatlas.tasks.upos`.

This file is kept only because the workflow's ``finetune_upos`` and
``ablation`` rules still list ``src/headatlas/finetune.py`` as a code input;
delete it when those rules list ``tasks/upos.py`` (and ``tasks/squad.py``,
``tasks/grid.py``, ``batching.py``) instead.
"""

raise ImportError("headatlas.finetune moved to headatlas.tasks.upos")
