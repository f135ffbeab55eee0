"""What the workflow runs for a valid configuration, and what it leaves out and why.

:func:`plan` derives, once, every value the rules need (which corpora feed which analysis,
the ablation's task model, the views of each model, ...) as frozen objects built by keyword:
:class:`Plan`, and its optional parts :class:`AblationPlan`, :class:`ImportancePlan` and
:class:`LabelsPlan` (None when the config turns the analysis off). Rules read ``config[...]``
and ``PLAN`` and compute nothing themselves. The plan names models and corpora, never result
paths: a result's path is written once, in the rule that writes it (readers use
``rules.<rule>.output.<name>``).

This module is imported when the Snakefile is parsed: it must stay light (no torch, no
transformers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from headatlas.encoders.capabilities import capabilities, default_views, gradient_losses
from headatlas.encoders.layouts import norm_layout_of
from headatlas.pipeline.config import built_models, corpora_of, labelled_treebanks, schema_path
from headatlas.tasks import TASKS
from headatlas.weightings import SUFFIXES

# headatlas.analyses.probes.PROBES (not imported here: it loads torch)
PROBES = ("right_branching", "distances_glove", "random_attn_glove", "uniform_attn_glove", "attn_only",
          "attn_glove")


@dataclass(frozen=True)
class Omission:
    """An analysis the config leaves out: its rules (name prefixes; none if it still runs for
    other models), what is missing, and why."""

    rules: tuple[str, ...]
    what: str
    why: str

    def __str__(self) -> str:
        rules = f" [rules {', '.join(r + '*' for r in self.rules)}]" if self.rules else ""
        return f"left out: {self.what}{rules}: {self.why}"


@dataclass(frozen=True, kw_only=True)
class AblationPlan:
    """The head-type ablation's task model, where its head types come from, and its data.

    ``types_csv`` is a head-type table given by hand; otherwise the types are the headtypes
    analysis of ``types_model`` on ``types_corpus`` (``types_own``: the task model's own, or its
    base's when the task model is not a configured model).
    """

    task: str
    task_model: str
    spec: dict  # the task model's config entry (a fine-tuned tagger: its folder under results/)
    model_inputs: tuple[str, ...]  # what the task model is loaded from, when the workflow makes it
    base: str | None
    corpus: str | None  # upos: the treebank scored
    data: str | None  # upos: the prepared treebank; squad: the SQuAD JSON
    max_length: int
    types_csv: str | None = None
    types_model: str | None = None
    types_corpus: str | None = None
    types_own: bool | None = None

    @property
    def types_source(self) -> str:
        """Where the head types come from, for the caption."""
        if self.types_csv:
            return f"the table {self.types_csv}"
        return f"{self.types_model} on {self.types_corpus}"


@dataclass(frozen=True, kw_only=True)
class ImportancePlan:
    """Which heads matter to the ablation's task model: its metric, and the tables set beside
    the importance (the task model's patterns on ``patterns_corpus``, its head types, and its
    heads' outputs and dormancy (rule activations), on ``types_corpus``; None where no such
    table is planned)."""

    task_model: str
    metric: str
    patterns_corpus: str | None
    types_corpus: str | None


@dataclass(frozen=True, kw_only=True)
class LabelsPlan:
    """The hand-labelled attention maps the pattern classifier is scored on."""

    file: str
    maps: str


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Values the rules need, derived once from a valid config (:func:`plan`).

    ``omitted`` says what the config leaves out and why, so a dry run and the
    README can name every missing table.
    """

    results: str
    segments: list[str]
    treebanks: list[str]
    documents: list[str]
    labelled_treebanks: list[str]
    surface_corpus: str | None
    syntax_heatmaps: dict[str, str]  # file slug -> relation
    honest: bool
    probes_on: bool
    probe_runs: list[tuple[str, int]]
    gradient_models: list[str]
    headtype_pairs: list[tuple[str, str]]
    finetune_models: list[str]
    ablation: AblationPlan | None
    patterns_corpora: list[str]
    patterns_labels: LabelsPlan | None
    importance: ImportancePlan | None
    corpus_models: dict[str, list[str]]
    coref_selection: dict[str, str]
    omitted: list[Omission]
    # model -> the views its map analyses emit (attention, norm), and the models with norm.
    weightings: dict[str, list[str]]
    # models whose attention stores stay on disk; the others' are temp() (extraction.keep_stores).
    kept_stores: list[str]
    # model -> how its attention is extracted: store (maps to disk) or fused (statistics in the
    # forward pass; `extraction.mode`, a model's `extraction_mode`).
    modes: dict[str, str] = field(default_factory=dict)
    # model -> the analyses whose outputs are asked for it (`models.<m>.analyses`); None = all.
    analyses: dict[str, list[str] | None]
    # model -> the loss of its gradient importance (auto resolved from the checkpoint's tensors;
    # auto where they could not be read): headatlas.encoders.capabilities.gradient_losses.
    gradient_losses: dict[str, str] = field(default_factory=dict)
    # models whose hidden states and head outputs are read (massive activations, dormant heads):
    # those whose output projection is known (a norm layout), whatever their views.
    activation_models: list[str] = field(default_factory=list)
    mixing_models: list[str] = field(default_factory=list)  # base models whose tagger runs `mixing`

    @property
    def mixing_taggers(self) -> dict[str, str]:
        """The context mixing benchmark's taggers (``minilm_upos``, as the ablation names them) ->
        their base models."""
        return {TASKS["upos"].task_model(m): m for m in self.mixing_models}

    @property
    def task_chain(self) -> set[tuple[str, str]]:
        """(model, corpus) of the stores the ablation and importance read head types and
        patterns from: with the fine-tuning before them, the run's longest path."""
        chain = set()
        if self.ablation and self.ablation.types_corpus:
            chain.add((self.ablation.types_model, self.ablation.types_corpus))
        if self.importance and self.importance.patterns_corpus:
            chain.add((self.importance.task_model, self.importance.patterns_corpus))
        return chain

    def asks(self, model: str, analysis: str) -> bool:
        """Whether ``analysis``'s final outputs are asked for ``model``. Analyses outside
        :func:`model_analyses` (the scorecard, the cross-model figures) are asked always."""
        chosen = self.analyses.get(model)
        return chosen is None or analysis not in model_analyses() or analysis in chosen

    @property
    def temp_stores(self) -> list[str]:
        """Models whose stores are deleted once every job that reads them has run."""
        return [m for m in self.weightings if m not in self.kept_stores and not self.fused(m)]

    def fused(self, model: str) -> bool:
        """Whether ``model``'s analyses run inside the forward pass (no store written)."""
        return self.modes.get(model, "store") == "fused"

    @property
    def fused_models(self) -> list[str]:
        return [m for m in self.weightings if self.fused(m)]

    def keeps_maps(self, model: str) -> bool:
        """Whether maps of ``model`` stay on disk after the run: its store, or its exemplars."""
        return self.fused(model) or model in self.kept_stores

    def suffixes(self, model: str) -> list[str]:
        """The output-folder suffixes of ``model``'s weightings: '' (attention), '-norm'."""
        return [SUFFIXES[w] for w in self.weightings[model]]

    def norms(self, model: str) -> bool:
        """Whether extraction records value norms for ``model`` (its weightings include norm)."""
        return "norm" in self.weightings[model]

    @property
    def norm_models(self) -> list[str]:
        """Models whose Kobayashi shares and rollout run (norm weighting, a surface corpus)."""
        return [m for m in self.weightings if self.norms(m)] if self.surface_corpus else []

    def runs_on(self, model: str, corpus: str) -> bool:
        """Whether ``corpus`` is extracted and analysed for ``model`` (``corpora.<c>.models``)."""
        return model in self.corpus_models.get(corpus, [model])


@lru_cache(maxsize=None)
def model_analyses() -> tuple[str, ...]:
    """What `models.<m>.analyses` may name: the enum of the schema, the one list. These are the
    analyses of the rules files run for every model (probes, finetune, ablation and importance
    name their models in their own config blocks); an analysis it does not name (the scorecard,
    the cross-model figures, one just added) is asked for every model."""
    schema = yaml.load(schema_path().read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    model = schema["properties"]["models"]["additionalProperties"]["properties"]
    return tuple(model["analyses"]["items"]["enum"])


def plan(config: dict) -> Plan:
    """What the workflow runs for this (validated) config, and what it leaves out and why."""
    omitted: list[Omission] = []

    def leave_out(rules: tuple[str, ...], what: str, why: str) -> None:
        omitted.append(Omission(rules, what, why))

    models, surface = config["models"], config["surface"]["corpus"]
    if surface is None:
        leave_out(("surface_", "clustering_", "gradients_", "headtypes_", "norm_shares", "rollout", "sink_rate",
                   "activations"),
                  "surface patterns, clustering, gradients, head types, norm shares, rollout, sinks, "
                  "massive activations",
                  "`surface.corpus` is not set (name a segments corpus)")
    analyses = {m: spec.get("analyses") for m, spec in models.items()}
    for m, chosen in analyses.items():
        dropped = [a for a in model_analyses() if a not in chosen] if chosen is not None else []
        if dropped:
            leave_out((), f"{', '.join(dropped)} of {m}",
                      f"its `analyses` asks for {', '.join(chosen) or 'none'}; the tables other "
                      "analyses read from it still run")
    weightings, trims = default_views(config)  # norm left out where the model has no layout for it
    without_norm = [m for m, views in weightings.items() if "norm" not in views
                    and m not in {t.model for t in trims}]
    if without_norm:
        leave_out(() if len(without_norm) < len(models) else ("norm_shares", "rollout"),
                  f"norm-weighted views, norm shares and rollout of {', '.join(without_norm)}",
                  "their `weightings` exclude norm")
    for i, trim in enumerate(trims):
        last = i == len(trims) - 1 and not any("norm" in views for views in weightings.values())
        leave_out(("norm_shares", "rollout") if last else (), trim.what, trim.why)
    labelled = labelled_treebanks(config)
    if not labelled:
        leave_out(("syntax_",), "dependency heads (Table 1)",
                  "no treebank with labelled dependency trees is configured")
    syntax = config["syntax"]
    honest = bool(syntax["selection"]) and bool(syntax["evaluation"])
    if labelled and not honest:
        leave_out(("syntax_honest",), "the honest regime of Table 1",
                  "`syntax.selection` and `syntax.evaluation` are not set")
    documents = corpora_of(config, "documents")
    if not documents:
        leave_out(("coref_",), "coreference heads (Table 2)", "no documents corpus is configured")
    probes = config["probes"]
    probes_on = probes["model"] is not None
    if not probes_on:
        leave_out(("probes_",), "probing classifiers (Table 3, edge classifier)",
                  "`probes.model` is not set")
    losses, loss_trims = gradient_losses(config)
    for trim in loss_trims:
        leave_out((), trim.what, trim.why)
    no_layout = {m: capabilities(models[m]).norms_reason for m in models
                 if capabilities(models[m]).norms is False} if surface else {}
    for m, why in no_layout.items():
        leave_out((), f"massive activations and dormant heads of {m}", why)
    random = [m for m in models if models[m].get("random_init")]
    if surface and random:
        leave_out((), f"gradient importance of {', '.join(random)}",
                  "a random encoder was never trained on the loss, so its gradients say nothing")
    pairs = [tuple(p) for p in config["headtypes"]["compare"]] if surface else []
    if surface and not pairs:
        leave_out(("headtypes_compare",), "head-type changes between two models",
                  "`headtypes.compare` names no [before, after] pair")
    if not config["finetune"]["models"]:
        leave_out(("finetune_",), "UPOS fine-tuning", "`finetune.models` is empty")
    ablation = ablation_plan(config)
    if ablation is None:
        leave_out(("ablation",), "head-type ablation (Guan §5)", "`ablation.model` is not set")
    patterns = config["patterns"]
    if not patterns["corpora"]:
        leave_out(("patterns_",), "Kovaleva et al.'s attention patterns", "`patterns.corpora` is empty")
    labels = labels_plan(config) if patterns["corpora"] else None
    if patterns["corpora"] and labels is None:
        leave_out(("patterns_evaluate",), "the pattern classifier's precision and recall on "
                  "hand-labelled maps", "`patterns.labels` is null")
    corpus_models = {c: list(spec.get("models") or models) for c, spec in config["corpora"].items()}
    importance = importance_plan(config, ablation, corpus_models)
    if importance is None:
        why = "`importance.enabled` is false" if ablation is not None else "`ablation.model` is not set"
        leave_out(("importance",), "which heads matter (single-head disabling, head importance, "
                  "pruning)", why)
    mixing = mixing_models(config, leave_out)
    keep = config["extraction"]["keep_stores"]
    modes = {m: spec.get("extraction_mode") or config["extraction"]["mode"] for m, spec in models.items()}
    return Plan(
        results=config["results"], segments=corpora_of(config, "segments"),
        treebanks=corpora_of(config, "treebank"), documents=documents, labelled_treebanks=labelled,
        surface_corpus=surface, syntax_heatmaps={r.replace(":", "_"): r for r in syntax["key_relations"]},
        honest=honest, probes_on=probes_on,
        probe_runs=[("right_branching", 0)] + [(p, s) for p in PROBES[1:] for s in probes["seeds"]],
        gradient_models=[m for m in models if not models[m].get("random_init")] if surface else [],
        headtype_pairs=pairs, finetune_models=list(config["finetune"]["models"]), ablation=ablation,
        patterns_corpora=list(patterns["corpora"]), patterns_labels=labels, importance=importance,
        corpus_models=corpus_models, coref_selection=coref_selection(config, corpus_models),
        omitted=omitted, weightings=weightings,
        kept_stores=[m for m in models if (keep == "all" or m in keep) and modes[m] == "store"],
        modes=modes, analyses=analyses, gradient_losses=losses,
        activation_models=[m for m in models if m not in no_layout] if surface else [],
        mixing_models=mixing)


def mixing_models(config: dict, leave_out) -> list[str]:
    """The base models whose UPOS tagger the context mixing benchmark scores: every model of
    `finetune.models` with a post-LayerNorm norm layout (the measures need each head's value and
    output projection, GlobEnc and ALTI the LayerNorms after each sublayer), none when
    `mixing.enabled` is false."""
    what = "context mixing measures against blank-out (Mohebbi et al. 2023)"
    if not config["finetune"]["models"]:
        leave_out(("context_mixing", "compare_mixing"), what, "`finetune.models` is empty: no tagger")
        return []
    if not config["mixing"]["enabled"]:
        leave_out(("context_mixing", "compare_mixing"), what, "`mixing.enabled` is false")
        return []
    chosen = []
    for m in config["finetune"]["models"]:
        found = capabilities(config["models"][m])
        layout = norm_layout_of(found.model_type) if found.norm_layout else None
        if found.norms is False:
            leave_out((), f"{what} of {m}'s tagger", found.norms_reason)
        elif layout is not None and not layout.post_ln:
            leave_out((), f"{what} of {m}'s tagger", f"{layout.name} is a pre-LayerNorm family: GlobEnc "
                      "and ALTI decompose the LayerNorms after each sublayer, which it does not have")
        else:
            chosen.append(m)
    return chosen


def packaged_pattern_labels() -> tuple[Path, Path]:
    """The hand-labelled maps shipped with the library: label table and maps (MiniLM, Wikipedia)."""
    data = Path(__file__).resolve().parents[1] / "data"
    return data / "pattern_labels.csv", data / "pattern_maps.npz"


def labels_plan(config: dict) -> LabelsPlan | None:
    """The labelled maps' label table and maps file, or None when the evaluation is off."""
    labels = config["patterns"]["labels"]
    if labels is None:
        return None
    if labels["file"] is None:
        file, maps = map(str, packaged_pattern_labels())
        return LabelsPlan(file=file, maps=maps)
    return LabelsPlan(file=labels["file"], maps=labels["maps"])


def own_labels(config: dict) -> dict | None:
    """The labelled maps the pattern forest learns from, as the analysis's ``labels`` option:
    the config's own ``file`` and ``maps``, or None for the packaged set (no machine's path in
    the options: moving the checkout reruns nothing)."""
    labels = config["patterns"]["labels"]
    if labels is None or labels["file"] is None:
        return None
    return {"file": labels["file"], "maps": labels["maps"]}


def importance_plan(config: dict, ablation: AblationPlan | None,
                    corpus_models: dict[str, list[str]]) -> ImportancePlan | None:
    """Which heads matter: the ablation's task model, and the pattern and head-type tables beside it.

    The task model's patterns come from the surface corpus (the segments the classifier was
    labelled and checked on) when its maps are classified, else from the task's corpus (UPOS);
    its head types from its own clustering on the surface corpus (None when the task model is
    not a configured model, or no such table is planned).
    """
    if ablation is None or not config["importance"]["enabled"]:
        return None
    task_model = ablation.task_model
    configured = task_model in config["models"]
    surface = config["surface"]["corpus"]
    corpora = [c for c in config["patterns"]["corpora"] if task_model in corpus_models.get(c, [task_model])]
    task = TASKS[ablation.task]
    own_corpus = task.data_option == "corpus" and ablation.corpus in corpora
    patterns_corpus = surface if surface in corpora else ablation.corpus if own_corpus else None
    return ImportancePlan(task_model=task_model, metric=task.metric,
                          patterns_corpus=patterns_corpus if configured else None,
                          types_corpus=surface if configured and surface else None)


def coref_selection(config: dict, corpus_models: dict[str, list[str]]) -> dict[str, str]:
    """For each windows documents corpus, a truncated one of the same treebank (and models) on
    whose ``coref.select_split`` its held-out head can be chosen when it lacks that split."""
    corpora = config["corpora"]
    chosen = {}
    for name, spec in corpora.items():
        if spec["kind"] != "documents" or spec["cover"] != "windows":
            continue
        for other, o in corpora.items():
            if o["kind"] == "documents" and o["cover"] == "truncate" and o["from"] == spec["from"] \
                    and set(corpus_models[name]) <= set(corpus_models[other]):
                chosen[name] = other
                break
    return chosen


def ablation_plan(config: dict) -> AblationPlan | None:
    """The ablation's task model, head-type source and data, or None when it is off."""
    a, results = config["ablation"], config["results"]
    if a["model"] is None:
        return None
    task = TASKS[a["task"]]
    task_model = task.task_model(a["model"])
    base = a["model"] if task.fine_tuned else a["base"]
    own = task_model in config["models"] and (a["types_from"] == "task" or not base)
    types_model = task_model if own else base
    model_path = f"{results}/finetune/{a['model']}/{task.name}/model" if task.fine_tuned else \
        config["models"][a["model"]].get("path", "")
    corpus = a["corpus"] or config["finetune"]["corpus"]
    from_types = {} if a["types_csv"] else {
        "types_model": types_model, "types_corpus": a["types_corpus"] or config["surface"]["corpus"],
        "types_own": types_model == task_model}
    return AblationPlan(
        task=task.name, task_model=task_model,
        spec={"path": model_path} if task.fine_tuned else config["models"][a["model"]],
        model_inputs=(f"{model_path}/config.json",) if model_path.startswith(f"{results}/")
        else (model_path,) if model_path.rstrip("/") in built_models(config) else (),
        base=base, corpus=corpus,
        data=f"{config['data']}/corpora/{corpus}.jsonl" if task.data_option == "corpus"
        else a[task.data_option],
        max_length=a["max_length"] or config["finetune"]["max_length"],
        types_csv=a["types_csv"], **from_types)
