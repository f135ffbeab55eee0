# Helpers shared by the rules: the checked config's plan, paths, code inputs, result declarations
# and the template of a store analysis. Every value a rule needs is config[...] (defaults filled
# from the schema) or PLAN (derived in headatlas.pipeline.plan, unit-tested); rules compute
# nothing themselves.
import functools
import hashlib
import itertools
import re
from dataclasses import dataclass
from types import SimpleNamespace

from snakemake.io import strip_wildcard_constraints
from snakemake.logging import logger

from headatlas.corpora.prepare import source_files
from headatlas.encoders.capabilities import model_folder
from headatlas.pipeline.codedeps import ImportCache, code_files, file_sha256, module_file, use_cache
from headatlas.pipeline.config import format_name
from headatlas.pipeline.fingerprints import (
    DigestCache,
    folder_files,
    model_identity,
    write_fingerprint,
    write_if_changed,
)
from headatlas.pipeline.plan import own_labels, plan
from headatlas.plots.files import figure_files
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
# fused mode (`extraction.mode`): the analyses' states instead of the store, and a few maps
STATES = f"{RESULTS}/{{model}}/{{corpus}}/states/shard-{{shard}}.h5"
# every record's length, counted once for all the shards of a fused extraction
LENGTHS = f"{RESULTS}/{{model}}/{{corpus}}/states/lengths.h5"
EXEMPLARS = f"{RESULTS}/{{model}}/{{corpus}}/attention/exemplars-{{shard}}.h5"

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


def pick(section, *keys):
    """Keys of a config section as a rule's params, by their config names (``**pick(...)``)."""
    return {key: section[key] for key in keys}


def logs(name):
    """A job's log, ``<logs>/<name>.log`` (``name`` holds the rule's wildcards)."""
    return f"{LOGS}/{name}.log"


def benchmarks(name):
    """A job's time and memory, ``<logs>/benchmarks/<name>.tsv``."""
    return f"{LOGS}/benchmarks/{name}.tsv"


# One small file per script (and modules it runs by name) stands for its code inputs: the sha256
# of every library file it imports, transitively. It is rewritten when the Snakefile is parsed
# and one of those files changed, with the newest file's mtime, so editing a module reruns
# exactly the rules that import it, and a job's console entry names one file, not 11-26.
CODE_DIGESTS = Path(".snakemake", "headatlas", "code")
# each file's imports, kept between parses (saved once every rules file is read: the Snakefile)
IMPORTS = ImportCache(Path(".snakemake", "headatlas", "imports.json"), LIBRARY)
use_cache(IMPORTS)


def code(script, *modules):
    """The code input of the rules running ``script``, the digest file of the library files it
    imports, transitively, and of ``modules`` (``headatlas.x.y``, run by name at run time).
    """
    script_file = workflow.source_path(f"../scripts/{script}")  # a clone's, or the source cache's
    files = [Path(f) for f in code_files(script_file, LIBRARY, modules)]
    digest = "".join(f"{file_sha256(f)}  {f.relative_to(LIBRARY)}\n" for f in files)
    name = "+".join([Path(script).stem, *modules])
    if len(name) > 120:  # many modules (the atlas): name them by a digest of their list
        name = f"{Path(script).stem}+{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    target = CODE_DIGESTS / f"{name}.sha256"
    newest = max((f.stat().st_mtime_ns for f in files), default=0)
    write_if_changed(target, digest, mtime_ns=newest)
    return str(target)


def analysis_code(module):
    """The code input of a store analysis run by the generic script (the template store_analysis):
    headatlas.analyses.<module> and its figures, headatlas.plots.<module> (where there are).
    """
    modules = [f"headatlas.{p}.{module}" for p in ("analyses", "plots")]
    return code("analysis.py", *(m for m in modules if module_file(m, LIBRARY)))


# Content fingerprints of what comes from outside the workflow (headatlas.pipeline.fingerprints):
# a corpus file or model edited and given an old mtime (cp -p, rsync -a) still reruns what it feeds.
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
    path = write_fingerprint(FINGERPRINTS, "models", model, identity, folder_files(folder), DIGESTS)
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


def prepared(names, per_model=False):
    """The outputs of a corpus's preparation, {corpus} limited to ``names`` (the corpora of one
    kind): <data>/corpora/<corpus>.jsonl, or per model (tokenizer) <corpus>/<model>.jsonl, and
    the stats beside it."""
    stem = f"{DATA}/corpora/{{corpus,{one_of(names)}}}"
    if per_model:
        stem = f"{stem}/{{model}}"
    return {"corpus": f"{stem}.jsonl", "stats": f"{stem}.stats.json"}


def corpus_file(wildcards):
    """The prepared corpus an extraction reads; segments/documents are per model (tokenizer)."""
    if CORPORA[wildcards.corpus]["kind"] in ("segments", "documents"):
        return f"{DATA}/corpora/{wildcards.corpus}/{wildcards.model}.jsonl"
    return f"{DATA}/corpora/{wildcards.corpus}.jsonl"


def atlas_corpora(wildcards=None):
    """model -> corpus -> the prepared file the atlas's kept stores were read from (atlas.smk):
    the page shows the examples' words as written."""
    return {
        model: {c: corpus_file(SimpleNamespace(model=model, corpus=c)) for c in corpora}
        for model, corpora in ATLAS.stores().items()
    }


def shards(pattern, model, corpus):
    return [
        pattern.format(model=model, corpus=corpus, shard=i) for i in range(EXTRACTION["shards"])
    ]


def store_shards(model, corpus):
    """What the analyses of (model, corpus) stream: its store, or in fused mode the states its
    extraction wrote (headatlas.pipeline.streams.job_result reads either)."""
    return shards(STATES if PLAN.fused(model) else STORE, model, corpus)


def stores(wildcards):
    return store_shards(wildcards.model, wildcards.corpus)


def map_shards(model, corpus):
    """Where maps of (model, corpus) can be read: its store, or in fused mode its exemplars."""
    return shards(EXEMPLARS if PLAN.fused(model) else STORE, model, corpus)


def maps(wildcards):
    """The inputs of a figure that draws maps (headatlas.pipeline.streams.figure_maps): the
    stores, and in fused mode the exemplars, with the model and corpus to extract an example
    they lack."""
    fused = PLAN.fused(wildcards.model)
    return {
        "stores": stores(wildcards),
        "exemplars": (map_shards(wildcards.model, wildcards.corpus) if fused else []),
        "model": model_inputs(wildcards) if fused else [],
        "corpus": corpus_file(wildcards),
    }


# What figure_maps needs to extract an example again (fused mode).
MAPS_PARAMS = {
    "spec": lambda wildcards: MODELS[wildcards.model],
    "max_length": EXTRACTION["max_length"],
}


# The rules that extract: a walk for the streaming jobs stops there.
EXTRACTION_RULES = ("extract", "extract_temp", "fused_extract")


@functools.cache
def fused_runs():
    """(model, corpus) -> every streaming job the run's targets need, as a fused extraction
    runs it (headatlas.pipeline.streams.planned_runs); found once, when the DAG is built.
    """
    from headatlas.pipeline.streams import planned_runs  # the store reader: fused runs only

    targets = [*all_outputs(), *planned_paths()]
    return planned_runs(workflow.rules, targets, stop=EXTRACTION_RULES)


def runs_of(wildcards):
    return fused_runs().get((wildcards.model, wildcards.corpus), [])


def exemplars_wanted(wildcards):
    """The examples a fused extraction keeps beside its sample: the one Fig. 1 names."""
    example = config["surface"]["example"]
    surface = wildcards.corpus == PLAN.surface_corpus and example is not None
    return [example] if surface else []


def run_files(wildcards):
    """The data files of the runs (a treebank, coreference documents) a fused extraction joins."""
    files = [f for run in runs_of(wildcards) for f in run["files"].values()]
    flat = [f for f in files if isinstance(f, str)]
    flat += [x for f in files if not isinstance(f, str) for x in f]
    return sorted(set(flat))


def optional(path):
    """An input that may be absent: a list of one path or none, which the script reads as
    ``input.<name>[0]`` when given (a lone path would reach it as a str)."""
    return [path] if path else []


# The fine-tuned task model's chain (finetune -> its stores, head types, patterns -> ablation,
# importance) is the run's longest path: its jobs start first whenever a core is free, so the
# other jobs fill the cores beside it rather than leaving it to run alone at the end.
CHAIN_PRIORITY = 10


def chain_priority(wildcards):
    """CHAIN_PRIORITY for a job on a store of that chain (PLAN.task_chain), else 0."""
    job = (getattr(wildcards, "model", None), getattr(wildcards, "corpus", None))
    return CHAIN_PRIORITY if job in PLAN.task_chain else 0


# --- results, declared once where their rules write them --------------------------------------
# ``result(analysis, path, ...)`` in an `output:` makes the path a report entry (unless
# ``in_report=False``) and a final output of the analysis (unless ``final=False``), and says
# what it is: a table, a per-head table of the head atlas (``heads="<module>:<table>"``, the
# module's ATLAS entry), ``claims(...)`` a claims table of the scorecard, ``figure(...)`` a
# figure. ``targets(analysis, ...)``, once per rules file, gives the analysis's report category
# and the values of its paths' wildcards for a model; {model} is the model and {weighting} each
# of its suffixes (PLAN.suffixes). The atlas and the scorecard read these declarations, never
# paths; downstream rules read ``rules.<rule>.output.<name>``.
TABLE, HEADS, CLAIMS, FIGURE = "table", "heads", "claims", "figure"
ANALYSES = {}  # analysis -> its declaration: report category, wildcard values, results
FINAL_TARGETS = {}  # analysis -> (model -> [final outputs])
# (CSV path pattern, its report entry) of the results declared ``as_table``: rule table_page
# writes each as <path>.html, in the CSV's report category (headatlas.report.tablepages).
TABLE_PAGES = []
REPORT = "../report"  # captions: <name> is ../report/<name>.rst


@dataclass(frozen=True)
class Declared:
    """One declared result: its analysis, path pattern, kind, atlas entry and finality."""

    analysis: str
    pattern: str
    kind: str = TABLE
    heads: str | None = None  # "<dotted module>:<table>" of a per-head table
    final: object = True  # True, False, or a function of the model
    companions: tuple = ()  # other files of its folder the atlas entry's reader reads


def targets(name, /, category=None, subcategory="{model}", where=None, **values):
    """Declare analysis ``name``. ``values``: wildcard -> list, or function of the model giving
    one (an empty list: nothing for that model); ``where(wildcards)`` (a dict of a path's
    wildcards) may drop a combination. Its final outputs for a model are its final results'
    paths, each expanded over the wildcards it names."""
    ANALYSES[name] = {
        "report": {"category": category or name, "subcategory": subcategory},
        "values": values,
        "where": where,
        "results": [],
    }
    FINAL_TARGETS[name] = lambda model: final_outputs(name, model)


def caption_file(caption):
    """A caption given by name (``"surface_table"``) or as a path."""
    return caption if caption.endswith(".rst") else f"{REPORT}/{caption}.rst"


@functools.cache
def caption_wildcards(caption):
    """The wildcards a caption reads (``snakemake.wildcards.<name>``): an output must have them,
    or the report prints nothing in their place."""
    text = open(workflow.source_path(caption_file(caption)), encoding="utf-8").read()
    return set(re.findall(r"snakemake\.wildcards\.(\w+)", text)) - {"get"}


def check_caption(caption, path):
    """Refuse a caption that reads a wildcard the output's path does not have."""
    missing = caption_wildcards(caption) - set(wildcard_names(path))
    if missing:
        raise ValueError(
            f"the caption {caption_file(caption)} reads snakemake.wildcards."
            f"{', '.join(sorted(missing))}, which the output {path} does not have"
        )


def result(
    analysis,
    path,
    caption="result",
    labels=None,
    category=None,
    subcategory=None,
    final=True,
    in_report=True,
    as_table=False,
    heads=None,
    kind=TABLE,
    companions=(),
):
    """``path`` as a rule's output: declared a result of ``analysis`` (a table; ``heads``: a
    per-head table with that atlas entry) and returned as a report entry with ``caption`` (a
    name under workflow/report/) and ``labels`` (default: the path's wildcards and file name),
    in the analysis's category unless ``category``/``subcategory`` are given; or as the plain
    path (``in_report=False``). ``final``: True, False, or a function of the model.
    ``as_table``: a CSV also shown as a table in the report, ``<path>.html`` (rule table_page).
    ``companions``: the other files of its folder a per-head table's atlas reader reads.
    """
    declared = ANALYSES[analysis]
    kind = HEADS if heads else kind
    output, path = path, strip_wildcard_constraints(path)
    declared["results"].append(Declared(analysis, path, kind, heads, final, tuple(companions)))
    if labels is None:
        labels = {
            **{w: f"{{{w}}}" for w in wildcard_names(path)},
            "result": Path(path).name,
        }
    if in_report:
        check_caption(caption, path)
    entry = {
        "caption": caption_file(caption),
        "labels": labels,
        "category": category or declared["report"]["category"],
        "subcategory": subcategory or declared["report"]["subcategory"],
    }
    if as_table:
        TABLE_PAGES.append((path, entry))
        if final:
            declared["results"].append(Declared(analysis, f"{path}.html", TABLE, None, final))
    return report(output, **entry) if in_report else output


def claims(analysis, path, **entry):
    """A claims table (headatlas.claims.Claim rows) as a rule's output: ``result`` of kind
    claims, which the scorecard collects for every model."""
    return result(analysis, path, kind=CLAIMS, **entry)


def figure(analysis, path, **entry):
    """A figure as a rule's named output: the list of its files (headatlas.plots.files), ``path``
    first as ``result``'s report entry (``entry``: its arguments), then the figure in each format
    of `plots.formats` with and without its caption, each a final output as ``path`` is. The
    script hands the list to the plot function, whose atomic_savefig writes every file.
    """
    primary, *copies = figure_files(path, config["plots"]["formats"])
    final = entry.get("final", True)
    return [result(analysis, primary, kind=FIGURE, **entry)] + [
        result(analysis, copy, kind=FIGURE, final=final, in_report=False) for copy in copies
    ]


class Results:
    """One analysis's results, declared in its rules file: ``targets`` (report category, the
    values of its paths' wildcards) and a folder, so each output is one line:
    ``.table(file, caption, label)``, ``.heads(...)`` (a per-head table: an ATLAS entry of
    ``atlas_module``, by default headatlas.analyses.<name>),
    ``.claims(...)``,
    ``.figure(...)`` (``result``, ``claims`` and ``figure`` with the path in the folder; any of
    their other arguments as keywords), ``.path(file)`` (an output that is no result).
    ``labels(text)`` gives a result's report labels from its label text (by default the
    folder's model and corpus and ``result: text``, with the weighting beside them when the
    folder has one); ``entry`` holds arguments every result of the folder shares (e.g.
    ``final``).

    The outputs are the rules' wildcard constraints too: a wildcard declared with a list of
    values (``corpus=PLAN.documents``) matches only those in every output made here, and so
    does each wildcard of ``constrain`` (wildcard -> names, or a regular expression; for those
    declared by a function of the model). Inputs read the plain patterns: ``folder``, or ``rules.<rule>.output``.
    """

    def __init__(
        self,
        name,
        folder,
        atlas_module=None,
        labels=None,
        entry=None,
        constrain=None,
        **declaration,
    ):
        targets(name, **declaration)
        self.name, self.folder = name, folder
        self.module = atlas_module or f"headatlas.analyses.{name}"
        self.labels, self.entry = labels or self.default_labels, entry or {}
        listed = {w: v for w, v in declaration.items() if isinstance(v, (list, tuple))}
        self.constraints = {**listed, **(constrain or {})}

    def at(self, folder, labels=None, **entry):
        """The same analysis's results in another folder (declared once, by this one)."""
        other = object.__new__(Results)
        other.name, other.folder, other.module = self.name, folder, self.module
        other.labels, other.entry = labels or other.default_labels, entry
        other.constraints = self.constraints
        return other

    def path(self, file):
        """``file`` in the folder, as an output: each constrained wildcard (its first
        occurrence, the one Snakemake reads) limited to its names."""
        path = f"{self.folder}/{file}"
        for wildcard, names in self.constraints.items():
            regex = names if isinstance(names, str) else one_of(names)
            constrained = f"{{{wildcard},{regex}}}"
            path = path.replace(f"{{{wildcard}}}", constrained, 1)
        return path

    def default_labels(self, text):
        labels = {w: f"{{{w}}}" for w in ("model", "corpus") if f"{{{w}}}" in self.folder}
        labels["result"] = text
        return labelled(**labels) if "{weighting}" in self.folder else labels

    def _entry(self, caption, label, entry):
        entry = {**self.entry, **entry, "caption": caption}
        if label is not None:
            entry["labels"] = (
                label if callable(label) or isinstance(label, dict) else self.labels(label)
            )
        return entry

    def table(self, file, caption="result", label=None, **entry):
        return result(self.name, self.path(file), **self._entry(caption, label, entry))

    def heads(self, file, caption="result", label=None, table=None, **entry):
        """A per-head table: the head atlas reads it through the analysis module's
        ``ATLAS[table]`` (``table``: the file's stem unless given)."""
        spec = f"{self.module}:{table or Path(file).stem}"
        return self.table(file, caption, label, heads=spec, **entry)

    def claims(self, file, caption="result", label=None, **entry):
        return claims(self.name, self.path(file), **self._entry(caption, label, entry))

    def figure(self, file, caption="result", label=None, **entry):
        return figure(self.name, self.path(file), **self._entry(caption, label, entry))


def wildcard_names(path):
    return list(dict.fromkeys(re.findall(r"{(\w+)(?:,[^}]*)?}", path)))


def planned_results(analysis, model, finals_only=True):
    """(path, Declared, wildcards) of ``analysis``'s results for ``model``: each result expanded
    over the values of its wildcards, {weighting} outermost, then in the order `targets` gives
    them; its final ones, or (``finals_only=False``) every declared one."""
    declared = ANALYSES[analysis]
    values = {"model": [model], "weighting": PLAN.suffixes(model)}
    for key, given in declared["values"].items():
        values[key] = given(model) if callable(given) else given
    where = declared["where"] or (lambda wildcards: True)
    found = []
    for item in declared["results"]:
        final = item.final(model) if callable(item.final) else item.final
        if finals_only and not final:
            continue
        names = [key for key in values if key in wildcard_names(item.pattern)]
        for combination in itertools.product(*(values[key] for key in names)):
            wildcards = dict(zip(names, combination))
            if where(wildcards):
                found.append((item.pattern.format(**wildcards), item, wildcards))
    return found


def final_outputs(analysis, model):
    """The final outputs of ``analysis`` for ``model`` (:func:`planned_results`)."""
    return [path for path, _, _ in planned_results(analysis, model)]


def all_outputs():
    """Every final output, once (targets shared by all models, e.g. the scorecard, appear once),
    except those of a corpus restricted to other models and of analyses a model's `analyses`
    does not ask for."""
    return list(dict.fromkeys(path for path, _ in all_results()))


def all_results():
    """(path, Declared) of every final output of every analysis (atlas included), as
    :func:`all_outputs` lists them."""
    found = []
    for model in MODELS:
        for analysis, outputs in FINAL_TARGETS.items():
            if not PLAN.asks(model, analysis):
                continue
            declared = planned_results(analysis, model) if analysis in ANALYSES else []
            kinds = {path: item for path, item, _ in declared}
            found += [(path, kinds.get(path)) for path in outputs(model) if runs_here(model, path)]
    return found


def runs_here(model, path):
    parts = Path(path).relative_to(RESULTS).parts
    return len(parts) < 3 or parts[0] != model or PLAN.runs_on(model, parts[1])


def claims_files(wildcards):
    """Every claims table the included analyses declare, for every model; read when the DAG is
    built, so analyses included after the scorecard's rules join it too."""
    return list(dict.fromkeys(path for path, item in all_results() if item and item.kind == CLAIMS))


def output_of(rule, name, **wildcards):
    """The path of output ``name`` of ``rule`` for these wildcards: a result's path is written
    once, in its rule, and read from there (when the DAG is built: any rules file may define it).
    """
    return getattr(getattr(rules, rule).output, name).format(**wildcards)


def surface_tables(wildcards):
    """The three surface tables of the job's model, corpus and weighting (read by clustering,
    the attention lines and the claims)."""
    folder = {k: getattr(wildcards, k) for k in ("model", "corpus", "weighting")}
    return {
        name: output_of("surface_table", "table", analysis=name, **folder)
        for name in config["surface"]["options"]
    }


# --- coreference (coref.smk) -----------------------------------------------------------------------


def coref_selection(wildcards):
    """Windows over part of a treebank: the mentions of its truncated twin, on which the
    held-out head may be chosen (attention weights), or none."""
    twin = PLAN.coref_selection.get(wildcards.corpus)
    if twin is None:
        return []
    at = {"model": wildcards.model, "corpus": twin, "weighting": ""}
    return [rules.coref_mentions.output.mentions.format(**at)]


# --- head types (headtypes.smk) ---------------------------------------------------------------------


def grid_stability(wildcards):
    """Only the grid marks unstable heads: the other figures need not wait for stability."""
    if wildcards.figure != "grid":
        return []
    return [rules.headtypes_stability.output.heads.format(**wildcards)]


# --- dependency syntax (syntax.smk) -----------------------------------------------------------------


def heatmap_figures(relations):
    """Output <slug>: heatmap_<slug>.svg, per relation of ``relations`` (slug -> relation)."""
    return {
        slug: DEPENDENCIES.figure(f"heatmap_{slug}.svg", "syntax_heatmap", f"heat map {relation}")
        for slug, relation in relations.items()
    }


# --- table pages (tables.smk) -----------------------------------------------------------------------


def table_page_entry(page):
    """``page`` as a report entry whose caption is table_page's and whose category,
    subcategory and labels are its CSV's (filled with the job's wildcards)."""
    fields = {key: TABLES.field(key) for key in ("category", "subcategory", "labels")}
    return report(page, caption=caption_file("table_page"), **fields)


# --- the attention patterns (patterns.smk) ---------------------------------------------------------


def patterns_corpora(model):
    """The corpora of `patterns.corpora` that are extracted for ``model``."""
    return [c for c in PLAN.patterns_corpora if PLAN.runs_on(model, c)]


def pattern_tables(wildcards):
    """The per-head pattern tables of the model's corpora, and its head types on the surface
    corpus when the patterns were classified there (the cross-tabulation)."""
    corpora = patterns_corpora(wildcards.model)
    at = {"model": wildcards.model, "weighting": ""}
    return {
        "heads": [output_of("patterns_heads", "heads", corpus=c, **at) for c in corpora],
        "types": optional(
            PLAN.surface_corpus in corpora
            and output_of("headtypes_cluster", "features", corpus=PLAN.surface_corpus, **at)
        ),
    }


# --- the probes (probes.smk) -----------------------------------------------------------------------


def probe_attention(wildcards):
    """The model whose attention a probe reads ('random_attn_glove': the random twin's)."""
    if wildcards.probe == "random_attn_glove":
        return PROBES["random_model"]
    return wildcards.model


def probe_features(model, corpora):
    return [PROBES_FEATURES.format(model=model, corpus=c) for c in corpora]


def edge_features(corpora):
    """The feature caches of the model and its random twin on ``corpora`` (a function of the
    job's wildcards, whose own corpus "{corpus}" stands for): the edge classifier reads both."""

    def files(wildcards):
        names = [c.format(corpus=wildcards.corpus) for c in corpora]
        return [
            f for m in (wildcards.model, PROBES["random_model"]) for f in probe_features(m, names)
        ]

    return files


def probes_entropy(model):
    """The surface entropy table of `model`, when there is a surface corpus: Table 3 puts it
    beside the rows reading its attention (a random twin with uniform maps says nothing).
    """
    if PLAN.surface_corpus is None:
        return []
    return [
        output_of(
            "surface_table",
            "table",
            model=model,
            corpus=PLAN.surface_corpus,
            weighting="",
            analysis="entropy",
        )
    ]


# --- the ablation's task model and head types (ablation.smk) ---------------------------------------


def task_model_inputs(wildcards):
    """What the task model is loaded from: the fine-tuned tagger's config.json, or what the
    configured (SQuAD) model is loaded from."""
    task = PLAN.ablation
    if task.model_inputs or task.task_model not in MODELS:
        return list(task.model_inputs)
    return loaded_from(task.task_model)


def mixing_tagger(wildcards):
    """The fine-tuned tagger's config.json (its folder is the model)."""
    return output_of("finetune_upos", "model", model=PLAN.mixing_taggers[wildcards.task_model])


def ablation_types(wildcards):
    """The head types the ablation reads: a table given by hand, or the headtypes analysis of
    the plan's model on its corpus (the attention weights' view)."""
    task = PLAN.ablation
    return task.types_csv or output_of(
        "headtypes_cluster",
        "features",
        model=task.types_model,
        corpus=task.types_corpus,
        weighting="",
    )


def ablation_stability(wildcards):
    """The stability of the head types the ablation reads (none for a table given by hand)."""
    task = PLAN.ablation
    if task.types_csv:
        return []
    folder = dict(model=task.types_model, corpus=task.types_corpus, weighting="")
    return output_of("headtypes_stability", "table", **folder)


def ablation_plan(*attributes):
    """Params read from PLAN.ablation when a job needs them (the plan is None when off)."""
    return {
        name: (lambda wildcards, name=name: getattr(PLAN.ablation, name)) for name in attributes
    }


# --- which heads matter: the tables beside the importance (importance.smk) -------------------------


def importance_tables(wildcards=None):
    """The task model's head types, patterns and head outputs (dormant heads) set beside its
    importance (those planned): {"types": [...], "patterns": [...], "activations": [...]}, each
    a list of one table or none."""
    task = PLAN.importance
    at = {"model": task.task_model, "weighting": ""}
    dormant = task.types_corpus and task.task_model in PLAN.activation_models
    return {
        "activations": optional(
            dormant
            and output_of("activations", "heads", model=task.task_model, corpus=task.types_corpus)
        ),
        "types": optional(
            task.types_corpus
            and output_of("headtypes_cluster", "features", corpus=task.types_corpus, **at)
        ),
        "patterns": optional(
            task.patterns_corpus
            and output_of("patterns_heads", "heads", corpus=task.patterns_corpus, **at)
        ),
    }


def importance_output(name, file, label):
    """Output ``name`` of the importance rule, a figure, the claims, the per-head table of the head
    atlas, or a table."""
    if file.endswith(".svg"):
        return HEADS_MATTER.figure(file, "importance", label)
    if name == "claims":
        return HEADS_MATTER.claims(file, "importance", label)
    if name == "heads":
        return HEADS_MATTER.heads(file, "importance", label)
    return HEADS_MATTER.table(file, "importance", label)


# --- the cross-model comparisons (scorecard.smk) ---------------------------------------------------


def compared(name, caption, label, final):
    """A cross-model table (a file) and its figure (a report entry), in results/compare/."""
    return {
        "table": COMPARED.table(f"{name}.csv", final=final, in_report=False),
        "figure": COMPARED.figure(f"{name}.svg", caption, label, final=final),
    }


# --- the head atlas: its tables, found from the declarations (atlas.smk) ---------------------------


def declared_heads():
    """Every per-head table the rules declare."""
    return [
        Declaration(item.pattern, item.heads, item.analysis, item.companions)
        for declared in ANALYSES.values()
        for item in declared["results"]
        if item.kind == HEADS
    ]


@functools.cache
def planned_paths():
    """Every final output of every model's analyses but the atlas, and the tables the task
    model's importance reads (written although its `analyses` may not ask for them)."""
    paths = [
        path
        for model in MODELS
        for analysis in ANALYSES
        if analysis != "atlas" and PLAN.asks(model, analysis)
        for path in final_outputs(analysis, model)
        if runs_here(model, path)
    ]
    if PLAN.importance:
        paths += [path for paths in importance_tables().values() for path in paths]
    return list(dict.fromkeys(paths))


def unconstrained(pattern):
    """An output pattern without its wildcards' constraints ({model,a|b} -> {model})."""
    return re.sub(r"{(\w+),[^}]*}", r"{\1}", str(pattern))


@functools.cache
def planned_heads():
    """model -> the per-head tables the run writes for it: each declared one that a planned job
    writes or reads (found through the rules that write the planned outputs, with their own
    wildcards), so a table built only for a later rule (gradients' heads.csv, read by the
    figure's rule) joins the atlas as one built beside a final figure does."""
    declared = {d.pattern: d for d in declared_heads()}
    touching = {}  # a rule -> the declared tables among its outputs and (fixed) inputs
    for each in workflow.rules:
        files = [*each.output, *(f for f in each.input if isinstance(f, str))]
        found = [declared[p] for p in map(unconstrained, files) if p in declared]
        if found:
            touching[each] = found
    tables = {}
    for path in planned_paths():
        for writer, items in touching.items():
            if not writer.is_producer(path):
                continue
            values = dict(writer.get_wildcards(path))
            for item in items:
                try:
                    table = item.pattern.format(**values)
                    spec = item.spec.format(**values)
                except KeyError:  # read with fewer wildcards than it is written with
                    continue
                owner = values.get("model", values.get("task_model"))
                tables.setdefault(owner, {}).setdefault(
                    table,
                    HeadTable(table, spec, item.analysis, values, item.companions),
                )
    return {model: list(found.values()) for model, found in tables.items()}
