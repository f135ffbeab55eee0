"""Downstream tasks a model is fine-tuned on or scored on: their data, inputs and metrics.

- :mod:`headatlas.tasks.upos`: UPOS tagging on a treebank (packing consecutive
  sentences, fine-tuning, word accuracy) -- the default task model of the
  head-type ablation;
- :mod:`headatlas.tasks.squad`: SQuAD v1.1 (reading, windows, span prediction,
  the official exact match / F1) -- the paper's task;
- :mod:`headatlas.interventions.grid`: a task model scored under every head-type
  ablation (:mod:`headatlas.interventions.ablation` holds the intervention itself).
"""
