"""Every file a rule reads is an input: editing a user's corpus, or adding a file to its folder,
re-prepares it (and so reruns what was built from it)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.conftest import FIXTURES, make_tiny_model
from tests.workflow.conftest import copy_built, copy_workflow, snakemake, write_treebank

pytestmark = pytest.mark.workflow
TARGET = "data/corpora/tb.jsonl"


def planned(result) -> bool:
    return "prepare_treebank" in result.stdout.split("Job stats:")[-1]


@pytest.fixture(scope="module")
def prepared_once(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    copy_workflow(root)
    make_tiny_model(root / "tiny-bert")
    (root / "tb").mkdir()
    write_treebank(root / "tb" / "a.conllu", n_docs=1, seed=1)
    config = {"models": {"tiny": {"path": "tiny-bert"}},  # relative: a copy reads its own files
              "extraction": {"max_length": 64},  # the tiny model's position table
              "corpora": {"tb": {"kind": "treebank", "format": "conllu", "path": "tb"},
                          "wiki": {"kind": "segments", "path": str(FIXTURES / "tiny" / "wiki.json")}}}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake(root, "--cores", "1", TARGET)
    return root


@pytest.fixture
def folder_corpus(prepared_once, tmp_path):
    """A workflow whose treebank is a folder of CoNLL-U files, prepared once (a copy per test)."""
    root = copy_built(prepared_once, tmp_path / "copy")
    assert not planned(snakemake(root, "-n", "--cores", "1", TARGET))
    return root


def test_editing_a_corpus_file_re_prepares_it(folder_corpus):
    path = folder_corpus / "tb" / "a.conllu"
    path.write_text(path.read_text().replace("# text = ", "# text =  ", 1))  # any edit
    assert planned(snakemake(folder_corpus, "-n", "--cores", "1", TARGET))


def test_adding_a_file_to_the_corpus_folder_re_prepares_it(folder_corpus):
    shutil.copy(folder_corpus / "tb" / "a.conllu", folder_corpus / "tb" / "b.conllu")
    assert planned(snakemake(folder_corpus, "-n", "--cores", "1", TARGET))


def test_editing_the_wikipedia_file_re_prepares_the_segments(folder_corpus):
    wiki = folder_corpus / "wiki.json"
    shutil.copy(FIXTURES / "tiny" / "wiki.json", wiki)
    config = yaml.safe_load((folder_corpus / "config.yaml").read_text())
    config["corpora"]["wiki"]["path"] = str(wiki)
    (folder_corpus / "config.yaml").write_text(yaml.safe_dump(config))
    target = "data/corpora/wiki/tiny.jsonl"
    snakemake(folder_corpus, "--cores", "1", target)
    wiki.write_text(wiki.read_text().replace("the", "a", 1))
    assert "prepare_segments" in snakemake(folder_corpus, "-n", "--cores", "1", target).stdout
