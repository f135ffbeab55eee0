"""The configuration: one schema, checked names, and the values derived from them.

``workflow/schemas/config.schema.yaml`` is the one source of truth for every key,
default and constraint. :func:`load_config` validates a config against it, fills
in the defaults, and checks the names that point at other entries (a probe
model, the honest-regime treebank, ...): every mistake is reported at once, each
naming its key, what is wrong and what is allowed. :func:`plan` derives what
the workflow runs from a valid config (which corpora feed which analysis,
the ablation's task model, ...) and says why anything is left out, so rules
read ``config[...]`` and ``PLAN`` and compute nothing themselves.

This module is imported when the Snakefile is parsed: it must stay light (no
torch, no transformers).
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from headatlas.encoders.capabilities import capability_problems, default_views, gradient_losses
from headatlas.corpora.formats import FORMATS
from headatlas.errors import HeadAtlasError
from headatlas.weightings import SUFFIXES

SPLITS = ("train", "dev", "test")
MODEL_SOURCES = ("package", "path", "hub")


class ConfigError(HeadAtlasError):
    """The configuration is invalid; the message lists every problem, each with its key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"the configuration has {len(problems)} problem(s):\n{lines}\n"
                         "  (every key is documented in workflow/schemas/config.schema.yaml)")


def load_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place: fill defaults, check types and names; return it.

    Raises
    ------
    ConfigError
        Listing every problem found, each naming its key.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    problems = schema_problems(config, schema)
    if not problems:  # names and paths are only worth checking in a well-formed config
        problems = reference_problems(config) + path_problems(config) + capability_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


# --- the schema ---------------------------------------------------------------------------

def schema_path() -> Path:
    """The schema shipped with the library (in a clone, a link to workflow/schemas/)."""
    return Path(__file__).resolve().parents[1] / "data" / "config.schema.yaml"


def default_config(config: dict | None = None) -> dict:
    """``config`` (or an empty one) with every schema default filled in, unchecked: for the
    commands outside the workflow that need one setting's default (``headatlas patterns-eval``)."""
    config = copy.deepcopy(config or {})
    for _ in _filling_validator(yaml.safe_load(schema_path().read_text())).iter_errors(config):
        pass  # filling happens while validating; a partial config is expected here
    return config


def _filling_validator(schema: dict):
    """A Draft 2020-12 validator that writes each missing property's default into the instance."""
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties(validator, props, instance, subschema):
        if isinstance(instance, dict):
            for name, sub in props.items():
                if name not in instance and isinstance(sub, dict) and "default" in sub:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, props, instance, subschema)

    return validators.extend(Draft202012Validator, {"properties": properties})(schema)


def schema_problems(config: dict, schema: dict) -> list[str]:
    """Every schema violation of ``config`` (defaults filled in on the way), as messages."""
    errors = sorted(_filling_validator(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    return list(dict.fromkeys(_describe(e) for e in errors))


def key_of(path) -> str:
    """``models.minilm.path`` from a JSON path; ``(top level)`` for the root."""
    return ".".join(str(p) for p in path) or "(top level)"


def _describe(error) -> str:
    key = key_of(error.absolute_path)
    kind, instance, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = sorted(schema.get("properties", {}))
        parts = []
        for name in sorted(set(instance) - set(known)):
            where = name if key == "(top level)" else f"{key}.{name}"
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            parts.append(f"`{where}`: unknown key{hint}; allowed here: {', '.join(known)}")
        return "; ".join(parts)
    if kind == "oneOf" and len(error.absolute_path) == 2 and error.absolute_path[0] == "models":
        given = [s for s in MODEL_SOURCES if isinstance(instance, dict) and s in instance]
        return (f"`{key}`: give exactly one source of {', '.join(MODEL_SOURCES)}; "
                f"found {', '.join(given) if given else 'none'}")
    if kind == "oneOf" and error.context:
        return _discriminator_problem(key, instance, error.validator_value) or \
            f"`{key}`: {_fewest_errors_branch(error.context)}"
    if kind == "enum":
        return f"`{key}`: {instance!r} is not one of {', '.join(map(str, error.validator_value))}"
    if kind == "type":
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return f"`{key}`: expected {wanted}, got {instance!r}"
    if kind == "required":
        missing = [r for r in error.validator_value if r not in instance]
        return f"`{key}`: missing key(s) {', '.join(missing)}"
    if kind == "dependentRequired":
        return f"`{key}`: {error.message} (revision pins a hub model)"
    if kind == "propertyNames":
        return (f"`{key}`: name {instance!r} may hold only letters, digits, '_', '-' and '.', "
                "and must start with a letter or digit")
    return f"`{key}`: {error.message}"


def _discriminator_problem(key: str, instance, branches: list[dict]) -> str | None:
    """For ``oneOf`` branches told apart by one key's value (e.g. ``by``): a value none allows."""
    if not isinstance(instance, dict):
        return None
    for name, value in instance.items():
        allowed = []
        for branch in branches:
            spec = branch.get("properties", {}).get(name, {})
            allowed += spec.get("enum", []) + ([spec["const"]] if "const" in spec else [])
        if allowed and value not in allowed:
            return f"`{key}.{name}`: {value!r} is not one of {', '.join(map(str, allowed))}"
    return None


def _fewest_errors_branch(context) -> str:
    """The errors of the ``oneOf`` branch that came closest to matching."""
    branches: dict[int, list] = {}
    for e in context:
        branches.setdefault(e.relative_schema_path[0], []).append(e)
    closest = min(branches.values(), key=len)
    return "; ".join(e.message for e in closest)


# --- names that point at other entries -----------------------------------------------------

def corpora_of(config: dict, kind: str) -> list[str]:
    return [name for name, spec in config["corpora"].items() if spec["kind"] == kind]


def format_name(config: dict, name: str) -> str:
    """The reader of a corpus: its ``format:``, else its name (gum, ewt, wikipedia)."""
    return config["corpora"][name].get("format", name)


def _treebanks_with(config: dict, layer: str) -> list[str]:
    """Treebanks whose format carries ``layer`` (see :data:`headatlas.corpora.formats.FORMATS`)."""
    return [c for c in corpora_of(config, "treebank")
            if format_name(config, c) in FORMATS and getattr(FORMATS[format_name(config, c)], layer)]


def labelled_treebanks(config: dict) -> list[str]:
    """Treebanks whose trees carry dependency labels (Table 1, probes, fine-tuning).

    CoNLL-2012's heads are derived from constituency parses, without labels: coreference only.
    """
    return _treebanks_with(config, "labelled_trees")


def reference_problems(config: dict) -> list[str]:
    """Names that point at models or corpora which are not configured (or of the wrong kind)."""
    models = sorted(config["models"])
    corpora = config["corpora"]
    treebanks = corpora_of(config, "treebank")
    labelled = labelled_treebanks(config)
    problems: list[str] = []

    def check(key: str, value, allowed: list[str], what: str) -> None:
        if value is not None and value not in allowed:
            close = difflib.get_close_matches(str(value), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            listed = ", ".join(allowed) if allowed else "none"
            problems.append(f"`{key}`: {value!r} is not {what}{hint}; configured: {listed}")

    keep = config["extraction"]["keep_stores"]
    for i, model in enumerate(keep if isinstance(keep, list) else []):
        check(f"extraction.keep_stores.{i}", model, models, "a configured model")
    with_coreference = _treebanks_with(config, "coreference")
    for name, spec in corpora.items():
        for i, model in enumerate(spec.get("models", [])):
            check(f"corpora.{name}.models.{i}", model, models, "a configured model")
        if spec["kind"] == "documents":
            check(f"corpora.{name}.from", spec.get("from"), with_coreference,
                  "a treebank whose format carries coreference")
        if spec["kind"] != "treebank" and "splits" in spec:
            problems.append(f"`corpora.{name}.splits`: only treebank corpora assign splits")
        if spec["kind"] == "segments" and "keep_splits" in spec:
            problems.append(f"`corpora.{name}.keep_splits`: segments have no splits")
        fmt = format_name(config, name)
        if spec["kind"] == "treebank" and fmt not in FORMATS:
            problems.append(f"`corpora.{name}.format`: {fmt!r} is not a treebank format; one of "
                            f"{', '.join(FORMATS)}")
        elif spec["kind"] == "treebank" and FORMATS[fmt].files and not spec.get("path"):
            problems.append(f"`corpora.{name}.path`: a {fmt!r} treebank is read from a file or "
                            "folder; set `path:` (or format: gum | ewt, read from their pinned source)")
    check("surface.corpus", config["surface"]["corpus"], corpora_of(config, "segments"),
          "a segments corpus")
    syntax = config["syntax"]
    if syntax["selection"]:
        check("syntax.selection.corpus", syntax["selection"]["corpus"], labelled,
              "a treebank with labelled trees")
    for i, item in enumerate(syntax["evaluation"]):
        check(f"syntax.evaluation.{i}.corpus", item["corpus"], labelled, "a treebank with labelled trees")
    if syntax["evaluation"] and not syntax["selection"]:
        problems.append("`syntax.evaluation`: set `syntax.selection` too (where the heads are chosen)")
    shared = [("syntax.selection.corpus", (syntax["selection"] or {}).get("corpus"))]
    shared += [(f"syntax.evaluation.{i}.corpus", e["corpus"]) for i, e in enumerate(syntax["evaluation"])]
    shared += [("probes.train", config["probes"]["train"])]
    shared += [(f"probes.test.{i}", c) for i, c in enumerate(config["probes"]["test"])]
    for key, name in shared:
        if name in corpora and "models" in corpora[name]:
            problems.append(f"`{key}`: {name!r} is extracted for some models only "
                            f"(`corpora.{name}.models`); analyses across corpora need it for every "
                            "model: remove the restriction or name another corpus")
    for i, pair in enumerate(config["headtypes"]["compare"]):
        for j, name in enumerate(pair):
            check(f"headtypes.compare.{i}.{j}", name, models, "a configured model")
    probes = config["probes"]
    check("probes.model", probes["model"], models, "a configured model")
    check("probes.random_model", probes["random_model"], models, "a configured model")
    check("probes.train", probes["train"], labelled, "a treebank with labelled trees")
    for i, name in enumerate(probes["test"]):
        check(f"probes.test.{i}", name, labelled, "a treebank with labelled trees")
    if probes["model"] is not None:
        for key in ("random_model", "train"):
            if probes[key] is None:
                problems.append(f"`probes.{key}`: needed when `probes.model` is set")
        if probes["random_model"] in config["models"] and \
                not config["models"][probes["random_model"]].get("random_init"):
            problems.append(f"`probes.random_model`: {probes['random_model']!r} is not a "
                            "random-encoder model; give it `random_init: true`")
    finetune = config["finetune"]
    for i, name in enumerate(finetune["models"]):
        check(f"finetune.models.{i}", name, models, "a configured model")
    check("finetune.corpus", finetune["corpus"], labelled, "a treebank with labelled trees")
    if finetune["models"] and finetune["corpus"] is None:
        problems.append("`finetune.corpus`: needed when `finetune.models` is set")
    problems += _ablation_problems(config, check)
    problems += _patterns_problems(config, check)
    return problems


def _patterns_problems(config: dict, check) -> list[str]:
    patterns, problems = config["patterns"], []
    for i, name in enumerate(patterns["corpora"]):
        check(f"patterns.corpora.{i}", name, list(config["corpora"]), "a configured corpus")
    if len(set(patterns["corpora"])) != len(patterns["corpora"]):
        problems.append("`patterns.corpora`: a corpus is named twice")
    labels = patterns["labels"]
    if labels is not None and (labels["file"] is None) != (labels["maps"] is None):
        problems.append("`patterns.labels`: give `file` and `maps` together (a label table and its "
                        "maps, `headatlas label freeze`), or neither for the packaged set")
    return problems


def _ablation_problems(config: dict, check) -> list[str]:
    ablation, models = config["ablation"], sorted(config["models"])
    problems: list[str] = []
    if ablation["model"] is None:
        return problems
    if ablation["task"] == "upos":
        check("ablation.model", ablation["model"], list(config["finetune"]["models"]),
              "a model listed in finetune.models (the UPOS tagger is fine-tuned from it)")
        check("ablation.corpus", ablation["corpus"], labelled_treebanks(config),
              "a treebank with labelled trees")
    else:
        check("ablation.model", ablation["model"], models, "a configured model")
        check("ablation.base", ablation["base"], models, "a configured model")
        if ablation["squad_path"] is None:
            problems.append("`ablation.squad_path`: task squad needs the SQuAD v1.1 JSON to score")
    check("ablation.types_corpus", ablation["types_corpus"], list(config["corpora"]),
          "a configured corpus")
    if ablation["types_csv"] is None and ablation["types_corpus"] is None \
            and config["surface"]["corpus"] is None:
        problems.append("`ablation.types_corpus`: head types are clustered on the surface corpus, "
                        "and `surface.corpus` is not set; name a corpus here or set `types_csv`")
    return problems


def built_models(config: dict) -> list[str]:
    """The model folders the workflow builds itself (rule build_model): ``<data>/models/<name>``."""
    from headatlas.encoders.modelbuild import BUILDS  # standard library only: light enough here

    return [f"{config['data']}/models/{name}" for name in BUILDS]


def path_problems(config: dict) -> list[str]:
    """Files and folders the config names that do not exist (relative paths: from the working
    directory). A model folder under the results folder (a fine-tuned model) or a built one
    (``<data>/models/<name>`` of :data:`headatlas.encoders.modelbuild.BUILDS`) is made by the workflow."""
    named = [(f"corpora.{c}.path", spec.get("path")) for c, spec in config["corpora"].items()]
    named += [(f"models.{m}.path", spec.get("path")) for m, spec in config["models"].items()
              if not str(spec.get("path", "")).startswith(f"{config['results']}/")
              and str(spec.get("path", "")).rstrip("/") not in built_models(config)]
    named += [(f"ablation.{k}", config["ablation"][k]) for k in ("squad_path", "types_csv")]
    return [f"`{key}`: {value} does not exist (relative paths start from the working directory, "
            f"{Path.cwd()})" for key, value in named if value and not Path(value).exists()]


# --- what runs -------------------------------------------------------------------------------

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


@dataclass
class Plan:
    """Values the rules need, derived once from a valid config.

    ``omitted`` says what the config leaves out and why, so a dry run and the
    README can name every missing table.
    """

    results: str
    segments: list[str]
    treebanks: list[str]
    documents: list[str]
    labelled_treebanks: list[str]
    surface_corpus: str | None
    syntax_heatmaps: dict[str, str]
    honest: bool
    probes_on: bool
    probe_runs: list[tuple[str, int]]
    gradient_models: list[str]
    headtype_pairs: list[tuple[str, str]]
    finetune_models: list[str]
    ablation: dict | None
    patterns_corpora: list[str] = field(default_factory=list)
    patterns_labels: dict | None = None
    importance: dict | None = None
    corpus_models: dict[str, list[str]] = field(default_factory=dict)
    coref_selection: dict[str, str] = field(default_factory=dict)
    omitted: list[Omission] = field(default_factory=list)
    # model -> the views its map analyses emit (attention, norm), and the models with norm.
    weightings: dict[str, list[str]] = field(default_factory=dict)
    # models whose attention stores stay on disk; the others' are temp() (extraction.keep_stores).
    kept_stores: list[str] = field(default_factory=list)
    # model -> the analyses whose outputs are asked for it (`models.<m>.analyses`); None = all.
    analyses: dict[str, list[str] | None] = field(default_factory=dict)
    # model -> the loss of its gradient importance (auto resolved from the checkpoint's tensors;
    # auto where they could not be read): headatlas.encoders.capabilities.gradient_losses.
    gradient_losses: dict[str, str] = field(default_factory=dict)

    @property
    def task_chain(self) -> set[tuple[str, str]]:
        """(model, corpus) of the stores the ablation and importance read head types and
        patterns from: with the fine-tuning before them, the run's longest path."""
        chain = set()
        if self.ablation and self.ablation["types_corpus"]:
            chain.add((self.ablation["types_model"], self.ablation["types_corpus"]))
        if self.importance and self.importance["patterns_corpus"]:
            chain.add((self.importance["task_model"], self.importance["patterns_corpus"]))
        return chain

    def asks(self, model: str, analysis: str) -> bool:
        """Whether ``analysis``'s final outputs are asked for ``model``. Analyses outside
        :func:`model_analyses` (the scorecard, the cross-model figures) are asked always."""
        chosen = self.analyses.get(model)
        return chosen is None or analysis not in model_analyses() or analysis in chosen

    @property
    def temp_stores(self) -> list[str]:
        """Models whose stores are deleted once every job that reads them has run."""
        return [m for m in self.weightings if m not in self.kept_stores]

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


PROBES = ("right_branching", "distances_glove", "random_attn_glove", "uniform_attn_glove", "attn_only",
          "attn_glove")  # headatlas.analyses.probes.PROBES (not imported here: it loads torch)


@lru_cache(maxsize=None)
def model_analyses() -> tuple[str, ...]:
    """What `models.<m>.analyses` may name: the enum of the schema, the one list. These are the
    analyses of the rules files run for every model (probes, finetune, ablation and importance
    name their models in their own config blocks); an analysis it does not name (the scorecard,
    the cross-model figures, one just added) is asked for every model."""
    schema = yaml.load(schema_path().read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    model = schema["properties"]["models"]["additionalProperties"]["properties"]
    return tuple(model["analyses"]["items"]["enum"])


def __getattr__(name: str):
    if name == "MODEL_ANALYSES":  # read from the schema when first asked for, not at import
        return model_analyses()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plan(config: dict) -> Plan:
    """What the workflow runs for this (validated) config, and what it leaves out and why."""
    omitted: list[Omission] = []

    def leave_out(rules: tuple[str, ...], what: str, why: str) -> None:
        omitted.append(Omission(rules, what, why))

    models, surface = config["models"], config["surface"]["corpus"]
    if surface is None:
        leave_out(("surface_", "clustering_", "gradients_", "headtypes_", "norm_shares", "rollout"),
                  "surface patterns, clustering, gradients, head types, norm shares, rollout",
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
    runs = [("right_branching", 0)] + [(p, s) for p in PROBES[1:] for s in probes["seeds"]]
    gradient_models = [m for m in models if not models[m].get("random_init")] if surface else []
    losses, loss_trims = gradient_losses(config)
    for trim in loss_trims:
        leave_out((), trim.what, trim.why)
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
    ablation = _ablation_plan(config)
    if ablation is None:
        leave_out(("ablation",), "head-type ablation (Guan §5)", "`ablation.model` is not set")
    patterns = config["patterns"]
    if not patterns["corpora"]:
        leave_out(("patterns_",), "Kovaleva et al.'s attention patterns", "`patterns.corpora` is empty")
    labels = _labels_plan(config) if patterns["corpora"] else None
    if patterns["corpora"] and labels is None:
        leave_out(("patterns_evaluate",), "the pattern classifier's precision and recall on "
                  "hand-labelled maps", "`patterns.labels` is null")
    corpus_models = {c: list(spec.get("models") or models) for c, spec in config["corpora"].items()}
    importance = _importance_plan(config, ablation, corpus_models)
    if importance is None:
        why = "`importance.enabled` is false" if ablation is not None else "`ablation.model` is not set"
        leave_out(("importance",), "which heads matter (single-head disabling, head importance, "
                  "pruning)", why)
    slugs = {r.replace(":", "_"): r for r in syntax["key_relations"]}
    return Plan(config["results"], corpora_of(config, "segments"), corpora_of(config, "treebank"),
                documents, labelled, surface, slugs, honest, probes_on, runs, gradient_models, pairs,
                list(config["finetune"]["models"]), ablation, list(patterns["corpora"]), labels,
                importance, corpus_models, coref_selection(config, corpus_models), omitted,
                weightings,
                [m for m in models if config["extraction"]["keep_stores"] == "all"
                 or m in config["extraction"]["keep_stores"]], analyses, gradient_losses=losses)



def packaged_pattern_labels() -> tuple[Path, Path]:
    """The hand-labelled maps shipped with the library: label table and maps (MiniLM, Wikipedia)."""
    data = Path(__file__).resolve().parents[1] / "data"
    return data / "pattern_labels.csv", data / "pattern_maps.npz"


def _labels_plan(config: dict) -> dict | None:
    """The labelled maps' label table and maps file, or None when the evaluation is off."""
    labels = config["patterns"]["labels"]
    if labels is None:
        return None
    if labels["file"] is None:
        return dict(zip(("file", "maps"), map(str, packaged_pattern_labels())))
    return {"file": labels["file"], "maps": labels["maps"]}


def _importance_plan(config: dict, ablation: dict | None,
                     corpus_models: dict[str, list[str]]) -> dict | None:
    """Which heads matter: the ablation's task model, and the pattern and head-type tables beside it.

    The task model's patterns come from the surface corpus (the segments the classifier was
    labelled and checked on) when its maps are classified, else from the task's corpus (UPOS);
    its head types from its own clustering on the surface corpus (None when the task model is
    not a configured model, or no such table is planned).
    """
    if ablation is None or not config["importance"]["enabled"]:
        return None
    results, task_model = config["results"], ablation["task_model"]
    configured = task_model in config["models"]
    surface = config["surface"]["corpus"]
    corpora = [c for c in config["patterns"]["corpora"] if task_model in corpus_models.get(c, [task_model])]
    upos = config["ablation"]["task"] == "upos"
    patterns_corpus = surface if surface in corpora else \
        ablation["corpus"] if upos and ablation["corpus"] in corpora else None
    return {
        "task_model": task_model,
        "metric": "accuracy" if upos else "f1",
        "patterns": f"{results}/{task_model}/{patterns_corpus}/patterns/heads.csv"
        if configured and patterns_corpus else None,
        "patterns_corpus": patterns_corpus if configured else None,
        "types": f"{results}/{task_model}/{surface}/headtypes/features.csv"
        if configured and surface else None,
    }


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


def _ablation_plan(config: dict) -> dict | None:
    """The ablation's task model, head-type source and data, or None when it is off."""
    a, results = config["ablation"], config["results"]
    if a["model"] is None:
        return None
    upos = a["task"] == "upos"
    task_model = f"{a['model']}_upos" if upos else a["model"]
    base = a["model"] if upos else a["base"]
    own = task_model in config["models"] and (a["types_from"] == "task" or not base)
    types_model = task_model if own else base
    types_corpus = a["types_corpus"] or config["surface"]["corpus"]
    model_path = f"{results}/finetune/{a['model']}/upos/model" if upos else \
        config["models"][a["model"]].get("path", "")
    corpus = a["corpus"] or config["finetune"]["corpus"]
    return {
        "task_model": task_model,
        "spec": {"path": model_path} if upos else config["models"][a["model"]],
        "model_inputs": [f"{model_path}/config.json"] if model_path.startswith(f"{results}/")
        else [model_path] if model_path.rstrip("/") in built_models(config) else [],
        "types": a["types_csv"] or f"{results}/{types_model}/{types_corpus}/headtypes/features.csv",
        "types_source": f"the table {a['types_csv']}" if a["types_csv"]
        else f"{types_model} on {types_corpus}",
        "types_own": None if a["types_csv"] else types_model == task_model,
        "types_model": None if a["types_csv"] else types_model,
        "types_corpus": None if a["types_csv"] else types_corpus,
        "base": base,
        "corpus": corpus,
        "data": f"{config['data']}/corpora/{corpus}.jsonl" if upos else a["squad_path"],
        "max_length": a["max_length"] or config["finetune"]["max_length"],
    }
