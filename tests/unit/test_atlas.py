"""The head atlas: joining per-head tables (headatlas.report.atlas), the notebook entry points, the page."""

from __future__ import annotations

import doctest
import json
import re

import numpy as np
import pandas as pd
import pytest

import headatlas
from headatlas.report import atlas as atlas_module
from headatlas.report.atlas import Declaration, HeadTable, absent, build, hint, write
from headatlas.report.atlas_page import build_page, display_units, pick_examples, read_example
from headatlas.store.writer import StoreWriter

L, H = 2, 3


def per_head(**columns) -> pd.DataFrame:
    layer, head = np.divmod(np.arange(L * H), H)
    return pd.DataFrame({"layer": layer + 1, "head": head + 1, **columns})


def run_tables(root):
    """A small run's per-head tables for model m (two weightings of surface; syntax; importance)."""
    r = root / "results"
    rng = np.random.default_rng(0)
    for suffix, shift in (("", 0.0), ("-norm", 0.1)):
        surface = r / "m" / "wiki" / f"surface{suffix}"
        surface.mkdir(parents=True)
        per_head(prev=np.linspace(0, 0.5, L * H) + shift, self=0.1, next=0.2).to_csv(
            surface / "relative_position.csv", index=False)
        per_head(cls=0.1 + shift, sep=np.linspace(0.2, 0.7, L * H) - shift, punct=0.05,
                 sep_from_sep=0.9, sep_from_other=0.3).to_csv(surface / "special_tokens.csv", index=False)
        (surface / "relative_position.svg").write_text("<svg/>")
    patterns = r / "m" / "wiki" / "patterns"
    patterns.mkdir(parents=True)
    per_head(vertical=0.5, diagonal=0.2, **{"vertical+diagonal": 0.1}, block=0.0, heterogeneous=0.2,
             dominant="vertical").to_csv(patterns / "heads.csv", index=False)
    syntax = r / "m" / "tb" / "syntax"
    syntax.mkdir(parents=True)
    rows = []
    for relation in ("all", "det", "obj"):
        for direction in ("dep->head", "head->dep"):
            for k, (layer, head) in enumerate(zip(*np.divmod(np.arange(L * H), H))):
                rows.append({"relation": relation, "direction": direction, "layer": layer + 1,
                             "head": head + 1, "n": 50, "correct": 0,
                             "accuracy": round(float(rng.random()), 3), "unaligned": 0})
    pd.DataFrame(rows).to_csv(syntax / "heads.csv", index=False)
    pd.DataFrame({"relation": ["all", "det", "det", "obj"], "offset": [1, 1, -1, -2], "n": 50,
                  "correct": 0, "accuracy": [0.3, 0.5, 0.2, 0.4]}).to_csv(syntax / "offsets.csv", index=False)
    pd.DataFrame({"relation": ["all", "det", "obj", None], "paper_relation": ["all", "det", "dobj", "prep"],
                  "paper_head": ["7-6", "8-11", "8-10", "7-4"], "paper_acc": [34.5, 94.3, 86.8, 66.7],
                  "paper_baseline_offset": [1, 1, -2, -1], "paper_baseline_acc": [26.3, 51.7, 40.0, 61.8]}
                 ).to_csv(syntax / "table1.csv", index=False)
    importance = r / "m_task" / "importance"
    importance.mkdir(parents=True)
    per_head(importance_raw=1.0, importance=0.5, rank=np.arange(1, L * H + 1), score=95.0,
             delta=np.linspace(-1, 0.5, L * H), ci_low=-1.5, ci_high=0.8, improves=False,
             significant=False).to_csv(importance / "heads.csv", index=False)
    return r


SURFACE = "headatlas.analyses.surface"
# The declarations of the rules, as workflow/rules/*.smk make them (atlas.smk: declared_heads).
DECLARED = [
    Declaration("results/{model}/{corpus}/surface{weighting}/{analysis}.csv", SURFACE + ":{analysis}", "surface"),
    Declaration("results/{model}/{corpus}/clustering{weighting}/coordinates.csv",
                "headatlas.analyses.clustering:coordinates", "clustering"),
    Declaration("results/{model}/{corpus}/patterns/heads.csv", "headatlas.analyses.patterns:heads", "patterns"),
    Declaration("results/{model}/{corpus}/syntax{weighting}/heads.csv", "headatlas.analyses.syntax:heads",
                "syntax", ("offsets.csv", "table1.csv")),
    Declaration("results/{task_model}/importance/heads.csv", "headatlas.interventions.importance:heads",
                "importance"),
]


def tables_of(r, model="m"):
    """The HeadTables the run_tables folder holds for ``model``, as atlas.smk plans them."""
    found = []
    if model == "m":
        for suffix in ("", "-norm"):
            for name in ("relative_position", "special_tokens"):
                found.append(HeadTable(f"{r}/m/wiki/surface{suffix}/{name}.csv", f"{SURFACE}:{name}", "surface",
                                       {"model": "m", "corpus": "wiki", "weighting": suffix, "analysis": name}))
        found.append(HeadTable(f"{r}/m/wiki/patterns/heads.csv", "headatlas.analyses.patterns:heads", "patterns",
                               {"model": "m", "corpus": "wiki"}))
        found.append(HeadTable(f"{r}/m/tb/syntax/heads.csv", "headatlas.analyses.syntax:heads", "syntax",
                               {"model": "m", "corpus": "tb", "weighting": ""}, ("offsets.csv", "table1.csv")))
    else:
        found.append(HeadTable(f"{r}/m_task/importance/heads.csv", "headatlas.interventions.importance:heads",
                               "importance", {"task_model": "m_task"}))
    return found


def test_where_an_absent_table_would_be():
    assert [hint(DECLARED[0], k) for k in ("entropy",)] == ["<corpus>/surface{,-norm}/entropy.csv"]
    assert hint(DECLARED[3], "heads") == "<corpus>/syntax{,-norm}/heads.csv"
    assert hint(DECLARED[4], "heads") == "importance/heads.csv"


def test_build_joins_every_table_once_per_weighting(tmp_path):
    r = run_tables(tmp_path)
    tables = tables_of(r)
    assert tables[-1].companion_paths() == [f"{r}/m/tb/syntax/offsets.csv", f"{r}/m/tb/syntax/table1.csv"]
    atlas = build(tables, r, "m", DECLARED)
    heads = atlas.heads
    assert list(heads.columns[:3]) == ["weighting", "layer", "head"]
    assert len(heads) == 2 * L * H and list(heads["weighting"].unique()) == ["attention", "norm"]
    first = heads[(heads["layer"] == 1) & (heads["head"] == 2)].set_index("weighting")
    assert first.loc["norm", "prev"] == pytest.approx(first.loc["attention", "prev"] + 0.1)
    # patterns: computed on the attention weights only, empty under norm
    assert first.loc["attention", "pattern_wiki"] == "vertical" and pd.isna(first.loc["norm", "pattern_wiki"])
    # dependency heads: the relation with the largest margin over its best offset
    syntax = pd.read_csv(r / "m" / "tb" / "syntax" / "heads.csv")
    got = first.loc["attention"]
    cand = syntax[(syntax["layer"] == 1) & (syntax["head"] == 2) & (syntax["relation"] != "all")].copy()
    cand["margin"] = cand["accuracy"] - cand["relation"].map({"det": 0.5, "obj": 0.4})
    best = cand.sort_values("margin", ascending=False).iloc[0]
    assert (got["syntax_tb_relation"], got["syntax_tb_direction"]) == (best["relation"], best["direction"])
    assert got["syntax_tb_margin"] == pytest.approx(best["margin"])
    assert got["syntax_tb_paper"].startswith({"det": "det: head 8-11", "obj": "dobj: head 8-10"}[best["relation"]])
    # columns in the order of their entries' rank: surface, patterns, syntax
    names = list(heads.columns)
    assert names.index("sep") < names.index("pattern_wiki") < names.index("syntax_tb_all")
    columns = atlas.columns.set_index("column")
    assert columns.loc["prev", "weightings"] == "attention, norm"
    assert columns.loc["pattern_wiki", "weightings"] == "attention"
    assert "m/wiki/surface-norm/relative_position.csv:prev" in columns.loc["prev", "source"]
    # what the run did not write is said, not silently dropped: every declared table missing
    absent_rows = atlas.columns[atlas.columns["status"] != "present"].set_index("source")
    assert set(absent_rows.index) == {"<corpus>/surface{,-norm}/entropy.csv",
                                      "<corpus>/clustering{,-norm}/coordinates.csv", "importance/heads.csv"}
    assert absent_rows.loc["<corpus>/surface{,-norm}/entropy.csv", "status"] == \
        "absent: the run wrote no entropy.csv of the surface analysis for m"
    assert any("entropy" in n for n in atlas.notes)


def test_absent_tables_follow_their_rank(tmp_path):
    r = run_tables(tmp_path)
    rows = absent(DECLARED, tables_of(r))
    assert [row["hint"] for row in rows] == ["<corpus>/surface{,-norm}/entropy.csv",
                                            "<corpus>/clustering{,-norm}/coordinates.csv",
                                            "importance/heads.csv"]


def test_independent_columns_repeat_under_both_weightings(tmp_path):
    r = run_tables(tmp_path)
    atlas = build(tables_of(r, "m_task"), r, "m_task")
    assert set(atlas.heads["weighting"]) == {"attention"}
    both = [t for t in tables_of(r) if "relative_position" in t.path] + tables_of(r, "m_task")
    atlas = build(both, r, "m")
    rows = atlas.heads.set_index(["weighting", "layer", "head"])
    assert (rows.loc["attention", "disable_delta"] == rows.loc["norm", "disable_delta"]).all()


def test_a_table_that_is_not_per_head_is_refused(tmp_path):
    r = run_tables(tmp_path)
    coverage = HeadTable(f"{r}/m/tb/syntax/offsets.csv", f"{SURFACE}:entropy", "surface", {"corpus": "tb"})
    with pytest.raises(ValueError, match="not a per-head table"):
        build([coverage], r, "m")


def test_entry_points_doctest(tmp_path):
    """The notebook example of the README, run as a doctest."""
    r = run_tables(tmp_path)
    write(build(tables_of(r), r, "m"), r / "m" / "heads.csv", r / "m" / "heads_columns.csv")
    example = f'''
>>> import headatlas
>>> table = headatlas.atlas("{r}", "m")
>>> table.shape
(12, {pd.read_csv(r / "m" / "heads.csv").shape[1]})
>>> sorted(table["weighting"].unique())
['attention', 'norm']
>>> profile = headatlas.head("m", 2, 3, results="{r}")
>>> list(profile.columns)
['attention', 'norm']
>>> profile.loc["pattern_wiki", "attention"]
'vertical'
>>> round(float(headatlas.head("m", 2, 3, results="{r}", weighting="norm")["prev"]), 2)
0.6
'''
    test = doctest.DocTestParser().get_doctest(example, {}, "atlas", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted == 8
    # a plain function: importing the module that builds the atlas does not replace it
    assert callable(headatlas.atlas) and headatlas.atlas is not atlas_module
    with pytest.raises(KeyError, match="no head 9-1"):
        headatlas.head("m", 9, 1, results=str(r))


def test_atlas_without_heads_csv_says_how_to_build_it(tmp_path):
    r = run_tables(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"snakemake --cores all .*m/heads.csv"):
        headatlas.atlas(str(r), "m")
    with pytest.raises(FileNotFoundError, match="no results of that model"):
        headatlas.atlas(str(r), "other")


def write_store(path, sentences, norms=False):
    attrs = {"n_layers": L, "n_heads": H, "model_name": "m", "corpus": "c"}
    with StoreWriter(path, attrs) as writer:
        for index, words in enumerate(sentences):
            tokens, word_ids = ["[CLS]"], [-1]
            for w, word in enumerate(words):
                pieces = [word[:2], "##" + word[2:]] if len(word) > 3 else [word]
                tokens += pieces
                word_ids += [w] * len(pieces)
            tokens.append("[SEP]")
            word_ids.append(-1)
            n = len(tokens)
            a = np.random.default_rng(index).random((L, H, n, n)).astype(np.float32)
            writer.add(index, f"s{index}", tokens, np.arange(n), np.zeros(n), word_ids,
                       a / a.sum(-1, keepdims=True), n_words=len(words))


def test_examples_are_words_and_bytes(tmp_path):
    path = tmp_path / "s.h5"
    sentences = [["the", "cats", "sat"], ["a"] * 30, ["one", "house", "was", "big", "and", "red"]]
    write_store(path, sentences)
    chosen = pick_examples([path], n=2, max_units=10, min_units=4)
    assert [i for _, i in chosen][0] == 2  # 6 words: nearest 0.6 * 10
    record = read_example(path, 1, max_units=10, norm=False)
    assert record["n_units"] == 32 and len(record["words"]) == 10
    assert record["words"][0] == "[CLS]" and record["words"][-1] == "[SEP]"  # kept when cut
    import base64
    maps = np.frombuffer(base64.b64decode(record["maps"]["attention"]), dtype=np.uint8)
    assert maps.size == L * H * 10 * 10


def test_the_page_shows_punctuation_and_words_as_written():
    """Wikipedia's whitespace words carry their punctuation ("insects," is one word): on the page
    its leading and trailing punctuation pieces are units of their own, so a head attending to ','
    shows it; a word of punctuation alone, or inside a word ("U.S"), stays whole. The corpus's
    words give the text as written (an uncased model's pieces are lower-cased)."""
    tokens = ["[CLS]", "stick", "insects", ",", "(", "ph", "##asm", "##ids", ")", "Ġu", ".", "s", ".", ",", "[SEP]"]
    word_ids = np.array([-1, 0, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, -1])
    ids, texts = display_units(tokens, word_ids)
    assert texts == ["[CLS]", "stick", "insects", ",", "(", "phasmids", ")", "u.s", ".", ",", "[SEP]"]
    assert ids.tolist() == [-1, 0, 1, 2, 3, 4, 4, 4, 5, 6, 6, 6, 7, 8, -1]
    written = ["Stick", "insects,", "(Phasmids)", "U.S.", ","]
    assert display_units(tokens, word_ids, written)[1] == \
        ["[CLS]", "Stick", "insects", ",", "(", "Phasmids", ")", "U.S", ".", ",", "[SEP]"]
    # The maps follow the units: attention to "insects," splits into "insects" and ",".
    from headatlas.store.wordlevel import word_level

    attn = np.zeros((1, 1, len(tokens), len(tokens)))
    attn[0, 0, :, 3] = 1.0  # every token attends to the comma piece
    maps = word_level(attn, ids, "mean")[0, 0]
    assert maps.shape == (11, 11) and maps[:, 3].tolist() == [1.0] * 11 and maps[:, 2].sum() == 0


def test_page_is_self_contained(tmp_path):
    r = run_tables(tmp_path)
    write(build(tables_of(r), r, "m"), r / "m" / "heads.csv", r / "m" / "heads_columns.csv")
    store = tmp_path / "store.h5"
    write_store(store, [["the", "cats", "sat", "on", "the", "mat"] * 2])
    text, parts = build_page(["m"], r, {"m": {"c": [str(store)]}})
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), "no network resource"
    data = json.loads(re.search(r'id="atlas-data">(.*?)</script>', text, re.S).group(1))
    model = data["models"][0]
    assert model["layers"] == L and model["heads"] == H
    assert model["values"]["norm"]["prev"][0] == pytest.approx(0.1)
    assert model["examples"][0]["words"][:3] == ["[CLS]", "the", "cats"]



def test_default_page_fits_the_size_budget(tmp_path):
    """The default run's worst case: MiniLM's 6 x 12 heads, both weightings, 5 corpora whose
    examples all exceed the word cap (every example max_units^2 per head), 3 models' tables."""
    from headatlas.report.atlas import PAGE_OPTIONS
    from headatlas.report.atlas_page import ModelData, model_examples, page, size_report

    layers, heads, n = 6, 12, 70
    rng = np.random.default_rng(0)
    stores = {}
    for corpus in ("wikipedia", "gum", "ewt", "gum_docs", "gum_windows"):
        path = tmp_path / f"{corpus}.h5"
        with StoreWriter(path, {"n_layers": layers, "n_heads": heads, "model_name": "minilm",
                                "corpus": corpus, "norms": "recorded"}) as writer:
            for index in range(3):
                a = rng.random((layers, heads, n, n)).astype(np.float32) ** 8
                tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
                writer.add(index, f"{corpus}-{index}", tokens, np.arange(n), np.zeros(n),
                           [-1] + list(range(n - 2)) + [-1], a / a.sum(-1, keepdims=True), n_words=n - 2,
                           value_norms=rng.random((layers, heads, n)).astype(np.float32),
                           norm_map=rng.random((layers, n, n)).astype(np.float32))
        stores[corpus] = [str(path)]
    columns = [f"c{i}" for i in range(70)]  # about as many columns as MiniLM's heads.csv
    table = pd.concat([pd.DataFrame({"weighting": w, "layer": np.repeat(np.arange(1, layers + 1), heads),
                                     "head": np.tile(np.arange(1, heads + 1), layers),
                                     **{c: rng.random(layers * heads) for c in columns}})
                       for w in ("attention", "norm")], ignore_index=True)
    dictionary = pd.DataFrame({"column": columns, "unit": "share", "weightings": "attention, norm",
                               "source": "x.csv", "paper": "p", "reference": "", "meaning": "m",
                               "status": "present"})
    options = dict(PAGE_OPTIONS)
    examples = model_examples(stores, options["examples"], options["max_units"], options["min_units"], True)
    parts = [ModelData("minilm", table, dictionary, examples)] + \
        [ModelData(m, table, dictionary) for m in ("minilm_upos", "minilm_random")]
    text = page(parts)
    size = len(text.encode("utf-8"))
    bound = 5 * options["examples"] * layers * heads * 2 * options["max_units"] ** 2 * 4 / 3
    print(size_report(parts, text))
    assert len(examples) == 10 and all(len(e["words"]) == options["max_units"] for e in examples)
    assert size <= 5e6 and size <= bound + 1e6


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    """The README's notebook example of the atlas (the python block that calls headatlas.report.atlas),
    run on a results folder of MiniLM's shape."""
    from tests.conftest import ROOT

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    example = next((b for b in blocks if "headatlas.atlas(" in b), None)
    if example is None:
        pytest.skip("README.md has no python example calling headatlas.report.atlas yet")
    layers, heads = 6, 12
    rng = np.random.default_rng(0)
    table = pd.concat([pd.DataFrame({
        "weighting": w, "layer": np.repeat(np.arange(1, layers + 1), heads),
        "head": np.tile(np.arange(1, heads + 1), layers), "sep": rng.random(layers * heads),
        "next": rng.random(layers * heads),
        "type": rng.choice(["dense", "diagonal", "dense&vertical", "vertical"], layers * heads)})
        for w in ("attention", "norm")], ignore_index=True)
    (tmp_path / "results" / "minilm").mkdir(parents=True)
    table.to_csv(tmp_path / "results" / "minilm" / "heads.csv", index=False)
    from tests.unit.test_store import write  # the store its one-example line reads

    (tmp_path / "results" / "minilm" / "wikipedia" / "attention").mkdir(parents=True)
    write(tmp_path / "results" / "minilm" / "wikipedia" / "attention" / "shard-0.h5", [4, 5, 6, 7])
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_the_atlas_command_names_a_missing_atlas_or_head_and_picks_columns(tmp_path, capsys, monkeypatch):
    """`headatlas atlas`: a wrong model or head is one line, not a traceback; --columns picks."""
    from headatlas.cli import main

    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    pd.DataFrame({"weighting": ["attention"] * 2, "layer": [1, 1], "head": [1, 2], "sep": [0.5, 0.1],
                  "entropy": [1.0, 2.0]}).to_csv(folder / "heads.csv", index=False)
    results = str(tmp_path / "results")
    with pytest.raises(SystemExit, match="no head atlas"):
        main(["atlas", "other", "--results", results])
    with pytest.raises(SystemExit, match="m has no head 3-1"):
        main(["atlas", "m", "3-1", "--results", results])
    main(["atlas", "m", "--results", results, "--columns", "entropy", "--sort", "entropy"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["layer", "head", "entropy"] and lines[1].split() == ["1", "2", "2.0"]
