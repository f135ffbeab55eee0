# Helpers shared by the rules: the checked config's plan, paths, code inputs, the final targets.
# Every value a rule needs is config[...] (defaults filled from the schema) or PLAN (derived,
# in headatlas.config, unit-tested); rules compute nothing themselves.
import re

from snakemake.logging import logger

from headatlas.codedeps import code_files
from headatlas.config import format_name, plan
from headatlas.corpora.prepare import source_files
from headatlas.scorecard import is_claims_file
from headatlas.weightings import SUFFIX_PATTERN, weighting_of_suffix

PLAN = plan(config)
RESULTS = PLAN.results
DATA = config["data"]  # prepared corpora, downloads, built models
LOGS = config["logs"]  # one log and one benchmark per job
MODELS = config["models"]
CORPORA = config["corpora"]
EXTRACTION = config["extraction"]
ENV = "../../envs/headatlas.yaml"
STORE = f"{RESULTS}/{{model}}/{{corpus}}/attention/shard-{{shard}}.h5"

for omission in PLAN.omitted:
    logger.info(str(omission))


# {weighting} is the output folders' suffix: "" (attention weights) or "-norm" (Kobayashi's norm
# weighting), e.g. results/<m>/<c>/surface/ and surface-norm/; PLAN.suffixes(model) says which run.
wildcard_constraints:
    model="|".join(map(re.escape, MODELS)),
    corpus="|".join(map(re.escape, CORPORA)),
    shard=r"\d+",
    weighting=SUFFIX_PATTERN,


def weighting(wildcards):
    """The weighting of a job's {weighting} suffix: attention or norm (a rule's params)."""
    return weighting_of_suffix(wildcards.weighting)


def labelled(**labels):
    """Report labels plus a 'weighting' column, so both views of a table sit side by side."""
    return lambda wildcards: {**labels, "weighting": weighting(wildcards)}


def one_of(names):
    """A wildcard constraint matching exactly these names (nothing if empty)."""
    return "|".join(map(re.escape, names)) if names else "(?!x)x"


def code(script):
    """The library files ``script`` imports, transitively: editing one reruns exactly its rules."""
    return code_files(WORKFLOW_DIR / "scripts" / script, LIBRARY)


def corpus_sources(wildcards):
    """The files preparing this corpus reads: an edit (or a new file in its folder) re-prepares it."""
    return [str(p) for p in source_files(wildcards.corpus, CORPORA[wildcards.corpus])]


def model_inputs(wildcards):
    """A model made by the workflow itself is an input of its jobs: a `path:` under results/
    (fine-tuned: its config.json) or under <data>/models/ (built by rule build_model: the folder)."""
    path = MODELS[wildcards.model].get("path", "").rstrip("/")
    if path.startswith(f"{RESULTS}/"):
        return [f"{path}/config.json"]
    return [path] if path.startswith(f"{DATA}/models/") else []


def corpus_file(wildcards):
    """The prepared corpus an extraction reads; segments/documents are per model (tokenizer)."""
    if CORPORA[wildcards.corpus]["kind"] in ("segments", "documents"):
        return f"{DATA}/corpora/{wildcards.corpus}/{wildcards.model}.jsonl"
    return f"{DATA}/corpora/{wildcards.corpus}.jsonl"


def store_shards(model, corpus):
    return [
        STORE.format(model=model, corpus=corpus, shard=i)
        for i in range(EXTRACTION["shards"])
    ]


def stores(wildcards):
    return store_shards(wildcards.model, wildcards.corpus)


# The surface tables (one per analysis; the schema lists them): read by later analyses too,
# under the same weighting.
SURFACE_DIR = f"{RESULTS}/{{model}}/{{corpus}}/surface{{weighting}}"
SURFACE_TABLES = list(config["surface"]["options"])


def surface_tables(wildcards):
    base = SURFACE_DIR.format(
        model=wildcards.model, corpus=wildcards.corpus, weighting=wildcards.weighting
    )
    return {name: f"{base}/{name}.csv" for name in SURFACE_TABLES}


# Probes read word-level attention caches; 'random_attn_glove' reads the random twin's.
PROBES_FEATURES = f"{RESULTS}/{{model}}/{{corpus}}/probes/features.h5"


def probe_attention(wildcards):
    """The model whose attention a probe reads."""
    if wildcards.probe == "random_attn_glove":
        return config["probes"]["random_model"]
    return wildcards.model


def probe_features(model, corpora):
    return [PROBES_FEATURES.format(model=model, corpus=c) for c in corpora]


def optional(path):
    """An input that may be absent: a list of one path or none, which the script reads as
    ``input.<name>[0]`` when given (a lone path would reach it as a str)."""
    return [path] if path else []


def patterns_corpora(model):
    """The corpora of `patterns.corpora` that are extracted for ``model``."""
    return [c for c in PLAN.patterns_corpora if PLAN.runs_on(model, c)]


# Which heads matter (importance.smk): one directory per task model, one report entry per output.
IMPORTANCE_DIR = f"{RESULTS}/{{task_model}}/importance"
IMPORTANCE_REPORT = {
    "category": "Which heads matter (Kovaleva §6, Michel et al.)",
    "subcategory": "{task_model}",
}


def importance_report(name, result, caption="importance"):
    return report(
        f"{IMPORTANCE_DIR}/{name}",
        caption=f"../report/{caption}.rst",
        labels={"model": "{task_model}", "result": result},
        **IMPORTANCE_REPORT,
    )


# The fine-tuned task model's chain (finetune -> its stores, head types, patterns -> ablation,
# importance) is the run's longest path: its jobs start first whenever a core is free, so the
# other jobs fill the cores beside it rather than leaving it to run alone at the end.
CHAIN_PRIORITY = 10


def chain_priority(wildcards):
    """CHAIN_PRIORITY for a job on a store of that chain (PLAN.task_chain), else 0."""
    job = (getattr(wildcards, "model", None), getattr(wildcards, "corpus", None))
    return CHAIN_PRIORITY if job in PLAN.task_chain else 0


# Each rules file registers ``analysis -> (model -> [final outputs])`` here; rule all asks for them.
FINAL_TARGETS = {}


def all_outputs():
    """Every final output, once (targets shared by all models, e.g. the scorecard, appear once),
    except those of a corpus restricted to other models and of analyses a model's `analyses`
    does not ask for."""
    return list(
        dict.fromkeys(
            path
            for model in MODELS
            for analysis, targets in FINAL_TARGETS.items()
            if PLAN.asks(model, analysis)
            for path in targets(model)
            if runs_here(model, path)
        )
    )


def runs_here(model, path):
    parts = Path(path).relative_to(RESULTS).parts
    return len(parts) < 3 or parts[0] != model or PLAN.runs_on(model, parts[1])


def claims_files(wildcards):
    """Every claims table (paper_claims.csv) the included analyses write, for every model; read at
    DAG time, so analyses included after the scorecard's rules join it too."""
    return [path for path in all_outputs() if is_claims_file(path)]
