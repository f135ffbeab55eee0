"""A task model scored under every head-type ablation (Guan et al. 2020, §5, Tables 2-3).

:func:`ablation_grid` is the ``ablation`` rule's whole job: load the task
model with the ablation attention (:mod:`headatlas.interventions.ablation`), read the head
types, build the task's evaluation (the :class:`~headatlas.tasks.base.Task`'s reader and
evaluator, :data:`headatlas.tasks.TASKS`), score every variant
(:func:`headatlas.interventions.ablation.run_grid`) and write the caption.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from headatlas.analyses.headtypes import NO_TYPES
from headatlas.analyses.result import Result
from headatlas.interventions import ablation
from headatlas.tasks import Task, get_task

log = logging.getLogger(__name__)

TABLE = "ablation"  # the grid's table in its Result (the rule writes it as ablation.csv)


def load_task_model(task: str | Task, source: str, revision: str | None = None, device: str | None = None,
                    name: str | None = None):
    """``(model, tokenizer)``: the fine-tuned task model with the ablation attention, eval mode.

    ``task`` is a registered task or its name (:data:`headatlas.tasks.TASKS`); its
    ``model_class`` is the transformers class the model loads with. ``name``: the model's name
    in error messages (default: ``source``).
    """
    from headatlas.encoders.models import from_pretrained, tokenizer_from_pretrained

    task = get_task(task)
    ablation.register()
    model = from_pretrained(task.auto_class(), source, revision, name=name,
                            attn_implementation=ablation.IMPLEMENTATION)
    tokenizer = tokenizer_from_pretrained(source, revision, name=name)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer


def ablation_grid(task: str | Task, spec: dict, data: str | Path, types_path: str | Path, name: str, *,
                  types_source: str, types_own: bool | None, corpus: str = "", split: str = "test",
                  renormalise: bool = False, batch_size: int = 32, max_examples: int | None = None,
                  max_length: int = 128, options: dict | None = None,
                  progress: bool = True) -> Result:
    """Score the task model ``name`` (config entry ``spec``) under every head-type variant.

    Parameters
    ----------
    task : a registered task or its name (``upos``, ``squad``; :data:`headatlas.tasks.TASKS`)
    data : path
        The task's data (its ``reader`` reads it): the prepared treebank JSONL (upos) or the
        SQuAD v1.1 JSON (squad).
    types_path : path
        Per-head types (``layer, head, type``, :func:`headatlas.interventions.ablation.read_head_types`).
    types_source, types_own
        Where the types come from, for the caption; ``types_own`` True when
        they are the task model's own, False when its base's, None for a table given by hand.
    corpus, split, max_examples, max_length, batch_size
        The run's settings, each passed to the task's evaluator when it takes it
        (:attr:`~headatlas.tasks.base.Task.settings`; upos: the treebank's name, the split
        scored, wordpieces per packed input).
    options : dict
        The task's own options (:attr:`~headatlas.tasks.base.Task.options`; squad:
        ``max_length``, ``stride``, ``max_answer_length`` of the windows).

    Returns
    -------
    Result
        ``tables["ablation"]`` (one row per variant, :func:`~headatlas.interventions.ablation.run_grid`;
        also ``result.table``), ``attrs``: ``task``, ``metric`` (the table's headline column),
        ``caption``.
    """
    from headatlas.encoders.models import resolve

    task = get_task(task)
    source, revision = resolve(spec)
    model, tokenizer = load_task_model(task, source, revision)
    config = model.config
    types = ablation.read_head_types(types_path, config.num_hidden_layers, config.num_attention_heads)
    settings = {"source": str(data), "corpus": corpus, "split": split, "max_examples": max_examples,
                "max_length": max_length, "batch_size": batch_size}
    task_score, described = task.evaluation(model, tokenizer, task.read(data, options), settings, options)

    def evaluate(actions: torch.Tensor) -> dict[str, float]:
        return task_score(ablation.plan(actions, renormalise))

    units: dict = {}
    table = ablation.run_grid(evaluate, types, task.metric, progress=progress, units=units)
    counts = (", ".join(f"{t} {n}" for t, n in ablation.type_counts(types).items())
              if (types != NO_TYPES).any() else f"{NO_TYPES}: only the floors scored")
    caption = (
        f"Task model {name} ({spec.get('hub') or source}, "
        f"{config.num_hidden_layers}x{config.num_attention_heads} heads); {described}. Head types "
        f"({counts}) from {types_source}"
        + {True: " (the task model itself)", None: "",
           False: " (the pre-trained base: the fine-tuned model is not a configured model)"}[types_own]
        + f". Removed weights {'renormalised' if renormalise else 'not renormalised'}. "
        + floors_text(table, task.metric) + " "
        f"Paper: {ablation.PAPER_MODEL}, F1 as % of its unablated 89.68"
        + (f"; deviations: {task.deviation}" if task.deviation else "")
        + "."
    )
    return Result(tables={TABLE: table}, arrays=unit_arrays(units),
                  attrs={"task": task.name, "metric": task.metric, "caption": caption,
                         "unit": task.unit, "unit_variants": list(units)})


def unit_arrays(units: dict) -> dict:
    """The grid's per-unit scores as arrays: ``unit_correct`` ``[variants, units]`` (in the
    order of ``units``) and ``unit_total`` ``[units]``, which every variant shares (the same units
    are scored); empty when the task returned none."""
    if not units:
        return {}
    totals = [np.asarray(total, dtype=float) for _, total in units.values()]
    if any(not np.array_equal(t, totals[0]) for t in totals):
        raise ValueError("the ablation's variants scored different units: per-unit totals differ")
    return {"unit_correct": np.stack([np.asarray(c, dtype=float) for c, _ in units.values()]),
            "unit_total": totals[0]}


def floors_text(table: pd.DataFrame, metric: str) -> str:
    """The caption's sentence on the floors every share is measured from (issue 23 item 1)."""
    intact = float(table[metric].iloc[0])
    floors = {a: ablation.floor_score(table, metric, a) for a in ablation.FLOORS}
    missing = ablation.contribution_missing(intact, floors["prune"])
    measured = (f"{metric} {intact:.2f} unablated, {floors['prune']:.2f} with every head pruned, "
                f"{floors['uniform']:.2f} with every head uniform"
                + (f", {floors['no_inter']:.2f} with no inter-sentence attention (the floor of the "
                   "inter-sentence claims)" if not pd.isna(floors["no_inter"]) else ""))
    if missing:
        return f"Floors: {measured}; shares of the unablated score shown: {missing}."
    return (f"Floors: {measured}; bars show the share of what attention gives, (score - every head "
            "pruned) / (unablated - every head pruned).")
