"""The configuration: defaults from the schema, every mistake named by its key, the derived plan."""

from __future__ import annotations

import copy

import pytest
import yaml

from headatlas.pipeline.config import ConfigError, load_config
from headatlas.pipeline.plan import model_analyses, plan
from tests.conftest import FIXTURES, ROOT

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
CONLLU = str(FIXTURES / "formats" / "gum_style.conllu")


def minimal() -> dict:
    return {"models": {"m": {"hub": "bert-base-cased"}, "m_random": {"hub": "bert-base-cased", "random_init": True}},
            "corpora": {"wiki": {"kind": "segments"}, "tb": {"kind": "treebank", "format": "conllu", "path": CONLLU},
                        "docs": {"kind": "documents", "from": "tb"}}}


def load(config: dict) -> dict:
    return load_config(config, SCHEMA)


def embedded() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def paper() -> dict:
    """configs/paper.yaml with the licensed corpora and SQuAD replaced by the readers' fixtures."""
    config = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text())
    config["corpora"]["ptb_sd"]["path"] = str(FIXTURES / "formats" / "ptb_sd.conllx")
    config["corpora"]["conll2012"]["path"] = str(FIXTURES / "coref" / "conll")
    config["ablation"]["squad_path"] = str(FIXTURES / "formats" / "squad_v1.1_sample.json")
    return config


def test_defaults_come_from_the_schema():
    config = load(minimal())
    assert config["extraction"] == {"max_length": 128, "batch_size": 32, "max_tokens": None, "shards": 1,
                                    "threads": 1, "keep_stores": "all", "mode": "store",
                                    "exemplars": 16, "exemplar_seed": 0, "view_memory_mb": 1024,
                                    "spill_every": 1000}
    assert config["syntax"]["bootstrap"] == {"n": 1000, "seed": 0}
    assert config["coref"]["bootstrap"] == {"n": 1000, "seed": 0}
    assert config["coref"]["word_from"] == "mean"
    assert config["surface"]["options"]["entropy"] == {"max_examples": None}
    assert config["models"]["m"]["random_init"] is False
    assert config["probes"]["model"] is None and config["ablation"]["model"] is None


def test_defaults_are_not_shared_between_configs():
    first, second = load(minimal()), load(minimal())
    first["syntax"]["bootstrap"]["n"] = 5
    first["syntax"]["key_relations"].append("x")
    assert second["syntax"]["bootstrap"]["n"] == 1000
    assert "x" not in second["syntax"]["key_relations"]


def test_the_shipped_configurations_are_valid():
    for config in (embedded(), paper()):
        load(config)


# Each case: (what is wrong, how to make it so, the key the error must name, a word it must say).
def _set(path: str, value):
    def edit(config):
        *parents, last = path.split(".")
        node = config
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return edit


def _remove(path: str):
    def edit(config):
        *parents, last = path.split(".")
        node = config
        for key in parents:
            node = node[key]
        del node[last]
    return edit


MISTAKES = [
    ("unknown top-level key", _set("extraciton", {}), "`extraciton`", "extraction"),
    ("nested typo", _set("extraction.max_lenght", 64), "`extraction.max_lenght`", "max_length"),
    ("typo inside surface.options", _set("surface.options", {"entropy": {"max_exampels": 10}}),
     "`surface.options.entropy.max_exampels`", "max_examples"),
    ("unknown analysis in surface.options", _set("surface.options", {"entropi": {}}),
     "`surface.options.entropi`", "entropy"),
    ("model with two sources", _set("models.m.package", "pkg"), "`models.m`", "package, hub"),
    ("model with no source", _set("models.m", {"random_init": False}), "`models.m`", "none"),
    ("revision without a hub id", _set("models.p", {"path": "/p", "revision": "abc"}), "`models.p`", "hub"),
    ("unknown key in a model", _set("models.m.hubb", "x"), "`models.m.hubb`", "hub"),
    ("probes.model typo", _set("probes", {"model": "mm", "random_model": "m_random", "train": "tb"}),
     "`probes.model`", "'m'"),
    ("probes.random_model not a random encoder", _set("probes", {"model": "m", "random_model": "m", "train": "tb"}),
     "`probes.random_model`", "random_init"),
    ("probes.model without its twin", _set("probes", {"model": "m", "train": "tb"}), "`probes.random_model`",
     "needed"),
    ("documents.from names a missing corpus", _set("corpora.docs.from", "tbb"), "`corpora.docs.from`", "'tb'"),
    ("documents without from", _remove("corpora.docs.from"), "`corpora.docs`", "from"),
    ("documents from a treebank without coreference",
     _set("corpora", {"tb": {"kind": "treebank", "format": "conllx", "path": CONLLU},
                      "docs": {"kind": "documents", "from": "tb"}}), "`corpora.docs.from`", "coreference"),
    ("an unknown treebank format", _set("corpora.tb.format", "wikipedia"), "`corpora.tb.format`", "conllu"),
    ("syntax.selection names a missing corpus", _set("syntax.selection", {"corpus": "gum", "splits": ["train"]}),
     "`syntax.selection.corpus`", "treebank"),
    ("syntax.evaluation names a segments corpus",
     _set("syntax", {"selection": {"corpus": "tb", "splits": ["train"]},
                     "evaluation": [{"corpus": "wiki", "splits": ["test"]}]}),
     "`syntax.evaluation.0.corpus`", "treebank"),
    ("syntax.evaluation without selection", _set("syntax.evaluation", [{"corpus": "tb", "splits": ["test"]}]),
     "`syntax.evaluation`", "selection"),
    ("headtypes.compare names a missing model", _set("headtypes.compare", [["m", "m_upos"]]),
     "`headtypes.compare.0.1`", "model"),
    ("finetune.models names a missing model", _set("finetune", {"models": ["mini"], "corpus": "tb"}),
     "`finetune.models.0`", "model"),
    ("ablation.model is not fine-tuned", _set("ablation.model", "m"), "`ablation.model`", "finetune.models"),
    ("squad ablation without the SQuAD file", _set("ablation", {"task": "squad", "model": "m"}),
     "`ablation.squad_path`", "SQuAD"),
    ("surface.corpus names a treebank", _set("surface.corpus", "tb"), "`surface.corpus`", "segments"),
    ("a value outside its enum", _set("syntax.word_from", "meen"), "`syntax.word_from`", "mean"),
    ("a value of the wrong type", _set("extraction.batch_size", "32"), "`extraction.batch_size`", "integer"),
    ("a number out of range", _set("extraction.max_length", 4), "`extraction.max_length`", "8"),
    ("the old coref key word_level", _set("coref.word_level", "mean"), "`coref.word_level`", "word_from"),
    ("the old integer bootstrap", _set("coref.bootstrap", 1000), "`coref.bootstrap`", "object"),
    ("a path-format treebank without path", _remove("corpora.tb.path"), "`corpora.tb.path`", "path"),
    ("splits on a segments corpus", _set("corpora.wiki.splits", {"by": "file", "train": ["*"]}),
     "`corpora.wiki.splits`", "treebank"),
    ("keep_splits on a segments corpus", _set("corpora.wiki.keep_splits", ["test"]),
     "`corpora.wiki.keep_splits`", "no splits"),
    ("a corpus restricted to an unknown model", _set("corpora.docs.models", ["mm"]),
     "`corpora.docs.models.0`", "model"),
    ("a restricted corpus in an analysis across corpora",
     lambda c: (_set("corpora.tb.models", ["m"])(c),
                _set("probes", {"model": "m", "random_model": "m_random", "train": "tb"})(c)),
     "`probes.train`", "some models only"),
    ("splits by an unknown rule", _set("corpora.tb.splits", {"by": "chance", "train": ["*"]}),
     "`corpora.tb.splits.by`", "proportion"),
    ("a split name that does not exist", _set("coref.eval_split", "testing"), "`coref.eval_split`", "test"),
    ("a corpus of unknown kind", _set("corpora.tb.kind", "bank"), "`corpora.tb.kind`", "treebank"),
    ("a corpus path that does not exist", _set("corpora.tb.path", "/no/such/treebank"), "`corpora.tb.path`",
     "does not exist"),
    ("a model folder that does not exist", _set("models.p", {"path": "no/such/model"}), "`models.p.path`",
     "does not exist"),
    ("a SQuAD file that does not exist",
     _set("ablation", {"task": "squad", "model": "m", "squad_path": "/no/dev.json", "types_csv": CONLLU}),
     "`ablation.squad_path`", "does not exist"),
    ("an unknown weighting", _set("weightings", ["attention", "norms"]), "`weightings.1`", "norm"),
    ("a model's weightings empty", _set("models.m.weightings", []), "`models.m.weightings`", "non-empty"),
]


@pytest.mark.parametrize("case", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_mistake_is_an_error_naming_its_key(case):
    _, edit, key, word = case
    config = minimal()
    edit(config)
    with pytest.raises(ConfigError) as caught:
        load(config)
    message = str(caught.value)
    assert key in message, message
    assert word in message, message


def test_every_problem_is_reported_at_once():
    config = minimal()
    config["extraction"] = {"max_lenght": 64, "batch_size": 0}
    with pytest.raises(ConfigError) as caught:
        load(config)
    assert len(caught.value.problems) == 2


def test_every_store_is_kept_unless_the_config_says_otherwise():
    p = plan(load(minimal()))
    assert p.kept_stores == ["m", "m_random"] and p.temp_stores == []
    config = minimal()
    config["extraction"] = {"keep_stores": ["m_random"]}
    p = plan(load(config))
    assert p.kept_stores == ["m_random"] and p.temp_stores == ["m"]
    config["extraction"] = {"keep_stores": ["m", "n"]}
    with pytest.raises(ConfigError, match=r"extraction.keep_stores.1.*'n' is not a configured model"):
        load(config)


def test_there_are_at_least_twelve_kinds_of_mistake():
    assert len(MISTAKES) >= 12


# --- the plan -------------------------------------------------------------------------------

def test_embedded_plan_runs_everything():
    p = plan(load(embedded()))
    assert p.surface_corpus == "wikipedia"
    assert p.labelled_treebanks == ["gum", "ewt"]
    assert p.honest and p.probes_on
    assert p.activation_models == ["minilm", "minilm_upos", "minilm_random"]  # the control too
    assert p.gradient_models == ["minilm", "minilm_upos"]  # the random encoder is left out ...
    assert [o.what for o in p.omitted] == [  # ... and says so, as for the helpers' analyses (the budget)
        "corpora, surface, syntax, coref, clustering, gradients, norms, patterns, sinks, activations of minilm_upos",
        "corpora, coref, clustering, gradients, norms of minilm_random",  # the control's claims run
        "norm-weighted views, norm shares and rollout of minilm_upos, minilm_random",
        "gradient importance of minilm_random"]
    assert p.asks("minilm", "coref") and p.asks("minilm_upos", "headtypes")
    assert not p.asks("minilm_upos", "gradients") and not p.asks("minilm_random", "coref")
    assert p.asks("minilm_random", "surface")  # the control: which claims hold on noise
    assert p.asks("minilm_random", "scorecard")  # shared outputs are not a model's to leave out
    assert p.norm_models == ["minilm"] and p.suffixes("minilm_upos") == [""]
    assert p.ablation.task_model == "minilm_upos"
    assert (p.ablation.types_model, p.ablation.types_corpus, p.ablation.types_own) == \
        ("minilm_upos", "wikipedia", True)
    assert p.ablation.types_source == "minilm_upos on wikipedia"
    assert p.ablation.data == "data/corpora/gum.jsonl"
    assert p.task_chain == {("minilm_upos", "wikipedia")}  # head types and patterns: run first
    assert p.headtype_pairs == [("minilm", "minilm_upos")]
    assert p.patterns_corpora == ["wikipedia", "gum", "ewt"]
    assert p.patterns_labels.file.endswith("pattern_labels.csv")
    assert p.patterns_labels.maps.endswith("pattern_maps.npz")
    assert p.importance.task_model == "minilm_upos" and p.importance.metric == "accuracy"
    assert p.importance.patterns_corpus == "wikipedia"  # the kind of input the classifier was labelled on
    assert p.importance.types_corpus == "wikipedia"
    config = embedded()
    config["patterns"]["corpora"] = ["gum"]  # no segments classified: the task's own corpus
    assert plan(load(config)).importance.patterns_corpus == "gum"
    assert p.documents == ["gum_docs", "gum_windows"] and p.coref_selection == {"gum_windows": "gum_docs"}
    assert p.runs_on("minilm", "gum_windows") and not p.runs_on("minilm_upos", "gum_windows")
    assert p.runs_on("minilm_upos", "gum_docs")
    # only the analysed model's stores persist; the helpers' are temp() (docs/configuration.md: Disk)
    assert p.kept_stores == ["minilm"] and p.temp_stores == ["minilm_upos", "minilm_random"]


def test_paper_plan_runs_every_table_on_the_papers_corpora():
    p = plan(load(paper()))
    assert p.labelled_treebanks == ["ptb_sd"]  # CoNLL-2012 has no dependency labels: coreference only
    assert p.documents == ["conll2012_docs"]
    assert p.honest and p.probes_on
    assert p.gradient_models == ["bert-base-cased", "bert-large-squad"]
    assert p.ablation.task_model == "bert-large-squad"
    assert (p.ablation.types_model, p.ablation.types_corpus) == ("bert-large-squad", "wikipedia")
    left_out = {rule for o in p.omitted for rule in o.rules}
    # no UPOS tagger is fine-tuned (the task model is a SQuAD model): no context mixing benchmark
    assert left_out == {"finetune_", "headtypes_compare", "context_mixing", "compare_mixing"}
    assert p.mixing_models == [] and any("no tagger" in str(o) for o in p.omitted)
    assert p.patterns_corpora == ["wikipedia", "ptb_sd", "conll2012"] and p.patterns_labels
    assert p.importance.metric == "f1"
    assert p.importance.patterns_corpus == "wikipedia"


def test_pattern_labels_and_their_maps_go_together():
    config = embedded()
    config["patterns"]["labels"] = {"file": "my_labels.csv"}
    with pytest.raises(ConfigError, match="patterns.labels"):
        load(config)
    config["patterns"]["labels"] = None
    p = plan(load(config))
    assert p.patterns_labels is None
    assert any(o.rules == ("patterns_evaluate",) for o in p.omitted)
    config["patterns"]["corpora"] = ["wikipedia", "nowhere"]
    with pytest.raises(ConfigError, match="patterns.corpora.1"):
        load(config)


def test_a_config_without_optional_analyses_says_what_it_leaves_out():
    config = minimal()
    p = plan(load(config))
    rules = {rule for o in p.omitted for rule in o.rules}
    assert {"surface_", "syntax_honest", "probes_", "finetune_", "ablation"} <= rules
    assert "coref_" not in rules  # a documents corpus is configured
    assert all(str(o).startswith("left out: ") for o in p.omitted)


def test_weightings_default_to_both_and_a_model_may_override_them():
    config = minimal()
    config["models"]["m_random"]["weightings"] = ["attention"]
    config["surface"] = {"corpus": "wiki"}
    p = plan(load(config))
    assert p.weightings == {"m": ["attention", "norm"], "m_random": ["attention"]}
    assert p.suffixes("m") == ["", "-norm"] and p.suffixes("m_random") == [""]
    assert p.norms("m") and not p.norms("m_random")
    assert p.norm_models == ["m"]  # Kobayashi's shares and rollout
    said = [str(o) for o in p.omitted if "norm" in o.what]
    assert said == ["left out: norm-weighted views, norm shares and rollout of m_random: their "
                    "`weightings` exclude norm"]
    config = load({**minimal(), "weightings": ["attention"], "surface": {"corpus": "wiki"}})
    off = plan(config)
    assert off.norm_models == [] and not off.norms("m")
    assert {"norm_shares", "rollout"} <= {rule for o in off.omitted for rule in o.rules}
    assert plan(load(minimal())).norm_models == []  # no surface corpus: nowhere to run them


def test_a_model_may_ask_for_some_analyses_only():
    config = minimal()
    p = plan(load(config))
    assert p.analyses == {"m": None, "m_random": None} and p.asks("m_random", "coref")
    config["models"]["m_random"]["analyses"] = ["syntax"]
    p = plan(load(config))
    assert p.asks("m_random", "syntax") and not p.asks("m_random", "coref") and p.asks("m", "coref")
    said = [str(o) for o in p.omitted if "m_random" in o.what and "analyses" in o.why]
    assert said == ["left out: corpora, surface, coref, clustering, headtypes, gradients, norms, "
                    "patterns, sinks, activations of m_random: its `analyses` asks for syntax; the tables other "
                    "analyses read from it still run"]
    config["models"]["m_random"]["analyses"] = ["syntax", "ablation"]
    with pytest.raises(ConfigError, match=r"models.m_random.analyses.1"):
        load(config)


def test_the_schema_lists_exactly_the_analyses_a_model_may_ask_for():
    schema = yaml.safe_load(SCHEMA.read_text())
    items = schema["properties"]["models"]["additionalProperties"]["properties"]["analyses"]["items"]
    assert tuple(items["enum"]) == model_analyses()


def test_plan_does_not_change_the_config():
    config = load(embedded())
    before = copy.deepcopy(config)
    plan(config)
    assert config == before


def test_the_finetune_block_is_exactly_the_taggers_options():
    """What finetune.smk hands to the tagger (the block minus models, corpus, threads) must be
    TuneOptions fields, every one of them: a schema key the tagger does not take stops the rule."""
    import dataclasses

    from headatlas.tasks.upos import TuneOptions

    block = load(embedded())["finetune"]
    options = {k for k in block if k not in ("models", "corpus", "threads")}
    assert options == {f.name for f in dataclasses.fields(TuneOptions)}


def test_a_newline_in_a_name_or_a_string_is_refused_naming_its_key():
    """A config is shared as a file: a string with a newline could write a reStructuredText
    directive (``.. raw:: html``) into the report's captions; a name ending in a newline passed
    a ``$``-anchored pattern and failed later as a missing input."""
    config = minimal()
    config["models"]["m\n"] = config["models"].pop("m")
    with pytest.raises(ConfigError, match=r"models\.m\\n`: the name 'm\\n' holds a control character"):
        load(config)
    config = minimal()
    config["models"]["m"] = {"path": "mm\n\n.. raw:: html\n\n   <script>alert(10)</script>\n\nend"}
    with pytest.raises(ConfigError, match=r"`models\.m\.path`: .* holds a control character"):
        load(config)
    config = minimal()
    config["corpora"]["wiki"]["path"] = "wiki\u2028.json"
    with pytest.raises(ConfigError, match=r"`corpora\.wiki\.path`"):
        load(config)


def test_names_are_anchored_at_their_true_end():
    import re

    schema = yaml.safe_load(SCHEMA.read_text())
    pattern = schema["properties"]["models"]["propertyNames"]["pattern"]
    assert re.search(pattern, "bert") and not re.search(pattern, "bert\n")


def test_the_mixing_benchmark_runs_on_each_tagger_unless_turned_off():
    config = load(embedded())
    assert plan(config).mixing_taggers == {"minilm_upos": "minilm"}
    config["mixing"]["enabled"] = False
    p = plan(config)
    assert p.mixing_taggers == {} and any("`mixing.enabled` is false" in str(o) for o in p.omitted)
