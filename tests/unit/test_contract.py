"""The analysis contract (scikit-learn's ``parametrize_with_checks`` idea).

Every module of :mod:`headatlas.analyses` is imported, and every registered
:class:`~headatlas.analyses.base.Analysis` runs through ``run_analysis`` on one
tiny store extracted by the tiny random BERT. Each must return a
:class:`~headatlas.analyses.result.Result` with provenance and caption, under both weightings of
the maps (the attention weights, and Kobayashi's norm weighting; analyses that read the norms
themselves run once); take explicit options only, refusing an unknown one; and merge states:
the state of the store's first shard merged with that of its second equals one pass over both.
An analysis that needs an input the fixture does not provide fails here until the fixture
learns it (see ``inputs``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pandas as pd
import pytest

import headatlas.analyses
from headatlas.analyses.base import (BASE_STATE, PROVENANCE_KEYS, REGISTRY, Analysis, OptionError, finish,
                                     run_analysis)
from headatlas.analyses.result import Result
from headatlas.corpora.records import Mention, Sentence, write_jsonl
from headatlas.store.reader import open_stores
from headatlas.store.schema import SCHEMA_VERSION

MODULES = [importlib.import_module(f"headatlas.analyses.{m.name}")
           for m in pkgutil.iter_modules(headatlas.analyses.__path__)]
# Every analysis the modules define, registered or not (the first check asks that they are).
CLASSES = sorted({obj for module in MODULES for obj in vars(module).values()
                  if inspect.isclass(obj) and issubclass(obj, Analysis) and obj is not Analysis
                  and not inspect.isabstract(obj)}, key=lambda cls: cls.name)
# One corpus serves every analysis: trees (syntax, probes), splits, XPOS and mentions (coref).
WORDS = [["the", "cat", "sat", "on", "the", "mat", "."],
         ["she", "saw", "the", "big", "dog", "."],
         ["he", "was", "happy", "and", "it", "ran", "."]]
HEADS = [[2, 3, 0, 6, 6, 3, 3], [2, 0, 5, 5, 2, 2], [3, 3, 0, 6, 6, 3, 3]]
RELS = [["det", "nsubj", "root", "case", "det", "obl", "punct"],
        ["nsubj", "root", "det", "amod", "obj", "punct"],
        ["nsubj", "cop", "root", "cc", "nsubj", "conj", "punct"]]
XPOS = [["DT", "NN", "VBD", "IN", "DT", "NN", "."], ["PRP", "VBD", "DT", "JJ", "NN", "."],
        ["PRP", "VBD", "JJ", "CC", "PRP", "VBD", "."]]
MENTIONS = [[Mention("1", [0, 1]), Mention("2", [4, 5]), Mention("1", [1])],
            [Mention("3", [0]), Mention("4", [2, 3, 4]), Mention("4", [4])],
            [Mention("5", [0]), Mention("6", [4]), Mention("5", [0])]]
RECORDS = [Sentence(id=f"d{i}", doc=f"d{i}", split=split, words=w, heads=h, rels=r, xpos=x,
                    feats=["_"] * len(w), upos=["X"] * len(w), mentions=m)
           for i, (split, w, h, r, x, m) in enumerate(zip(["train", "dev", "test"], WORDS, HEADS, RELS,
                                                          XPOS, MENTIONS))]


@pytest.fixture(scope="module")
def tiny_store(tiny_model, tmp_path_factory):
    from headatlas.encoders.extract import extract

    folder = tmp_path_factory.mktemp("contract")
    write_jsonl(folder / "corpus.jsonl", RECORDS)
    attrs = {"corpus": "contract", "corpus_sha256": "0" * 64}
    extract(tiny_model, RECORDS, folder / "shard-0.h5", max_length=32, progress=False, store_attrs=attrs)
    for shard in range(2):  # the same records in two shards, for the merge check
        extract(tiny_model, RECORDS, folder / f"half-{shard}.h5", max_length=32, progress=False,
                shard=shard, n_shards=2, store_attrs=attrs)
    return folder


def inputs(folder) -> dict:
    """Each required parameter an analysis may have, by name."""
    from headatlas.analyses.coref import CorefDocument, document_mentions

    documents = {i: CorefDocument(r.id, r.split, r.words, document_mentions(r))
                 for i, r in enumerate(RECORDS)}
    return {"corpus": folder / "corpus.jsonl", "documents": documents, "path": folder / "cache.h5"}


def required(cls: type[Analysis]) -> list[str]:
    """The constructor's parameters without a default, after ``n_layers`` and ``n_heads``."""
    params = list(inspect.signature(cls.__init__).parameters.values())[3:]
    return [p.name for p in params if p.default is p.empty]


def test_every_analysis_is_registered_once_by_its_name():
    assert CLASSES, "no analysis found"
    for cls in CLASSES:
        assert REGISTRY.get(cls.name) is cls, f"{cls.__name__} is not registered as {cls.name!r}"
    assert len({cls.name for cls in CLASSES}) == len(CLASSES)


def test_importing_an_analysis_module_imports_no_other():
    import subprocess
    import sys

    code = ("import sys, headatlas.analyses.surface; "
            "print(sorted(m for m in sys.modules if m.startswith('headatlas.analyses.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the contract (base, batch, result) and the analysis, no other analysis
    assert out.stdout.strip() == ("['headatlas.analyses.base', 'headatlas.analyses.batch', "
                                  "'headatlas.analyses.result', 'headatlas.analyses.surface']")


RUNS = [(cls, weighting) for cls in CLASSES
        for weighting in (("attention",) if cls.needs_norms else ("attention", "norm"))]


@pytest.mark.parametrize("cls, weighting", RUNS, ids=lambda x: getattr(x, "name", x))
def test_analysis_contract(cls, weighting, tiny_store):
    pool = inputs(tiny_store)
    missing = [name for name in required(cls) if name not in pool]
    assert not missing, f"{cls.name} needs {missing}: teach inputs() in this test to provide them"
    if weighting == "norm":
        pool["path"] = tiny_store / "cache-norm.h5"
    result = run_analysis(cls.name, [tiny_store / "shard-0.h5"], progress=False, weighting=weighting,
                          **{name: pool[name] for name in required(cls)})

    assert isinstance(result, Result)
    provenance = result.attrs["provenance"]
    assert provenance["analysis"] == cls.name and provenance["n_examples"] == len(RECORDS)
    assert set(PROVENANCE_KEYS) <= set(provenance)
    assert (provenance["model_name"], provenance["corpus"], provenance["n_layers"],
            provenance["n_heads"], provenance["schema_version"]) == ("tiny", "contract", 2, 2, SCHEMA_VERSION)
    assert list(provenance["options"]) == list(cls.option_names())  # every option, defaults too
    assert provenance["weighting"] == result.attrs["weighting"] == weighting
    caption = result.caption
    assert isinstance(caption, str) and "tiny" in caption and "contract" in caption
    if not cls.needs_norms:  # the caption says which view (norm analyses cite Kobayashi anyway)
        assert ("Kobayashi" in caption) == (weighting == "norm")
    for name, table in result.tables.items():
        assert isinstance(table, pd.DataFrame), name
        if name == "heads":  # per head: 1-based layer and head columns
            assert {"layer", "head"} <= set(table.columns)

    # The result saves whole and loads back as its own class, caption and provenance included.
    path = tiny_store / f"{cls.name}-{weighting}.npz"
    result.save(path)
    loaded = type(result).load(path)
    assert type(loaded) is type(result) and loaded.caption == caption
    assert loaded.attrs["provenance"] == provenance and loaded.claims == result.claims
    for name, table in result.tables.items():
        pd.testing.assert_frame_equal(loaded.tables[name], table, check_dtype=False)
    for name, array in result.arrays.items():
        np.testing.assert_array_equal(loaded.arrays[name], array)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_options_are_explicit_and_checked(cls):
    """scikit-learn's discipline: options are the named keyword arguments of ``__init__`` (no
    **kwargs), each kept as an attribute (get_params), and an unknown option is refused with the
    close ones named."""
    names = cls.option_names()
    assert "kwargs" not in names and "params" not in names
    misspelt = (names[0][:-1] + names[0][-1] * 2) if names else "max_exampels"
    with pytest.raises(OptionError, match=f"`{misspelt}`: unknown option of {cls.name}"):
        cls.check_options({misspelt: 1})
    if names:
        with pytest.raises(OptionError, match=f"did you mean `{names[0]}`"):
            cls.check_options({misspelt: 1})


def stream(cls: type[Analysis], paths, weighting: str, options: dict) -> Analysis:
    """One instance of ``cls`` that has seen every example of ``paths``."""
    stores = open_stores(paths, weighting, cls.needs_norms)
    acc = cls(stores.n_layers, stores.n_heads, **options)
    acc.start(stores)
    for example in stores:
        acc.add(example)
    return acc


@pytest.mark.parametrize("order", ["in corpus order", "reversed"])
@pytest.mark.parametrize("cls, weighting", RUNS, ids=lambda x: getattr(x, "name", x))
def test_merging_the_states_of_two_shards_is_one_pass(cls, weighting, order, tiny_store):
    """merge(state(one shard), state(the other)) gives the result of one pass over both, in
    either order (shards, and batches of a fused extraction, arrive in any order)."""
    pool = inputs(tiny_store)
    runs = {}
    for key, paths in (("whole", ["half-0.h5", "half-1.h5"]), ("first", ["half-0.h5"]),
                       ("second", ["half-1.h5"])):
        options = {name: pool[name] for name in required(cls)}
        if "path" in options:  # a cache the analysis writes: one per instance
            options["path"] = tiny_store / f"merge-{cls.name}-{weighting}-{order[:3]}-{key}.h5"
        runs[key] = stream(cls, [tiny_store / p for p in paths], weighting, options)
    into, other = ("first", "second") if order == "in corpus order" else ("second", "first")
    state = runs[other].state()
    assert set(BASE_STATE) <= set(state)
    assert all(isinstance(v, np.ndarray) for v in state.values()), "a state is plain numpy arrays"
    merged = runs[into].merge(state)
    try:
        attrs = open_stores([tiny_store / "half-0.h5"]).attrs
        one, two = (finish(acc, acc.result(), attrs, weighting) for acc in (runs["whole"], merged))
    finally:
        for acc in runs.values():
            acc.close()
    assert merged.n_examples == len(RECORDS)
    assert one.caption == two.caption
    assert_same_result(one, two, rtol=1e-9)


def test_an_unknown_name_says_what_to_import(tiny_store):
    with pytest.raises(KeyError, match="import the module that defines it"):
        run_analysis("no_such_analysis", [tiny_store / "shard-0.h5"])


def test_captions_give_the_length_distribution(tiny_store):
    from headatlas.analyses.base import describe, length_text, store_provenance

    # 10, 12, 12, 12 wordpieces: median 12; 5th percentile 10 + 0.15 * (12 - 10) = 10.3 (linear);
    # all four within 2 of the longest.
    assert length_text([10, 12, 12, 12]) == \
        "lengths: median 12 wordpieces (5-95%: 10.3-12, min 10), 100% within 2 of the longest (12)"
    assert length_text([]) == "" and "lengths" not in describe({"model_name": "m"}, 3)
    provenance = store_provenance([tiny_store / "shard-0.h5"])
    assert provenance["lengths"].startswith("lengths: median")
    assert describe(provenance, 1).endswith(provenance["lengths"])


def assert_same_result(one, two, rtol: float, atol: float = 0.0) -> None:
    """Two results with the same tables and arrays (numbers to ``rtol``, or ``atol`` for those
    near 0) and the same claims."""
    assert list(one.tables) == list(two.tables) and list(one.arrays) == list(two.arrays)
    for name in one.tables:
        pd.testing.assert_frame_equal(two.tables[name], one.tables[name], check_exact=False, rtol=rtol,
                                      atol=atol)
    for name in one.arrays:
        if np.issubdtype(one.arrays[name].dtype, np.number):
            np.testing.assert_allclose(two.arrays[name], one.arrays[name], rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(two.arrays[name], one.arrays[name])
    assert one.claims == two.claims


def state_shapes(acc: Analysis) -> dict:
    return {name: np.shape(value) for name, value in acc.state().items()}


@pytest.mark.parametrize("cls", [c for c in CLASSES if c.bounded or c.name == "sink_rate"], ids=lambda c: c.name)
def test_a_bounded_state_does_not_grow_with_the_examples(cls, tiny_store):
    """An analysis marked ``bounded`` (a fused extraction never writes its state out on the way)
    keeps the same arrays after 3 examples and after 12 (its capped sample at 1); the segments
    the sinks analysis keeps show that the check can fail."""
    import dataclasses

    options = {name: inputs(tiny_store)[name] for name in required(cls)}
    if "sample_examples" in cls.option_names():
        options["sample_examples"] = 1
    stores = open_stores([tiny_store / "shard-0.h5"], "attention", cls.needs_norms)
    acc = cls(stores.n_layers, stores.n_heads, **options)
    acc.start(stores)
    examples = list(stores)
    for example in examples:
        acc.add(example)
    few = state_shapes(acc)
    for copy in range(1, 4):  # the same maps again under new corpus positions
        for example in examples:
            acc.add(dataclasses.replace(example, index=example.index + 100 * copy))
    acc.close()
    assert acc.n_examples == 4 * len(examples)
    assert (state_shapes(acc) == few) == cls.bounded
