"""The task registry: every task's code resolves, its settings match its code, it stays light."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import headatlas
from headatlas.errors import HeadAtlasError
from headatlas.tasks import SETTINGS, TASKS, Task, get_task, load, select, task_of_metric

SCHEMA = Path(headatlas.__file__).parent / "data" / "config.schema.yaml"


def ablation_schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"]["ablation"]["properties"]


def keywords(function) -> set[str]:
    return {p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_names_code_that_exists_and_takes_its_settings(name):
    task = TASKS[name]
    assert task.name == name and task.metric in task.metrics
    reader, evaluator = load(task.reader), load(task.evaluator)
    assert callable(reader) and callable(evaluator)
    # The evaluator takes (model, tokenizer, records) and, as keywords, the settings the task
    # names and every entry of its own options section of the config.
    positional = [p.name for p in inspect.signature(evaluator).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) == 3 and positional[:2] == ["model", "tokenizer"]
    takes = keywords(evaluator)
    assert set(task.settings) <= takes, f"{task.evaluator} lacks {set(task.settings) - takes}"
    schema = ablation_schema()
    if task.options:  # every entry of its section is the evaluator's, or the reader's
        section = set(schema[task.options]["properties"])
        assert section - set(task.reader_options) <= takes
        assert set(task.reader_options) <= section & set(inspect.signature(reader).parameters)
    assert task.data_option in schema
    import transformers

    assert hasattr(transformers, task.model_class)


def test_the_config_offers_exactly_the_registered_tasks():
    assert ablation_schema()["task"]["enum"] == list(TASKS)


def test_headline_metrics_name_their_task():
    metrics = [task.metric for task in TASKS.values()]
    assert len(set(metrics)) == len(metrics)  # a grid table names no task, its metric does
    assert task_of_metric("f1") is TASKS["squad"] and task_of_metric("accuracy") is TASKS["upos"]
    assert task_of_metric("exact_match") is None


def test_importing_the_registry_loads_neither_torch_nor_transformers():
    code = ("import sys, headatlas.tasks; heavy = sorted(m for m in ('torch', 'transformers', 'pandas') "
            "if m in sys.modules); print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_rerun_tool_sees_the_code_the_registry_names():
    from headatlas.pipeline.codedeps import imported_modules

    src = Path(headatlas.__file__).parents[1]
    named = imported_modules(src / "headatlas" / "tasks" / "__init__.py", src)
    for task in TASKS.values():
        assert {task.reader.split(":")[0], task.evaluator.split(":")[0]} <= named


def test_lookup_names_and_settings():
    assert get_task("upos") is TASKS["upos"] and get_task(TASKS["squad"]) is TASKS["squad"]
    with pytest.raises(HeadAtlasError, match=r"unknown task 'sqaud' \(did you mean 'squad'\?\)"):
        get_task("sqaud")
    assert TASKS["upos"].task_model("minilm") == "minilm_upos"  # fine-tuned by the workflow
    assert TASKS["squad"].task_model("bert_squad") == "bert_squad"
    settings = {"corpus": "gum", "split": "test", "batch_size": 8}
    assert select(("corpus", "max_length"), settings) == {"corpus": "gum"}  # an unset one: the default
    assert select(("source",), {"source": "x"}, {"stride": 8}) == {"source": "x", "stride": 8}
    with pytest.raises(HeadAtlasError, match=r"unknown task setting\(s\) \['max_lenght'\] \(did you mean "
                                              "'max_length'\\?\\)"):
        select(("max_length",), {"max_lenght": 3})
    assert set(SETTINGS) >= {s for task in TASKS.values() for s in task.settings}
    with pytest.raises(ValueError, match="not a 'module:function'"):
        load("headatlas.tasks.upos")


def test_untrained_floor_and_its_words_by_hand():
    squad, upos = TASKS["squad"], TASKS["upos"]
    assert squad.untrained({"exact_match": 5.0, "f1": 25.0}) == ["exact_match 5.00 < 10"]
    assert squad.untrained({"exact_match": 0.0, "f1": 3.0}) == ["exact_match 0.00 < 10", "f1 3.00 < 20"]
    assert squad.untrained({"exact_match": 10.0, "f1": 20.0}) == []  # at the floor: trained
    assert squad.untrained({"f1": 3.0}) == ["f1 3.00 < 20"]  # only the metrics given are judged
    assert upos.untrained({"accuracy": 3.0}) == []  # no floor (the ablation's own floors judge it)
    assert squad.floor_text() == "EM 10 or F1 20" and squad.floor_text(["f1"]) == "F1 20"
    assert squad.baseline_text() == "the word-overlap baseline of SQuAD v1.1, EM 13.2 / F1 20.2"
    assert squad.baseline_text(["f1"]) == "the word-overlap baseline of SQuAD v1.1, F1 20.2"


def test_a_task_checks_itself():
    fields = dict(name="x", label="X", metric="f1", metrics=("f1",), model_class="AutoModel", fine_tuned=False,
                  data_option="x_path", reader="m:r", evaluator="m:e", settings=("source",))
    assert Task(**fields).options is None
    with pytest.raises(ValueError, match="headline metric 'acc' not in"):
        Task(**{**fields, "metric": "acc"})
    with pytest.raises(ValueError, match="unknown settings"):
        Task(**{**fields, "settings": ("sorce",)})
