# Helpers shared by the rules: the checked config's plan, paths, code inputs, the final targets.
# Every value a rule needs is config[...] (defaults filled from the schema) or PLAN (derived,
# in headatlas.pipeline.config, unit-tested); rules compute nothing themselves.
import functools
import hashlib
import itertools
import re

from snakemake.logging import logger

from headatlas.encoders.capabilities import model_folder
from headatlas.pipeline.codedeps import code_files
from headatlas.pipeline.fingerprints import (
    DigestCache,
    folder_files,
    model_identity,
    write_fingerprint,
    write_if_changed,
)
from headatlas.pipeline.config import format_name, plan
from headatlas.corpora.prepare import source_files
from headatlas.plots.files import figure_files
from headatlas.report.scorecard import is_claims_file
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


# One small file per script (and modules it runs by name) stands for its code inputs: the sha256
# of every library file it imports, transitively. It is rewritten when the Snakefile is parsed
# and one of those files changed, with the newest file's mtime, so editing a module reruns
# exactly the rules that import it, and a job's console entry names one file, not 11-26.
CODE_DIGESTS = Path(".snakemake", "headatlas", "code")


def code(script, *modules):
    """The code input of the rules running ``script``, the digest file of the library files it
    imports, transitively, and of ``modules`` (``headatlas.x.y``, run by name at run time).
    """
    files = [
        Path(f) for f in code_files(WORKFLOW_DIR / "scripts" / script, LIBRARY, modules)
    ]
    digest = "".join(f"{file_sha256(f)}  {f.relative_to(LIBRARY)}\n" for f in files)
    target = CODE_DIGESTS / f"{'+'.join([Path(script).stem, *modules])}.sha256"
    newest = max((f.stat().st_mtime_ns for f in files), default=0)
    write_if_changed(target, digest, mtime_ns=newest)
    return str(target)


@functools.cache  # read once per parse: scripts share most of their library files
def file_sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Content fingerprints of what comes from outside the workflow (headatlas.pipeline.fingerprints): a corpus
# file or model edited and given an old mtime (cp -p, rsync -a) still reruns what it feeds.
FINGERPRINTS = Path(".snakemake", "headatlas", "fingerprints")
DIGESTS = DigestCache(FINGERPRINTS)


@functools.cache  # once per parse and corpus
def corpus_fingerprint(corpus):
    files = source_files(corpus, CORPORA[corpus])
    path = write_fingerprint(FINGERPRINTS, "corpora", corpus, corpus, files, DIGESTS)
    DIGESTS.save()
    return path


@functools.cache  # once per parse and model
def model_fingerprint(model):
    spec = MODELS[model]
    folder = model_folder(spec)
    identity = model_identity(spec, folder)
    path = write_fingerprint(
        FINGERPRINTS, "models", model, identity, folder_files(folder), DIGESTS
    )
    DIGESTS.save()
    return path


def corpus_sources(wildcards):
    """The files preparing this corpus reads, and their fingerprint: an edit (or a new file in
    its folder) re-prepares it, whatever the edited file's mtime."""
    files = source_files(wildcards.corpus, CORPORA[wildcards.corpus])
    return [str(p) for p in files] + [corpus_fingerprint(wildcards.corpus)]


def loaded_from(model):
    """What ``model`` is loaded from, as an input of the jobs that load it: a model made by the
    workflow itself (a `path:` under results/: fine-tuned, its config.json; or under
    <data>/models/: the folder, built by the build_model rule), else the fingerprint of its files
    (config, weights, tokenizer) and of its package version or resolved hub commit."""
    path = MODELS[model].get("path", "").rstrip("/")
    if path.startswith(f"{RESULTS}/"):
        return [f"{path}/config.json"]
    if path.startswith(f"{DATA}/models/"):
        return [path]
    return [model_fingerprint(model)]


def model_inputs(wildcards):
    return loaded_from(wildcards.model)


def task_model_inputs(wildcards):
    """The ablation's task model: the fine-tuned tagger's config.json, or what the configured
    (SQuAD) model is loaded from."""
    task = PLAN.ablation["task_model"]
    if PLAN.ablation["model_inputs"] or task not in MODELS:
        return PLAN.ablation["model_inputs"]
    return loaded_from(task)


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
SURFACE_TABLE = f"{SURFACE_DIR}/{{analysis}}.csv"


def surface_tables(wildcards):
    folder = {k: getattr(wildcards, k) for k in ("model", "corpus", "weighting")}
    return {
        name: SURFACE_TABLE.format(analysis=name, **folder) for name in SURFACE_TABLES
    }


# Probes read word-level attention caches; 'random_attn_glove' reads the random twin's.
PROBES_FEATURES = f"{RESULTS}/{{model}}/{{corpus}}/probes/features.h5"


def probe_attention(wildcards):
    """The model whose attention a probe reads."""
    if wildcards.probe == "random_attn_glove":
        return config["probes"]["random_model"]
    return wildcards.model


def probe_features(model, corpora):
    return [PROBES_FEATURES.format(model=model, corpus=c) for c in corpora]


def probes_entropy(model):
    """The surface entropy table of `model`, when there is a surface corpus: Table 3 puts it
    beside the rows reading its attention (a random twin with uniform maps says nothing).
    """
    return optional(
        PLAN.surface_corpus
        and SURFACE_TABLE.format(
            model=model, corpus=PLAN.surface_corpus, weighting="", analysis="entropy"
        )
    )


def optional(path):
    """An input that may be absent: a list of one path or none, which the script reads as
    ``input.<name>[0]`` when given (a lone path would reach it as a str)."""
    return [path] if path else []


def patterns_corpora(model):
    """The corpora of `patterns.corpora` that are extracted for ``model``."""
    return [c for c in PLAN.patterns_corpora if PLAN.runs_on(model, c)]


# The fine-tuned task model's chain (finetune -> its stores, head types, patterns -> ablation,
# importance) is the run's longest path: its jobs start first whenever a core is free, so the
# other jobs fill the cores beside it rather than leaving it to run alone at the end.
CHAIN_PRIORITY = 10


def chain_priority(wildcards):
    """CHAIN_PRIORITY for a job on a store of that chain (PLAN.task_chain), else 0."""
    job = (getattr(wildcards, "model", None), getattr(wildcards, "corpus", None))
    return CHAIN_PRIORITY if job in PLAN.task_chain else 0


# Results are declared once, where their rules write them: ``result(analysis, path, ...)`` in
# an `output:` makes the path a report entry (unless ``in_report=False``) and a final output of
# the analysis (unless ``final=False``). ``targets(analysis, ...)``, once per rules file, gives the
# analysis's report category and the values of its paths' wildcards for a model; {model} is the
# model and {weighting} each of its suffixes (PLAN.suffixes). Downstream rules read
# ``rules.<rule>.output.<name>``. FINAL_TARGETS: analysis -> (model -> [final outputs]).
FINAL_TARGETS = {}
ANALYSES = {}  # analysis -> its declaration: report category, wildcard values, results
# The caption of a result that brings none of its own: which rule, model and corpus wrote it.
DEFAULT_CAPTION = "../report/result.rst"
# (CSV path pattern, its report entry) of the results declared ``as_table``: rule table_page
# writes each as <path>.html, in the CSV's report category (headatlas.report.htmltable).
TABLE_PAGES = []


def targets(name, /, category=None, subcategory="{model}", where=None, **values):
    """Declare analysis ``name``. ``values``: wildcard -> list, or function of the model giving
    one (an empty list: nothing for that model); ``where(wildcards)`` (a dict of a path's
    wildcards) may drop a combination. Its final outputs for a model are its final results' paths, each expanded over
    the wildcards it names."""
    ANALYSES[name] = {
        "report": {"category": category or name, "subcategory": subcategory},
        "values": values,
        "where": where,
        "results": [],
    }
    FINAL_TARGETS[name] = lambda model: final_outputs(name, model)


def result(
    analysis,
    path,
    caption=DEFAULT_CAPTION,
    labels=None,
    category=None,
    subcategory=None,
    final=True,
    in_report=True,
    as_table=False,
):
    """``path`` as a rule's output: registered as a final output of ``analysis`` (``final``:
    True, False, or a function of the model) and returned as a report entry with ``caption``
    and ``labels`` (default: the path's wildcards and file name), in the analysis's category
    unless ``category``/``subcategory`` are given; or as the plain path (``in_report=False``).
    ``as_table``: a CSV also shown as a table in the report, ``<path>.html`` (rule table_page).
    """
    declared = ANALYSES[analysis]
    if final:
        declared["results"].append((path, final))
    if labels is None:
        labels = {
            **{w: f"{{{w}}}" for w in wildcard_names(path)},
            "result": Path(path).name,
        }
    entry = {
        "caption": caption,
        "labels": labels,
        "category": category or declared["report"]["category"],
        "subcategory": subcategory or declared["report"]["subcategory"],
    }
    if as_table:
        TABLE_PAGES.append((path, entry))
        if final:
            declared["results"].append((f"{path}.html", final))
    return report(path, **entry) if in_report else path


def wildcard_names(path):
    return list(dict.fromkeys(re.findall(r"{(\w+)(?:,[^}]*)?}", path)))


def figure(analysis, path, **entry):
    """A figure as a rule's named output: the list of its files (headatlas.plots.files), ``path``
    first as ``result``'s report entry (``entry``: its arguments), then the figure in each format
    of `plots.formats` with and without its caption, each a final output as ``path`` is. The
    script hands the list to the plot function, whose atomic_savefig writes every file.
    """
    primary, *copies = figure_files(path, config["plots"]["formats"])
    final = entry.get("final", True)
    return [result(analysis, primary, **entry)] + [
        result(analysis, copy, final=final, in_report=False) for copy in copies
    ]


def final_outputs(analysis, model):
    """The final outputs of ``analysis`` for ``model``: its results expanded over the values of
    their wildcards, {weighting} outermost, then in the order `targets` gives them."""
    declared = ANALYSES[analysis]
    values = {"model": [model], "weighting": PLAN.suffixes(model)}
    for key, given in declared["values"].items():
        values[key] = given(model) if callable(given) else given
    where = declared["where"] or (lambda wildcards: True)
    paths = []
    for path, final in declared["results"]:
        if callable(final) and not final(model):
            continue
        names = [key for key in values if key in wildcard_names(path)]
        for combination in itertools.product(*(values[key] for key in names)):
            wildcards = dict(zip(names, combination))
            if where(wildcards):
                paths.append(path.format(**wildcards))
    return paths


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
