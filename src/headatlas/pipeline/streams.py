"""Streaming jobs: the rules that stream one (model, corpus)'s attention through an analysis.

A **streaming rule** has an input named ``stores`` and params naming its ``module`` and
``analysis`` (its ``options``, ``weighting`` and ``max_examples`` too, when it has them): the
template ``store_analysis`` and the rules that use it, and the few rules with their own script
(syntax_scores, coref_mentions, probes_features). Its job's result is :func:`job_result`:

* in ``store`` mode its ``stores`` are the attention stores, and the job streams them
  (:func:`~headatlas.analyses.base.run_analysis`);
* in ``fused`` mode they are the states files of a fused extraction, which ran the job's
  analysis inside the forward pass as the run :func:`job_key`; the job merges its states
  (:func:`~headatlas.analyses.fused.result_from_states`).

Which runs a fused extraction must make is found from the rules themselves
(:func:`planned_runs`): every job of a streaming rule that the run's targets need, by walking
from the targets to their inputs through the rules that produce them, as Snakemake does. So a
new streaming analysis joins fused mode by being a streaming rule, and nothing lists it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from headatlas.store.maps import Maps
from headatlas.store.states import is_states

if TYPE_CHECKING:
    from headatlas.analyses.result import Result

# A streaming rule's params that are not options of its analysis.
RUN_PARAMS = ("module", "analysis", "options", "weighting", "max_examples")
# Inputs of a streaming rule that are not data for its analysis.
NOT_DATA = ("stores", "code")


def job_key(rule: str, wildcards: Mapping[str, str]) -> str:
    """The run's name in a states file: the rule and its wildcards but model and corpus (which
    name the file), e.g. ``surface_table:analysis=entropy,weighting=-norm``."""
    rest = ",".join(f"{k}={v}" for k, v in sorted(wildcards.items()) if k not in ("model", "corpus"))
    return f"{rule}:{rest}" if rest else rule


def job_files(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A streaming job's data inputs by name: every named input but the stores and the code."""
    return {k: v for k, v in inputs.items() if k not in NOT_DATA}


def job_result(smk, **extra) -> "Result":
    """The result of a streaming rule's job (``smk``: the script's ``snakemake`` object),
    whichever mode extracted its stores; ``extra``: options only the script knows (an output
    path the analysis writes itself)."""
    from headatlas.analyses.base import analysis_class, run_analysis

    p = smk.params
    importlib.import_module(f"headatlas.analyses.{p.module}")  # registers the analysis
    cls = analysis_class(p.analysis)
    options = {**cls.load_inputs(job_files(dict(smk.input.items()))), **dict(p.get("options", {})), **extra}
    weighting = p.get("weighting", "attention")
    stores = list(smk.input.stores)
    if stores and is_states(stores[0]):
        from headatlas.analyses.fused import result_from_states  # imports the extraction (torch)

        return result_from_states(stores, job_key(smk.rule, dict(smk.wildcards.items())), cls,
                                  weighting, **options)
    return run_analysis(cls, stores, weighting=weighting, max_examples=p.get("max_examples"), **options)


# --- the runs a fused extraction makes ------------------------------------------------------


def is_streaming(rule) -> bool:
    """Whether a Snakemake rule streams a store through an analysis (see the module docstring)."""
    return "stores" in rule.input._names and "analysis" in rule.params._names


def producers(rules: Iterable, path: str) -> list:
    return [r for r in rules if r.name != "all" and r.is_producer(path)]


def streaming_jobs(rules: Iterable, targets: Iterable[str],
                   stop: Iterable[str] = ()) -> list[tuple[Any, dict, Mapping]]:
    """Every job of a streaming rule that ``targets`` need: (rule, wildcards, its inputs),
    found by walking from each target to the inputs of the rule that produces it (not through
    the rules named in ``stop``: the extraction's)."""
    from snakemake.iocontainers import Wildcards

    rules = [r for r in rules if r.name not in set(stop)]
    todo, seen_paths, seen_jobs, found = list(targets), set(), set(), []
    while todo:
        path = str(todo.pop())
        if path in seen_paths:
            continue
        seen_paths.add(path)
        for rule in producers(rules, path):
            wildcards = dict(rule.get_wildcards(path))
            job = (rule.name, tuple(sorted(wildcards.items())))
            if job in seen_jobs:
                continue
            seen_jobs.add(job)
            inputs = rule.expand_input(Wildcards(fromdict=wildcards))[0]
            if is_streaming(rule):
                found.append((rule, wildcards, inputs))
            else:
                todo.extend(str(f) for f in inputs)
    return found


def run_spec(rule, wildcards: dict, inputs: Mapping) -> dict:
    """What a fused extraction needs to make a streaming job's run: its key, module, analysis,
    options, weighting, the first how many examples it sees, and its data input files."""
    from snakemake.iocontainers import Wildcards

    wc = Wildcards(fromdict=wildcards)
    params = {name: rule.params[i] for name, (i, _) in rule.params._names.items()}
    value = {k: (v(wc) if callable(v) else v) for k, v in params.items() if k in RUN_PARAMS}
    files = job_files({name: inputs[i] if end is None else inputs[i:end]
                       for name, (i, end) in inputs._names.items()})
    return {"key": job_key(rule.name, wildcards), "module": value["module"],
            "analysis": value["analysis"], "options": dict(value.get("options") or {}),
            "weighting": value.get("weighting") or "attention",
            "max_examples": value.get("max_examples"),
            "files": {k: (str(v) if isinstance(v, str) else [str(f) for f in v]) for k, v in files.items()}}


def planned_runs(rules: Iterable, targets: Iterable[str],
                 stop: Iterable[str] = ()) -> dict[tuple[str, str], list[dict]]:
    """(model, corpus) -> the :func:`run_spec` of every streaming job ``targets`` need, by key."""
    runs: dict[tuple[str, str], dict[str, dict]] = {}
    for rule, wildcards, inputs in streaming_jobs(rules, targets, stop):
        spec = run_spec(rule, wildcards, inputs)
        runs.setdefault((wildcards["model"], wildcards["corpus"]), {})[spec["key"]] = spec
    return {where: [found[k] for k in sorted(found)] for where, found in runs.items()}


# --- the maps a figure draws ------------------------------------------------------------------


def figure_maps(smk) -> Maps:
    """The maps a figure's job may draw (its inputs from the rules' ``maps``): the stores, or
    in fused mode the exemplar store, with the examples it lacks extracted again from the
    job's model and corpus (``params.spec``, ``params.max_length``)."""
    stores = list(smk.input.stores)
    if not (stores and is_states(stores[0])):
        return Maps(stores)

    def extract_missing(indices, weighting):
        from headatlas.analyses.fused import extract_examples
        from headatlas.corpora.records import read_jsonl
        from headatlas.encoders.models import load_model

        loaded = load_model(smk.wildcards.model, smk.params.spec)
        sentences = list(read_jsonl(smk.input.corpus))
        return extract_examples(loaded, sentences, indices, weighting, smk.params.max_length)

    return Maps(smk.input.exemplars, records=stores, extract_missing=extract_missing)
