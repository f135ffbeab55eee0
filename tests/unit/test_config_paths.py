"""The folders a configuration names: data/logs/results keys, and model folders the workflow builds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from headatlas.pipeline.config import ConfigError, built_models, default_config, load_config
from headatlas.pipeline.plan import plan
from tests.unit.test_config import SCHEMA, minimal


def test_folders_default_to_todays_layout():
    config = load_config(minimal(), SCHEMA)
    assert (config["data"], config["logs"], config["results"]) == ("data", "logs", "results")


def test_folders_are_config_keys():
    config = load_config({**minimal(), "data": "prep", "logs": "run-logs", "results": "out"}, SCHEMA)
    assert plan(config).results == "out"
    assert built_models(config) == ["prep/models/mpnet-base"]


def test_a_built_model_folder_need_not_exist_yet():
    config = minimal()
    config["models"]["mpnet"] = {"path": "data/models/mpnet-base"}
    load_config(config, SCHEMA)  # made by rule build_model


def test_a_mistyped_folder_under_data_models_is_named_when_the_config_loads():
    config = minimal()
    config["models"]["mpnet"] = {"path": "data/models/mpnet-bsae"}
    with pytest.raises(ConfigError, match=r"`models\.mpnet\.path`: data/models/mpnet-bsae does not exist"):
        load_config(config, SCHEMA)


def test_default_config_fills_every_default_without_checking():
    config = default_config()
    embedded = yaml.safe_load((Path(__file__).parents[2] / "config.yaml").read_text())
    assert config["patterns"]["thresholds"] == embedded["patterns"]["thresholds"] and config["logs"] == "logs"
    assert "models" not in config  # required keys are not invented
