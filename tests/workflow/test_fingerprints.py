"""Content, not mtimes (issue 21 items 2 and 5): a model folder retrained in place, or a corpus file
edited and given its old mtime (cp -p, rsync -a), reruns what it feeds; touching them does not."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import make_tiny_model
from tests.workflow.conftest import copy_built, snakemake, tiny_folder

pytestmark = pytest.mark.workflow

TARGET = "results/tiny/tb/corpus_summary.csv"  # prepare_treebank -> extract -> corpus_summary


def planned(root: Path) -> set[str]:
    out = snakemake(root, "-n", "--cores", "1", TARGET).stdout
    table = out.split("Job stats:")[-1].split("Reasons:")[0] if "Job stats:" in out else ""
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.M)} - {"total"}


def keep_mtimes(paths):
    return {p: (p.stat().st_atime_ns, p.stat().st_mtime_ns) for p in paths}


def restore(stamps):
    for path, (atime, mtime) in stamps.items():
        os.utime(path, ns=(atime, mtime))


@pytest.fixture(scope="module")
def built_once(tmp_path_factory):
    root = tmp_path_factory.mktemp("fingerprints")
    tiny_folder(root, {  # paths relative to the folder, so that a copy reads its own files
        "mirror": None, "models": {"tiny": {"path": "tiny-bert"}},
        "corpora": {"tb": {"kind": "treebank", "format": "conllu", "path": "tb.conllu"}},
        "extraction": {"max_length": 48, "batch_size": 4, "threads": 1}, "surface": {"corpus": None}})
    snakemake(root, "--cores", "1", TARGET)
    assert planned(root) == set()
    return root


@pytest.fixture
def built(built_once, tmp_path):
    """A copy of the built folder for each test to edit: mtimes and Snakemake's records kept."""
    root = copy_built(built_once, tmp_path / "copy")
    assert planned(root) == set()
    return root


def test_a_model_retrained_into_its_folder_reruns_its_extraction(built):
    folder = built / "tiny-bert"
    stamps = keep_mtimes(list(folder.iterdir()))
    make_tiny_model(folder, layers=2, heads=2, seed=1)  # other weights, same files
    restore(stamps)  # as if copied with its old mtimes
    assert {"extract", "corpus_summary"} <= planned(built)
    assert "prepare_treebank" not in planned(built)


def test_a_corpus_edited_with_its_old_mtime_is_prepared_again(built):
    corpus = built / "tb.conllu"
    stamps = keep_mtimes([corpus])
    corpus.write_text(corpus.read_text().replace("\tcat\t", "\tdog\t"))
    restore(stamps)
    assert "prepare_treebank" in planned(built)


def test_touching_without_a_change_reruns_nothing(built):
    for path in [built / "tb.conllu", *(built / "tiny-bert").iterdir()]:
        os.utime(path)  # newer mtime, same content
    assert planned(built) == set()
