"""The configuration: one schema and checked names.

``workflow/schemas/config.schema.yaml`` is the one source of truth for every key,
default and constraint. :func:`load_config` validates a config against it, fills
in the defaults, and checks the names that point at other entries (a probe
model, the honest-regime treebank, ...): every mistake is reported at once, each
naming its key, what is wrong and what is allowed. What the workflow runs for a
valid config is :func:`headatlas.pipeline.plan.plan`.

This module is imported when the Snakefile is parsed: it must stay light (no
torch, no transformers).
"""

from __future__ import annotations

import copy
import difflib
import re
from pathlib import Path

import yaml

from headatlas.encoders.capabilities import capability_problems
from headatlas.corpora.formats import FORMATS
from headatlas.errors import HeadAtlasError
from headatlas.tasks import TASKS

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
    problems = control_problems(config) + schema_problems(config, schema)
    if not problems:  # names and paths are only worth checking in a well-formed config
        problems = reference_problems(config) + path_problems(config) + capability_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


# Snakemake 9's pathvars, the catalog's way to relocate a module's files (`module x: pathvars:
# {results: ..., logs: ..., resources: ...}`), for the keys that say where files land.
PATHVARS = {"results": "results", "logs": "logs", "data": "resources"}  # config key -> pathvar


def relocate(config: dict, pathvars) -> dict:
    """Set ``results``, ``logs`` and ``data`` from Snakemake's ``pathvars`` (``<results>``,
    ``<logs>``, ``<resources>``) where the config leaves the key at its default and the pathvar
    differs from Snakemake's own default: an explicit config key wins. Returns ``config``."""
    from snakemake.pathvars import Pathvars

    snakemake_defaults, ours = Pathvars.with_defaults(), default_config()
    for key, name in PATHVARS.items():
        value = pathvars.apply(f"<{name}>")
        if config[key] == ours[key] and value != snakemake_defaults.apply(f"<{name}>"):
            config[key] = value
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


# A newline or another control character in a name or a path has no use, and would let a
# configuration shared as a file write markup (a reStructuredText directive) into a report.
CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def control_problems(config, path: tuple = ()) -> list[str]:
    """Every key and string value of ``config`` holding a control character, by key."""
    problems = []
    items = config.items() if isinstance(config, dict) else enumerate(config) \
        if isinstance(config, list) else ()
    for key, value in items:
        shown = key.encode("unicode_escape").decode() if isinstance(key, str) else key
        where = key_of((*path, shown))
        if isinstance(key, str) and CONTROL.search(key):
            problems.append(f"`{where}`: the name {key!r} holds a control character (a newline?); "
                            "names are letters, digits, '_', '-' and '.'")
        if isinstance(value, str) and CONTROL.search(value):
            problems.append(f"`{where}`: {value!r} holds a control character (a newline?); remove it")
        elif isinstance(value, (dict, list)):
            problems += control_problems(value, (*path, shown))
    return problems


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
    task = TASKS[ablation["task"]]
    if task.fine_tuned:
        check("ablation.model", ablation["model"], list(config["finetune"]["models"]),
              f"a model listed in finetune.models (the {task.label} model is fine-tuned from it)")
    else:
        check("ablation.model", ablation["model"], models, "a configured model")
        check("ablation.base", ablation["base"], models, "a configured model")
    if task.data_option == "corpus":
        check("ablation.corpus", ablation["corpus"], labelled_treebanks(config),
              "a treebank with labelled trees")
    elif ablation[task.data_option] is None:
        problems.append(f"`ablation.{task.data_option}`: task {task.name} needs the {task.label} "
                        "data to score")
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
