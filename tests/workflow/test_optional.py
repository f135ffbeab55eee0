"""The analyses the tiny configuration leaves out, run for real: probing classifiers (Table 3, the
edge classifier), the honest regime of Table 1, head-type changes between two models, and head
importance beside the task model's head types and patterns (its model configured, as in
config.yaml).

The shared tiny workflow (conftest) turns them off to stay small, so they were only ever planned by
dry runs, and broken inputs of ``probes_run`` and ``importance_compare`` reached the embedded
run. Here the tiny configuration turns them on (the tiny treebank split by document, a
random-encoder twin of the tiny BERT) and Snakemake builds only what they need (``--until``).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.workflow.conftest import snakemake, tiny_config, tiny_folder

pytestmark = pytest.mark.workflow

UNTIL = ["probes_claims", "probes_weights", "syntax_honest", "headtypes_compare", "importance_compare"]


def optional_config(root) -> dict:
    config = tiny_config(root)
    config["models"]["tiny_random"] = {"path": str(root / "tiny-bert"), "random_init": True, "seed": 0}
    # The fine-tuned tagger as a configured model (as minilm_upos in config.yaml): head importance
    # is then set beside its head types and patterns.
    config["models"]["tiny_upos"] = {"path": "results/finetune/tiny/upos/model"}
    config["corpora"]["tb"]["splits"] = {"by": "document", "train": ["doc0", "doc1"], "dev": ["doc2"],
                                         "test": ["doc3"]}
    config["probes"] = {"model": "tiny", "random_model": "tiny_random", "train": "tb", "test": ["tb"],
                        "seeds": [0], "edge_train_pairs": 200}
    config["syntax"]["selection"] = {"corpus": "tb", "splits": ["train", "dev"]}
    config["syntax"]["evaluation"] = [{"corpus": "tb", "splits": ["test"]}]
    config["headtypes"] = {"compare": [["tiny", "tiny_random"]]}
    return config


@pytest.fixture(scope="module")
def optional_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("optional")
    tiny_folder(root, optional_config(root), n_docs=4)
    result = snakemake(root, "--cores", "2", "--until", *UNTIL)
    return root, result


def test_none_of_them_is_left_out(optional_run):
    root, result = optional_run
    left_out = [line for line in (result.stdout + result.stderr).splitlines() if "left out" in line]
    assert not [line for line in left_out if any(rule in line for rule in UNTIL + ["probes_"])], left_out


def test_table3_has_every_probe(optional_run):
    root, _ = optional_run
    table = pd.read_csv(root / "results" / "tiny" / "tb" / "probes" / "table3.csv")
    text = table.to_csv()
    # attention-only, attention + GloVe, and the random-encoder control
    for probe in ("attn_only", "attn_glove", "random_attn_glove"):
        assert probe in text, (probe, table)
    assert (root / "results" / "tiny" / "tb" / "probes" / "edges.csv").is_file()
    assert (root / "results" / "tiny" / "tb" / "probes" / "paper_claims.csv").is_file()
    assert (root / "results" / "tiny" / "tb" / "probes" / "attn_only_weights.csv").is_file()


def test_honest_regime_head_type_changes_and_importance_compare_are_written(optional_run):
    root, _ = optional_run
    honest = list((root / "results").rglob("honest.csv"))
    changes = list((root / "results").rglob("changes_from_tiny.csv"))
    assert honest and all(len(pd.read_csv(p)) for p in honest), honest
    assert changes and all(len(pd.read_csv(p)) for p in changes), changes
    compare = pd.read_csv(root / "results" / "tiny_upos" / "importance" / "compare.csv")
    assert {"type", "pattern", "output"} <= set(compare["by"]), compare  # types, patterns, dormancy
    # every head once per grouping: the tiny tagger's 2 x 2 heads
    assert (compare.groupby("by")["heads"].sum() == 4).all(), compare


def test_a_second_run_has_nothing_to_do(optional_run):
    root, _ = optional_run
    from tests.workflow.test_pipeline import planned_jobs

    assert planned_jobs(snakemake(root, "-n", "--cores", "2", "--until", *UNTIL)) == {}
