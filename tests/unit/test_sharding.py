"""Sharding: a corpus extracted in 3 shards against the same corpus in 1 store.

The tiny random BERT extracts one treebank (and its documents, for coreference) once into one
store and once into three (``extraction.shards: 3``). What the analyses compute from them must
agree, table by table, as the rules write them (same float format).

Every table is exact, row order and bootstrap intervals included: a store set streams its
examples in corpus order (``example_index``), merged across shards, whatever order each shard
stores them in (length-sorted, as extraction batches them). So rows (relations in order of first
appearance, the coreference mention table), bootstrap units (Table 1's and the honest regime's
sentences, Table 2's documents) and the probes' seeded training order are the same for any
number of shards.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses import clustering, coref, headtypes, probes, surface, syntax  # noqa: F401 (registers)
from headatlas.analyses.base import run_analysis
from headatlas.corpora.conllu_reader import read_conllu
from headatlas.corpora.documents import join_sentences
from headatlas.corpora.records import write_jsonl
from headatlas.encoders.extract import extract
from tests.workflow.conftest import write_treebank

SPLITS = ["test", "train", "dev"]  # by document number modulo 3
N_SHARDS = 3


def as_written(table: pd.DataFrame, float_format: str = "%.6g", index: bool = False) -> str:
    """The CSV text a rule writes (``write_table`` with the rule's float format)."""
    return table.to_csv(index=index, float_format=float_format)


def assert_same_table(one: pd.DataFrame, sharded: pd.DataFrame, float_format: str = "%.6g",
                      index: bool = False, sort_by: list[str] | None = None) -> None:
    """Same CSV text and the same numbers up to float rounding (rows sorted first if asked)."""
    if sort_by:
        one, sharded = (t.sort_values(sort_by, kind="stable").reset_index(drop=True) for t in (one, sharded))
    assert as_written(one, float_format, index) == as_written(sharded, float_format, index)
    pd.testing.assert_frame_equal(one, sharded, check_exact=False, rtol=1e-12, atol=1e-15)


def without_intervals(table: pd.DataFrame) -> pd.DataFrame:
    return table[[c for c in table.columns if not c.endswith(("_ci_low", "_ci_high", "_low", "_high"))]]


@pytest.fixture(scope="module")
def corpora(tiny_model, tmp_path_factory):
    """A treebank (sentences) and its documents, each extracted into 1 and into 3 stores."""
    folder = tmp_path_factory.mktemp("sharding")
    write_treebank(folder / "tb.conllu", n_docs=12, per_doc=3, seed=1)
    sentences = [dataclasses.replace(s, split=SPLITS[int(s.doc[3:]) % 3])
                 for s in read_conllu(folder / "tb.conllu")]
    docs = [join_sentences([s for s in sentences if s.doc == d])
            for d in dict.fromkeys(s.doc for s in sentences)]
    paths = {}
    for name, records in (("tb", sentences), ("docs", docs)):
        write_jsonl(folder / f"{name}.jsonl", records)
        for n_shards in (1, N_SHARDS):
            stores = [folder / f"{name}-{n_shards}" / f"shard-{i}.h5" for i in range(n_shards)]
            for i, path in enumerate(stores):
                path.parent.mkdir(exist_ok=True)
                extract(tiny_model, records, path, max_length=64, batch_size=4, shard=i,
                        n_shards=n_shards, progress=False, store_attrs={"corpus": name})
            paths[name, n_shards] = stores
    return folder, docs, paths


def both(analysis, corpora, store="tb", **options):
    """The analysis on the corpus in one store and in three."""
    _, _, paths = corpora
    return [run_analysis(analysis, paths[store, k], progress=False, **options) for k in (1, N_SHARDS)]


@pytest.mark.parametrize("analysis", ["relative_position", "special_tokens", "entropy"])
def test_surface_tables(corpora, analysis):
    one, sharded = both(analysis, corpora)
    assert one.provenance["n_examples"] == sharded.provenance["n_examples"] == 36
    assert_same_table(one.table, sharded.table)


@pytest.fixture(scope="module")
def syntax_scores(corpora):
    folder = corpora[0]
    return both("dependency_heads", corpora, corpus=folder / "tb.jsonl")


KEYS = ["relation", "direction", "layer", "head", "offset", "split"]


def test_syntax_tables_hold_the_same_numbers(syntax_scores):
    one, sharded = syntax_scores
    for name, table in one.tables.items():  # heads, offsets, coverage, relations, sentences, unscored
        assert_same_table(table, sharded.tables[name], sort_by=[k for k in KEYS if k in table.columns])
    for subset in (None, ["train"], ["test"]):  # Table 1 on everything and on each regime's split
        a, b = (s if subset is None else s.subset(subset) for s in (one, sharded))
        assert_same_table(*(without_intervals(syntax.table1(s, min_count=1)) for s in (a, b)))


def test_syntax_table1_intervals(syntax_scores):
    assert_same_table(*(syntax.table1(s, min_count=1) for s in syntax_scores))


def test_syntax_tables_in_the_same_row_order(syntax_scores):
    one, sharded = syntax_scores
    for name, table in one.tables.items():
        assert_same_table(table, sharded.tables[name])


def honest(scores):
    return syntax.honest_table(("tb train", scores.subset(["train"])), [("tb test", scores.subset(["test"]))],
                               min_count=1, n_boot=200, seed=0)


def test_syntax_honest_regime_chooses_and_scores_the_same(syntax_scores):
    assert_same_table(*(without_intervals(honest(s)) for s in syntax_scores))


def test_syntax_honest_regime_intervals(syntax_scores):
    assert_same_table(*(honest(s) for s in syntax_scores))


@pytest.fixture(scope="module")
def coref_tables(corpora):
    _, docs, paths = corpora
    documents = {i: coref.CorefDocument(d.id, d.split, d.words, coref.document_mentions(d))
                 for i, d in enumerate(docs)}
    results = both("coref", corpora, store="docs", documents=documents)
    accuracy = [coref.accuracy_tables(r.table, r.provenance, select_split="train", eval_split="test",
                                      n_boot=200, seed=0, max_length=64)
                for r in results]
    return results, accuracy


def test_coref_tables_hold_the_same_numbers(coref_tables):
    (one, sharded), ((table2_one, heads_one), (table2_sharded, heads_sharded)) = coref_tables
    assert len(one.table) > 20 and one.attrs["analysed_documents"] == sharded.attrs["analysed_documents"]
    assert_same_table(one.table, sharded.table, sort_by=["doc", "window", "mention"])
    assert_same_table(without_intervals(table2_one), without_intervals(table2_sharded), "%.4g", index=True)
    assert_same_table(heads_one, heads_sharded, "%.4g", index=True)


def test_coref_mentions_in_the_same_row_order(coref_tables):
    assert_same_table(*(r.table for r in coref_tables[0]))


def test_coref_table2_intervals(coref_tables):
    (table2_one, _), (table2_sharded, _) = coref_tables[1]
    assert_same_table(table2_one, table2_sharded, "%.4g", index=True)


def test_headtypes_tables(corpora):
    one, sharded = both("distance_features", corpora, n_windows=4)
    order = [np.argsort(f.example_index) for f in (one, sharded)]  # inputs in corpus order
    np.testing.assert_array_equal(one.example_index[order[0]], sharded.example_index[order[1]])
    np.testing.assert_allclose(one.features[order[0]], sharded.features[order[1]], rtol=1e-12, atol=0)
    assert_same_table(one.head_table(), sharded.head_table())
    types = [headtypes.head_types(f.head_table(), k=2, n_init=2) for f in (one, sharded)]
    assert_same_table(*types)
    assert_same_table(*(headtypes.type_shares(t) for t in types))


def test_clustering_distances(corpora):
    assert_same_table(*(result.table for result in both("head_distances", corpora)))


def test_probe_scores(corpora, tmp_path):
    folder = corpora[0]
    caches = [probes.ProbeCache(run_analysis("probe_features", corpora[2]["tb", k], corpus=folder / "tb.jsonl",
                                             path=tmp_path / f"features-{k}.h5", progress=False).attrs["path"])
              for k in (1, N_SHARDS)]
    runs = [probes.run_probe("attn_only", f, {"tb_test": (f, "test")}, seed=0, epochs=1, batch_size=1,
                             progress=False) for f in caches]
    assert_same_table(*(scores.drop(columns="train_seconds") for scores, _ in runs))
    weights = [{k: v.numpy() for k, v in model.state_dict().items()} for _, model in runs]
    for name in weights[0]:  # what attn_only_weights.csv shows
        np.testing.assert_allclose(weights[0][name], weights[1][name], rtol=1e-9, err_msg=name)
