"""A task model scored under every head-type ablation (Guan et al. 2020, §5, Tables 2-3).

:func:`ablation_grid` is the ``ablation`` rule's whole job: load the task
model with the ablation attention (:mod:`headatlas.interventions.ablation`), read the head
types, build the task's evaluation (:mod:`headatlas.tasks.upos` or
:mod:`headatlas.tasks.squad`), score every variant
(:func:`headatlas.interventions.ablation.run_grid`) and write the caption.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from headatlas.interventions import ablation
from headatlas.analyses.headtypes import NO_TYPES
from headatlas.errors import HeadAtlasError
from headatlas.tasks import squad, upos

log = logging.getLogger(__name__)

TASKS = ("upos", "squad")
MAIN_METRIC = {"upos": upos.MAIN_METRIC, "squad": squad.MAIN_METRIC}


def load_task_model(task: str, source: str, revision: str | None = None, device: str | None = None):
    """``(model, tokenizer)``: the fine-tuned task model with the ablation attention, eval mode."""
    from transformers import AutoModelForQuestionAnswering, AutoModelForTokenClassification

    from headatlas.encoders.models import from_pretrained, tokenizer_from_pretrained

    if task not in TASKS:
        raise HeadAtlasError(f"unknown ablation task {task!r}; expected one of {TASKS}")
    ablation.register()
    cls = AutoModelForTokenClassification if task == "upos" else AutoModelForQuestionAnswering
    model = from_pretrained(cls, source, revision, attn_implementation=ablation.IMPLEMENTATION)
    tokenizer = tokenizer_from_pretrained(source, revision)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer


@dataclass
class GridResult:
    table: pd.DataFrame  # one row per variant (ablation.run_grid)
    metric: str  # the headline column of the table
    caption: str


def ablation_grid(task: str, spec: dict, data: str | Path, types_path: str | Path, name: str, *,
                  types_source: str, types_own: bool | None, corpus: str = "", split: str = "test",
                  renormalise: bool = False, batch_size: int = 32, max_examples: int | None = None,
                  max_length: int = 128, squad_options: dict | None = None,
                  progress: bool = True) -> GridResult:
    """Score the task model ``name`` (config entry ``spec``) under every head-type variant.

    Parameters
    ----------
    task : ``upos`` or ``squad``
    data : path
        The prepared treebank JSONL (upos) or the SQuAD v1.1 JSON (squad).
    types_path : path
        Per-head types (``layer, head, type``, :func:`headatlas.interventions.ablation.read_head_types`).
    types_source, types_own
        Where the types come from, for the caption; ``types_own`` True when
        they are the task model's own, False when its base's, None for a table given by hand.
    corpus, split, max_length
        upos: the treebank's name, the split scored, wordpieces per packed input.
    squad_options : dict
        squad: ``max_length``, ``stride``, ``max_answer_length`` of the windows.
    """
    from headatlas.corpora.records import read_jsonl
    from headatlas.encoders.models import resolve

    source, revision = resolve(spec)
    model, tokenizer = load_task_model(task, source, revision)
    config = model.config
    types = ablation.read_head_types(types_path, config.num_hidden_layers, config.num_attention_heads)
    if task == "upos":
        task_score, described = upos.ablation_evaluator(
            model, tokenizer, list(read_jsonl(data)), corpus, split, max_examples, max_length,
            batch_size)
    else:
        options = {"max_length": 384, "stride": 128, "max_answer_length": 30, **(squad_options or {})}
        task_score, described = squad.ablation_evaluator(model, tokenizer, data, max_examples,
                                                         batch_size, **options)

    def evaluate(actions: torch.Tensor) -> dict[str, float]:
        return task_score(ablation.plan(actions, renormalise))

    table = ablation.run_grid(evaluate, types, MAIN_METRIC[task], progress=progress)
    counts = (", ".join(f"{t} {n}" for t, n in ablation.type_counts(types).items())
              if (types != NO_TYPES).any() else f"{NO_TYPES}: only the floors scored")
    caption = (
        f"Task model {name} ({spec.get('hub') or source}, "
        f"{config.num_hidden_layers}x{config.num_attention_heads} heads); {described}. Head types "
        f"({counts}) from {types_source}"
        + {True: " (the task model itself)", None: "",
           False: " (the pre-trained base: the fine-tuned model is not a configured model)"}[types_own]
        + f". Removed weights {'renormalised' if renormalise else 'not renormalised'}. "
        + floors_text(table, MAIN_METRIC[task]) + " "
        f"Paper: {ablation.PAPER_MODEL}, F1 as % of its unablated 89.68"
        + ("; deviations: UPOS tagging instead of SQuAD, a smaller model" if task == "upos" else "")
        + "."
    )
    return GridResult(table, MAIN_METRIC[task], caption)


def floors_text(table: pd.DataFrame, metric: str) -> str:
    """The caption's sentence on the floors every share is measured from (issue 23 item 1)."""
    intact = float(table[metric].iloc[0])
    floors = {a: ablation.floor_score(table, metric, a) for a in ablation.FLOORS}
    missing = ablation.contribution_missing(intact, floors["prune"])
    measured = (f"{metric} {intact:.2f} unablated, {floors['prune']:.2f} with every head pruned, "
                f"{floors['uniform']:.2f} with every head uniform")
    if missing:
        return f"Floors: {measured}; shares of the unablated score shown: {missing}."
    return (f"Floors: {measured}; bars show the share of what attention gives, (score - every head "
            "pruned) / (unablated - every head pruned).")
