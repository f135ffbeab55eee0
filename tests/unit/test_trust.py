"""Trust: no checkpoint runs code of its own, nothing is unpickled beyond plain weights.

Every loader goes through :mod:`headatlas.encoders.models` (``trust_remote_code=False``);
a checkpoint whose config asks for its own code is refused before transformers
could ask "run the custom code? [y/N]" inside a job; a pickle torch refuses is
an error suggesting safetensors; probe files are read with ``weights_only``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from headatlas.corpora.records import Sentence
from headatlas.errors import HeadAtlasError, ModelError
from headatlas.encoders.models import (from_pretrained, load_config, load_masked_lm, load_model, load_tokenizer,
                              masked_lm_problem)
from tests.conftest import make_tiny_encoder


TAGGED = [Sentence(id=f"s{i}", doc=f"d{i}", split=split, words=["the", "cat"], upos=["DET", "NOUN"])
          for i, split in enumerate(["train", "dev", "test"])]


class Payload:
    """Unpickling this creates ``marker``: proof that a pickle ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def copy_with_config(source: Path, target: Path, filename: str = "config.json", **changes) -> Path:
    shutil.copytree(source, target)
    config = json.loads((target / filename).read_text())
    (target / filename).write_text(json.dumps({**config, **changes}))
    return target


@pytest.fixture()
def custom_code(tiny_model_dir, tmp_path) -> Path:
    """A checkpoint asking for its own modelling code, as hub repositories with custom code do."""
    return copy_with_config(tiny_model_dir, tmp_path / "custom", model_type="xbert",
                            auto_map={"AutoConfig": "configuration_x.XConfig", "AutoModel": "modeling_x.XModel"})


def test_auto_map_is_refused_by_every_loader(custom_code):
    from headatlas.tasks import upos
    from headatlas.interventions import grid

    spec = {"path": str(custom_code)}
    reason = rf"model 'x': {custom_code} is refused: its config.json has an `auto_map` \(AutoConfig, AutoModel\)"
    for load in (lambda: load_tokenizer("x", spec), lambda: load_model("x", spec, device="cpu"),
                 lambda: load_config("x", spec), lambda: load_masked_lm("x", spec),
                 lambda: load_model("x", {**spec, "random_init": True}, device="cpu")):
        with pytest.raises(ModelError, match=reason):
            load()
    with pytest.raises(ModelError, match="model_type 'xbert' is not one transformers knows"):
        load_model("x", spec, device="cpu")
    with pytest.raises(ModelError, match=f"{custom_code} is refused: .*auto_map"):  # task models too
        grid.load_task_model("upos", str(custom_code), device="cpu")
    with pytest.raises(ModelError, match=f"{custom_code} is refused: .*auto_map"):
        upos.fine_tune(str(custom_code), TAGGED, progress=False)


def test_unknown_model_type_or_custom_tokenizer_is_refused(tiny_model_dir, tmp_path):
    unknown = copy_with_config(tiny_model_dir, tmp_path / "unknown", model_type="nobert")
    with pytest.raises(ModelError, match=rf"{unknown} is refused: its model_type 'nobert' is not one "
                                         "transformers knows, so only the checkpoint's own code"):
        load_model("u", {"path": str(unknown)}, device="cpu")
    custom_tok = copy_with_config(tiny_model_dir, tmp_path / "tok", "tokenizer_config.json",
                                  auto_map={"AutoTokenizer": ["tok_x.XTokenizer", None]})
    with pytest.raises(ModelError, match=r"its tokenizer_config.json has an `auto_map` \(AutoTokenizer\)"):
        load_tokenizer("t", {"path": str(custom_tok)})


def test_trust_remote_code_cannot_be_switched_on(tiny_model_dir):
    from transformers import AutoModel

    with pytest.raises(ModelError, match="never allowed"):
        from_pretrained(AutoModel, str(tiny_model_dir), trust_remote_code=True)


def test_refused_pickle_suggests_safetensors_and_runs_nothing(tiny_model_dir, tmp_path):
    from transformers import AutoModel

    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").unlink()
    weights = dict(AutoModel.from_pretrained(tiny_model_dir).state_dict())
    weights["payload"] = Payload(tmp_path / "ran")
    torch.save(weights, folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match=r"model 'p' \(.*pickled\): torch refuses to unpickle its weights "
                                         r"safely(.|\n)*convert it to safetensors"):
        load_model("p", {"path": str(folder)}, device="cpu")
    assert not (tmp_path / "ran").exists()


def test_probe_files_are_read_without_running_pickles(tmp_path):
    from headatlas.analyses.probes import attn_only_weights

    torch.save({"probe": "attn_only", "n_layers": 1, "n_heads": 1, "state": Payload(tmp_path / "ran")},
               tmp_path / "probe.pt")
    with pytest.raises(HeadAtlasError, match="not a probe file written by headatlas"):
        attn_only_weights(tmp_path / "probe.pt")
    assert not (tmp_path / "ran").exists()


# --- masked-LM heads (the gradients analysis calls these) ------------------------------------

def test_masked_lm_problem_names_the_class():
    from transformers import BertConfig, ElectraConfig

    assert masked_lm_problem(BertConfig(architectures=["BertForMaskedLM"])) is None
    assert masked_lm_problem(BertConfig(architectures=["BertForPreTraining"])) is None  # MLM + NSP
    assert masked_lm_problem(BertConfig(architectures=["BertModel"])) == (
        "the checkpoint was saved from BertModel, which has no masked-LM head")
    assert masked_lm_problem(ElectraConfig(architectures=["ElectraForPreTraining"])) == (
        "the checkpoint was saved from ElectraForPreTraining, which has no masked-LM head "
        "(ElectraForPreTraining is ELECTRA's replaced-token-detection discriminator)")


@pytest.mark.parametrize("family", ["roberta", "distilbert", "albert", "deberta-v2", "electra", "modernbert"])
def test_load_masked_lm_takes_a_trained_head_and_refuses_a_bare_encoder(family, tmp_path):
    with_head = make_tiny_encoder(tmp_path / "mlm", family, head="mlm")
    encoder = load_model("e", {"path": str(with_head)}, device="cpu").model
    mlm = load_masked_lm("m", {"path": str(with_head)}, encoder=encoder)
    assert type(mlm).__name__.endswith("ForMaskedLM") and getattr(mlm, mlm.base_model_prefix) is encoder
    bare = make_tiny_encoder(tmp_path / "bare", family)
    bare_class = loaded_architecture(bare)
    with pytest.raises(ModelError, match=rf"model 'b': a masked-LM loss needs a trained masked-LM head, "
                                         rf"but the checkpoint was saved from {bare_class}"):
        load_masked_lm("b", {"path": str(bare)})


def loaded_architecture(folder: Path) -> str:
    return json.loads((folder / "config.json").read_text())["architectures"][0]
