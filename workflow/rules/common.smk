# Helpers shared by the rules: paths, config lookups, the list of final outputs.
import os
import re
from pathlib import Path

RESULTS = config.get("results", "results")
CORPORA = config["corpora"]
MODELS = config["models"]
EXTRACTION = config.get("extraction", {})
N_SHARDS = int(EXTRACTION.get("shards", 1))
SEGMENT_CORPORA = [c for c, spec in CORPORA.items() if spec["kind"] == "segments"]
TREEBANK_CORPORA = [c for c, spec in CORPORA.items() if spec["kind"] == "treebank"]
DOCUMENT_CORPORA = [c for c, spec in CORPORA.items() if spec["kind"] == "documents"]
# Treebanks with dependency trees (CoNLL-2012 has constituency parses only: coreference only).
DEPENDENCY_CORPORA = [c for c in TREEBANK_CORPORA if CORPORA[c].get("format") != "conll2012"]
SURFACE_CORPUS = config.get("surface", {}).get("corpus", "wikipedia")
ENV = "../../envs/headatlas.yaml"


wildcard_constraints:
    model="|".join(map(re.escape, MODELS)) if MODELS else "[^/]+",
    corpus="[^/.]+",
    shard=r"\d+",


def one_of(names):
    """A wildcard constraint matching exactly these names (nothing if empty)."""
    return "|".join(map(re.escape, names)) if names else "(?!x)x"


def lib(module):
    """A library file as an input, so editing an analysis reruns just its rules."""
    return workflow.source_path(f"../../src/headatlas/{module}")


def model_inputs(wildcards):
    """A model made by the workflow itself (a `path:` under results/) is an input of its jobs."""
    path = MODELS[wildcards.model].get("path", "")
    return [f"{path}/config.json"] if path.startswith(f"{RESULTS}/") else []


def corpus_file(wildcards):
    """The prepared corpus an extraction reads; segments/documents are per model (tokenizer)."""
    if CORPORA[wildcards.corpus]["kind"] in ("segments", "documents"):
        return f"data/corpora/{wildcards.corpus}/{wildcards.model}.jsonl"
    return f"data/corpora/{wildcards.corpus}.jsonl"


def store_shards(model, corpus):
    return [f"{RESULTS}/{model}/{corpus}/attention/shard-{i}.h5" for i in range(N_SHARDS)]


def stores(wildcards):
    return store_shards(wildcards.model, wildcards.corpus)


SURFACE_TABLES = ["relative_position", "special_tokens", "entropy"]


def surface_table_files(wildcards):
    base = f"{RESULTS}/{wildcards.model}/{wildcards.corpus}/surface"
    return {name: f"{base}/{name}.csv" for name in SURFACE_TABLES}


def surface_outputs(model, corpus):
    base = f"{RESULTS}/{model}/{corpus}/surface"
    return (
        [f"{base}/{name}.{ext}" for name in SURFACE_TABLES for ext in ("csv", "svg")]
        + [f"{base}/attention_lines.svg", f"{base}/example_heads.csv", f"{base}/paper_claims.csv"]
        + [f"{RESULTS}/{model}/{corpus}/corpus_summary.csv"]
    )


# Each rules file appends a function ``model -> [final outputs]`` here; rule all asks for them.
FINAL_TARGETS = []


def all_outputs():
    return [path for model in MODELS for targets in FINAL_TARGETS for path in targets(model)]


def corpus_targets(model):
    """Every corpus's store and summary (the summary lists what was skipped)."""
    return [f"{RESULTS}/{model}/{corpus}/corpus_summary.csv" for corpus in CORPORA]


def surface_targets(model):
    return surface_outputs(model, SURFACE_CORPUS) if SURFACE_CORPUS in CORPORA else []


FINAL_TARGETS += [corpus_targets, surface_targets]
