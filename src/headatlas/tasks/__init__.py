"""Downstream tasks a model is fine-tuned on or scored on: their data, inputs and metrics.

- :data:`TASKS`: every task as a :class:`~headatlas.tasks.base.Task` (model class, reader,
  evaluator, metric, untrained floor), keyed by the config's ``ablation.task``; the
  interventions read these instead of dispatching on the name;
- :mod:`headatlas.tasks.upos`: UPOS tagging on a treebank (packing consecutive
  sentences, fine-tuning, word accuracy) -- the default task model of the
  head-type ablation;
- :mod:`headatlas.tasks.squad`: SQuAD v1.1 (reading, windows, span prediction,
  the official exact match / F1) -- the paper's task.

The interventions that score a task model under changed heads are :mod:`headatlas.interventions`.
Light on purpose (no torch, no transformers): the Snakefile imports the registry when it is
parsed; a task's code is imported when it is used.
"""

from __future__ import annotations

import difflib

from headatlas.errors import HeadAtlasError
from headatlas.tasks.base import SETTINGS, Task, load, select

__all__ = ["SETTINGS", "TASKS", "Task", "get_task", "load", "select", "task_of_metric"]

UPOS = Task(
    name="upos", label="UPOS", metric="accuracy", metrics=("accuracy", "loss"),
    model_class="AutoModelForTokenClassification", fine_tuned=True, data_option="corpus",
    reader="headatlas.corpora.records:read_jsonl", evaluator="headatlas.tasks.upos:ablation_evaluator",
    settings=("corpus", "split", "max_examples", "max_length", "batch_size"), unit="sentences",
    # No floor: the workflow fine-tunes the tagger itself (finetune/<model>/upos/metrics.csv gives
    # its test accuracy), and a tagger that learnt nothing from its heads shows in the ablation's
    # floors instead (unablated within MIN_CONTRIBUTION of every head pruned: claims not applicable).
    untrained_floor={},
    deviation="UPOS tagging instead of SQuAD, a smaller model",
)

# A SQuAD v1.1 model whose *unablated* score is below either floor never learnt the task, and
# shares of its score are shares of noise (a random model's F1 of 3 "keeps 100%" as easily as
# it "breaks"). The floors sit below the weakest published baseline that reads the question:
# Rajpurkar et al. (2016) report on v1.1 dev a random-span guess at EM 1.1 / F1 4.1, a
# sliding-window word-overlap baseline at EM 13.2 / F1 20.2 and logistic regression at EM 40.0 /
# F1 51.0; trained BERT models score EM > 80 / F1 > 88 (Guan et al.'s unablated model: F1 89.68;
# the hub's bert-large-uncased-whole-word-masking-finetuned-squad card: EM 86.91 / F1 93.15). A
# model below EM 10 or F1 20 is beaten by word overlap: its claims are not applicable.
SQUAD = Task(
    name="squad", label="SQuAD", metric="f1", metrics=("exact_match", "f1"),
    model_class="AutoModelForQuestionAnswering", fine_tuned=False, data_option="squad_path",
    reader="headatlas.tasks.squad:read_squad", evaluator="headatlas.tasks.squad:ablation_evaluator",
    settings=("source", "max_examples", "batch_size"), options="squad", reader_options=("strict",),
    unit="questions",
    untrained_floor={"exact_match": 10.0, "f1": 20.0},
    baseline="the word-overlap baseline of SQuAD v1.1", baseline_scores={"exact_match": 13.2, "f1": 20.2},
    metric_labels={"exact_match": "EM", "f1": "F1"},
)

TASKS: dict[str, Task] = {task.name: task for task in (UPOS, SQUAD)}


def get_task(task: str | Task) -> Task:
    """The registered task named ``task`` (a :class:`Task` is returned as it is)."""
    if isinstance(task, Task):
        return task
    if task not in TASKS:
        close = difflib.get_close_matches(str(task), list(TASKS), n=1)
        raise HeadAtlasError(f"unknown task {task!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; expected one of {tuple(TASKS)}")
    return TASKS[task]


def task_of_metric(metric: str) -> Task | None:
    """The task whose headline metric is ``metric`` (``"f1"`` -> squad), None if none is."""
    return next((task for task in TASKS.values() if task.metric == metric), None)
