"""What every rule's script does first (headatlas.pipeline.jobs): refuse another job's store."""

from types import SimpleNamespace

import pytest

from headatlas.errors import StoreError
from headatlas.pipeline.jobs import check_stores
from tests.unit.test_store import write


class Named(dict):
    """A Snakemake Namedlist's face: items() and get()."""


def job(stores, model="m", corpus="c"):
    return SimpleNamespace(input=Named(stores=[str(p) for p in stores]),
                           wildcards=Named(model=model, corpus=corpus))


def test_a_store_of_another_model_or_corpus_is_refused_naming_both(tmp_path):
    path = tmp_path / "shard-0.h5"
    write(path, [4, 6])  # model "m", corpus "c"
    check_stores(job([path]))
    with pytest.raises(StoreError, match=r"written for model 'm' on corpus 'c', but this job "
                                         r"analyses model 'other' on 'c'.*--force"):
        check_stores(job([path], model="other"))
    with pytest.raises(StoreError, match="on corpus 'c', but this job analyses model 'm' on 'gum'"):
        check_stores(job([path], corpus="gum"))


def test_a_job_without_stores_or_without_model_and_corpus_is_not_checked(tmp_path):
    path = tmp_path / "shard-0.h5"
    write(path, [4])
    check_stores(SimpleNamespace(input=Named(), wildcards=Named(model="m", corpus="c")))
    check_stores(SimpleNamespace(input=Named(stores=[str(path)]), wildcards=Named(model="other")))
