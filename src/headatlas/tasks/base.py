"""What a downstream task is: the :class:`Task` record the interventions read instead of a name.

A :class:`Task` says which transformers head class its model has, how its data is read and
scored, its headline metric, whether the workflow fine-tunes the model itself, and the scores
under which a model never learnt the task. Code is named as ``"module:function"`` strings,
loaded with :mod:`importlib` only when called (:func:`load`), so this module and the registry
(:data:`headatlas.tasks.TASKS`) stay light enough for the Snakefile to import when it is
parsed: no torch, no transformers. The rerun tool (:mod:`headatlas.pipeline.codedeps`) reads
those strings as the imports they are.

The evaluator contract. ``evaluator(model, tokenizer, records, **settings)`` returns
``(evaluate, description)``: ``records`` are what the reader returned,
``evaluate(batch_kwargs=None)`` scores the model and returns ``{metric: value}`` (``%``), and
``batch_kwargs(sentence_ids)`` gives each batch's extra forward arguments (an intervention's,
e.g. :func:`headatlas.interventions.ablation.plan`), so the task never knows what is done to its
heads. ``settings`` are the run settings the task names in :attr:`Task.settings` (from
:data:`SETTINGS`), then the entries of its own options section (:attr:`Task.options`).
The scores may carry :data:`UNITS`: the headline metric per evaluation unit (sentence, question)
as ``(numerator [U], denominator [U])``, the metric being ``100 sum(numerator) / sum(denominator)``,
for paired bootstrap intervals of the ablation's claims.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from headatlas.errors import HeadAtlasError

UNITS = "units"  # the evaluator's per-unit scores of its headline metric (the contract above)

# The run settings a task's code may take (the `ablation:` and `importance:` options the rules
# pass): what each means is given by the code that takes it.
SETTINGS = ("source", "corpus", "split", "importance_split", "max_examples", "max_length", "batch_size")


def load(reference: str) -> Callable:
    """The function named ``"package.module:function"``, imported now."""
    module, sep, name = reference.partition(":")
    if not sep or not name:
        raise ValueError(f"{reference!r} is not a 'module:function' reference")
    return getattr(importlib.import_module(module), name)


def select(names: Iterable[str], settings: Mapping, options: Mapping | None = None) -> dict:
    """The keyword arguments of a task's code: the ``settings`` it ``names``, then ``options``.

    Every key of ``settings`` must be one of :data:`SETTINGS` (a misspelt one is an error with
    the closest name, never dropped silently); a name missing from ``settings`` is left to the
    code's default. ``options`` (the task's own section) are passed as given, last.
    """
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], SETTINGS, n=1)
        raise HeadAtlasError(f"unknown task setting(s) {unknown}" + (f" (did you mean {close[0]!r}?)" if close
                                                                     else f"; expected {SETTINGS}"))
    return {**{name: settings[name] for name in names if name in settings}, **(options or {})}


@dataclass(frozen=True, kw_only=True)
class Task:
    """A downstream task: its model, data, metric and untrained floor.

    Attributes
    ----------
    name : the config's name (``ablation.task``), and the key of :data:`headatlas.tasks.TASKS`.
    label : how captions and claims name it (``"the unablated SQuAD model"``).
    metric : the headline metric (a key of the evaluator's scores): the ablation's shares and
        the importance are taken of it. Unique over the registry: a grid table names no task,
        its headline metric does (:func:`headatlas.tasks.task_of_metric`).
    metrics : every score the evaluator returns (columns of the ablation table), in order.
    model_class : the transformers ``Auto`` class its model loads with (:meth:`auto_class`).
    fine_tuned : True when the workflow fine-tunes the task model itself from a base model
        (rule ``finetune_<name>``; the task model is ``<model>_<name>``, :meth:`task_model`);
        False when the config names a model that is already fine-tuned.
    data_option : the ``ablation:`` key that names its data: ``"corpus"`` (a corpus name, read
        from the prepared ``data/corpora/<corpus>.jsonl``) or a key holding a file path.
    reader : ``"module:function"``, ``function(path) -> records`` (:meth:`read`).
    evaluator : ``"module:function"``, the evaluator contract of the module docstring
        (:meth:`evaluation`).
    settings : which of :data:`SETTINGS` the evaluator takes as keywords.
    options : the ``ablation:`` section of its own options (its entries are the evaluator's
        further keywords, but ``reader_options``), or None.
    reader_options : the keys of that section the reader takes instead (``strict``).
    unit : what its scores average over (``"sentences"``, ``"questions"``).
    untrained_floor : metric -> score (%) below which a model never learnt the task; claims on
        such a model are not applicable. Empty when no floor is needed.
    baseline : what the floor sits below, for the notes; ``baseline_scores`` its scores.
    metric_labels : how notes print a metric (``exact_match`` -> ``EM``).
    deviation : how scoring this task departs from Guan et al.'s setting (SQuAD v1.1), for
        captions; empty for the paper's own task.
    """

    name: str
    label: str
    metric: str
    metrics: tuple[str, ...]
    model_class: str
    fine_tuned: bool
    data_option: str
    reader: str
    evaluator: str
    settings: tuple[str, ...]
    options: str | None = None
    reader_options: tuple[str, ...] = ()
    unit: str = "units"
    untrained_floor: dict[str, float] = field(default_factory=dict, hash=False)
    baseline: str = ""
    baseline_scores: dict[str, float] = field(default_factory=dict, hash=False)
    metric_labels: dict[str, str] = field(default_factory=dict, hash=False)
    deviation: str = ""

    def __post_init__(self):
        if self.metric not in self.metrics:
            raise ValueError(f"task {self.name}: headline metric {self.metric!r} not in {self.metrics}")
        unknown = set(self.settings) - set(SETTINGS)
        if unknown:
            raise ValueError(f"task {self.name}: unknown settings {sorted(unknown)}; expected {SETTINGS}")

    # --- the code it names, loaded when used --------------------------------------------

    def auto_class(self):
        """The transformers class its model loads with (imports transformers)."""
        import transformers

        return getattr(transformers, self.model_class)

    def read(self, path, options: Mapping | None = None) -> list:
        """The task's records from its data file (``reader``), with its ``reader_options``."""
        chosen = {k: v for k, v in (options or {}).items() if k in self.reader_options}
        return list(load(self.reader)(path, **chosen))

    def code_options(self, options: Mapping | None) -> dict:
        """Its options section without the reader's: the evaluator's and scorers' keywords."""
        return {k: v for k, v in (options or {}).items() if k not in self.reader_options}

    def evaluation(self, model, tokenizer, records, settings: Mapping | None = None,
                   options: Mapping | None = None) -> tuple[Callable, str]:
        """``(evaluate, description)`` of ``model`` on ``records`` (``evaluator``), with the
        run ``settings`` it takes and its ``options``."""
        return load(self.evaluator)(model, tokenizer, records,
                                    **select(self.settings, settings or {}, self.code_options(options)))

    # --- names and notes ---------------------------------------------------------------------

    def task_model(self, model: str) -> str:
        """The task model's name for the configured ``model``: ``<model>_<name>`` when the
        workflow fine-tunes it (:attr:`fine_tuned`), else ``model`` itself."""
        return f"{model}_{self.name}" if self.fine_tuned else model

    def untrained(self, scores: Mapping) -> list[str]:
        """The ``scores`` below their :attr:`untrained_floor` (``"f1 3.00 < 20"``), in floor order;
        empty when the model is trained or no floor applies."""
        return [f"{metric} {float(scores[metric]):.2f} < {floor:g}" for metric, floor in self.untrained_floor.items()
                if metric in scores and float(scores[metric]) < floor]

    def floor_text(self, metrics: Iterable[str] | None = None) -> str:
        """``"EM 10 or F1 20"``: the floor of ``metrics`` (default: all)."""
        chosen = self.untrained_floor if metrics is None else metrics
        return " or ".join(f"{self.metric_labels.get(m, m)} {self.untrained_floor[m]:g}" for m in chosen
                           if m in self.untrained_floor)

    def baseline_text(self, metrics: Iterable[str] | None = None) -> str:
        """``"the word-overlap baseline of SQuAD v1.1, EM 13.2 / F1 20.2"`` (``metrics``: default all)."""
        chosen = self.baseline_scores if metrics is None else metrics
        scores = " / ".join(f"{self.metric_labels.get(m, m)} {self.baseline_scores[m]:g}" for m in chosen
                            if m in self.baseline_scores)
        return ", ".join(filter(None, [self.baseline, scores]))
