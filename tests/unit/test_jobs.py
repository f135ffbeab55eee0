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


def test_a_long_job_s_progress_reaches_the_console_once_a_minute():
    import io

    from headatlas.pipeline.jobs import ConsoleProgress

    now = [0.0]
    log, console = io.StringIO(), io.StringIO()
    stream = ConsoleProgress(log, console, "finetune_upos model=minilm", clock=lambda: now[0])
    bar = "\repoch 1/3:  45%|####5     | 9/20 [01:02<01:16,  7.1s/it]"
    stream.write(bar)  # at once: only the log
    now[0] = 30.0
    stream.write("2026 INFO rule: a log line, no bar\n")
    now[0] = 61.0
    stream.write("a log line, no bar\n")  # a minute on, but nothing to report
    stream.write(bar)
    now[0] = 90.0
    stream.write(bar.replace("45%", "50%"))  # within the minute: log only
    assert log.getvalue().count("45%") == 2 and "50%" in log.getvalue()
    assert console.getvalue() == "[finetune_upos model=minilm] epoch 1/3: 45% 9/20 [01:02<01:16,  7.1s/it]\n"
