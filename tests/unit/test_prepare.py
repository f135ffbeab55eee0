import shutil

import pytest

from headatlas.corpora.prepare import corpus_stats, prepare_treebank
from headatlas.errors import CorpusFormatError, SourceError
from tests.conftest import FIXTURES, mirror_dir

needs_mirror = pytest.mark.skipif(mirror_dir() is None, reason="corpus mirror not found: set HEADATLAS_MIRROR")


def test_user_conllu_path_and_split_filter(tmp_path):
    sentences = prepare_treebank("mine", {"format": "conllu", "path": str(FIXTURES / "formats" / "gum_style.conllu")},
                                 None, tmp_path)
    assert corpus_stats(sentences)["documents"] == 2
    with pytest.raises(CorpusFormatError, match="no sentences"):
        prepare_treebank("mine", {"format": "conllu", "keep_splits": ["test"],
                                  "path": str(FIXTURES / "formats" / "gum_style.conllu")}, None, tmp_path)


def test_empty_folder_and_missing_path(tmp_path):
    with pytest.raises(SourceError, match=r"no \*.conllu files"):
        prepare_treebank("mine", {"format": "conllu", "path": str(tmp_path)}, None, tmp_path)
    with pytest.raises(SourceError, match="does not exist"):
        prepare_treebank("mine", {"format": "conllu", "path": str(tmp_path / "nope")}, None, tmp_path)
    with pytest.raises(SourceError, match="needs a `path:`"):
        prepare_treebank("mine", {"format": "conllx"}, None, tmp_path)


@needs_mirror
@pytest.mark.embedded
def test_ewt_from_the_mirror():
    sentences = prepare_treebank("ewt", {}, mirror_dir(), mirror_dir())
    stats = corpus_stats(sentences)
    assert stats["sentences"] == 4078 and stats["words"] == 50241
    assert stats["sentences_by_split"] == {"dev": 2001, "test": 2077}


@needs_mirror
@pytest.mark.embedded
def test_split_rule_on_a_pinned_corpus_matches_mirror_relative_paths():
    rule = {"by": "file", "dev": ["en_ewt-ud-test.conllu"]}  # names as in the checksum list
    stats = corpus_stats(prepare_treebank("ewt", {"splits": rule}, mirror_dir(), mirror_dir()),
                         assigned=True)
    assert stats["sentences_by_split"] == {"dev": 2077, "unassigned": 2001}


@needs_mirror
@pytest.mark.embedded
def test_tampered_mirror_file_is_refused(tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(mirror_dir() / "ud-english-ewt", mirror / "ud-english-ewt")
    dev = mirror / "ud-english-ewt" / "en_ewt-ud-dev.conllu"
    dev.chmod(0o644)
    dev.write_text(dev.read_text().replace("\tthe\t", "\tteh\t", 1))
    with pytest.raises(SourceError, match="en_ewt-ud-dev.conllu: sha256 .* does not match"):
        prepare_treebank("ewt", {}, mirror, tmp_path / "cache")


def test_no_mirror_and_no_network_says_what_to_set(tmp_path, monkeypatch):
    import urllib.request

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(SourceError) as err:
        prepare_treebank("ewt", {}, None, tmp_path)
    message = str(err.value)
    assert "en_ewt-ud-" in message and "https://raw.githubusercontent.com/UniversalDependencies" in message
    assert "`mirror:`" in message
