"""What a model can do, read from config.json and safetensors headers when the config loads."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from headatlas.encoders import capabilities as caps_module
from headatlas.encoders import layouts
from headatlas.encoders.capabilities import (NORM_LAYOUTS, capabilities, norm_layout_of, safetensors_names,
                                    usable_length)
from headatlas.pipeline.config import ConfigError, load_config
from headatlas.pipeline.plan import plan
from tests.conftest import ROOT, make_tiny_encoder

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def tiny_mpnet(folder: Path, architectures=("MPNetForMaskedLM",)) -> Path:
    """A bare MPNetModel and its tokenizer (<s> A </s></s> B </s>), saved with a config.json that
    names MPNetForMaskedLM (as all-mpnet-base-v2's does): no lm_head tensor in the checkpoint."""
    import torch
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizer

    from tests.conftest import VOCAB

    vocab = {w: i for i, w in enumerate(["<s>", "<pad>", "</s>", "<unk>"] + VOCAB + ["<mask>"])}  # pad 1
    MPNetTokenizer(vocab=vocab, do_lower_case=True, bos_token="<s>", eos_token="</s>", cls_token="<s>",
                   sep_token="</s>", pad_token="<pad>", unk_token="<unk>",
                   mask_token="<mask>").save_pretrained(folder)
    torch.manual_seed(0)
    MPNetModel(MPNetConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=66,
                           pad_token_id=vocab["<pad>"])).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = list(architectures)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("capabilities")
    return {"mpnet": tiny_mpnet(root / "mpnet"),
            "distilbert": make_tiny_encoder(root / "distilbert", "distilbert", head="mlm"),
            "electra": make_tiny_encoder(root / "electra", "electra"),
            "bert": make_tiny_encoder(root / "bert", "bert-uncased"),
            "modernbert": make_tiny_encoder(root / "modernbert", "modernbert", head="mlm"),
            "modernbert_tagger": modernbert_tagger(root / "modernbert-tagger")}


def modernbert_tagger(folder: Path) -> Path:
    from transformers import AutoModelForTokenClassification

    base = make_tiny_encoder(folder, "modernbert")
    AutoModelForTokenClassification.from_pretrained(base, num_labels=3).save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def fresh_cache():
    caps_module.clear_cache()
    yield
    caps_module.clear_cache()


def config_with(folders: dict, names: list[str], **top) -> dict:
    config = {"models": {n: {"path": str(folders[n])} for n in names},
              "corpora": {"wiki": {"kind": "segments"}},
              "surface": {"corpus": "wiki"}, "extraction": {"max_length": 64}}
    config.update(top)
    return config


def test_the_module_stays_free_of_torch_and_transformers():
    import subprocess

    code = ("import sys, headatlas.encoders.capabilities, headatlas.pipeline.config; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_safetensors_header_read_by_hand(tmp_path):
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "a.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0\0\0")
    assert safetensors_names(path) == ["a.weight"]


def test_capabilities_of_each_family(folders):
    mpnet = capabilities({"path": str(folders["mpnet"])})
    assert mpnet.model_type == "mpnet" and mpnet.norm_layout == "MPNet" and mpnet.norms
    assert mpnet.tensors and mpnet.masked_lm_head is False  # whatever architectures says
    assert mpnet.architectures == ("MPNetForMaskedLM",) and "MPNetForMaskedLM" in mpnet.masked_lm_reason()
    assert mpnet.token_types is False and mpnet.max_length == 64 and mpnet.qa_head is False
    distil = capabilities({"path": str(folders["distilbert"])})
    assert distil.norm_layout == "DistilBERT" and distil.masked_lm_head is True
    assert distil.token_types is False and distil.max_length == 64
    electra = capabilities({"path": str(folders["electra"])})
    assert electra.norm_layout == "BERT" and electra.masked_lm_head is False and electra.token_types is True
    modern = capabilities({"path": str(folders["modernbert"])})  # no type table; RoPE: no offset
    assert modern.norm_layout == "ModernBERT" and modern.masked_lm_head is True
    assert modern.token_types is False and modern.max_length == 64
    # its task models share the MLM head's `head.dense` (a tagger is no masked LM)
    tagger = capabilities({"path": str(folders["modernbert_tagger"])})
    assert tagger.norm_layout == "ModernBERT" and tagger.masked_lm_head is False


def test_unknown_where_nothing_can_be_read(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    unknown = capabilities({"hub": "nobody/nothing"})
    assert unknown.norms is None and unknown.masked_lm_head is None and unknown.max_length is None


def test_a_hub_model_is_read_from_the_local_cache(folders, tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--org--mpnet" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (snapshot / name).write_bytes((folders["mpnet"] / name).read_bytes())
    (tmp_path / "hub" / "models--org--mpnet" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--mpnet" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    found = capabilities({"hub": "org/mpnet"})
    assert found.model_type == "mpnet" and found.masked_lm_head is False


def test_the_layout_table_has_one_row_per_family():
    assert [row.name for row in NORM_LAYOUTS] == ["BERT", "RoBERTa-PreLayerNorm", "DistilBERT", "ALBERT",
                                                   "DeBERTa-v2", "MPNet", "ModernBERT"]
    assert norm_layout_of("deberta") is None  # DeBERTa v1's fused in_proj has no separate W_V
    assert usable_length({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}) == 512


def without(*names: str) -> tuple:
    """The layout table as if the families ``names`` had no row."""
    return tuple(row for row in NORM_LAYOUTS if row.name not in names)


def test_default_weightings_leave_norm_out_with_the_reason(folders, monkeypatch):
    monkeypatch.setattr(layouts, "NORM_LAYOUTS", without("MPNet", "DistilBERT"))
    config = load_config(config_with(folders, ["mpnet", "electra", "distilbert"]), SCHEMA)
    result = plan(config)
    assert result.weightings == {"mpnet": ["attention"], "electra": ["attention", "norm"],
                                 "distilbert": ["attention"]}
    lines = [str(o) for o in result.omitted]
    left = [line for line in lines if "norm-weighted views" in line and "mpnet" in line]
    assert left and "'mpnet' has no known attention layout" in left[0] and "weightings" in left[0]


def test_every_family_keeps_the_norm_view_by_default(folders):
    config = load_config(config_with(folders, ["mpnet", "electra", "distilbert"]), SCHEMA)
    assert all(views == ["attention", "norm"] for views in plan(config).weightings.values())


def test_an_explicit_norm_is_refused_naming_the_key(folders, monkeypatch):
    monkeypatch.setattr(layouts, "NORM_LAYOUTS", without("MPNet"))
    config = config_with(folders, ["mpnet", "electra"])
    config["models"]["mpnet"]["weightings"] = ["attention", "norm"]
    with pytest.raises(ConfigError) as err:
        load_config(config, SCHEMA)
    assert "`models.mpnet.weightings`" in str(err.value) and "[attention]" in str(err.value)


def test_auto_loss_follows_the_tensors_not_architectures(folders):
    config = load_config(config_with(folders, ["mpnet", "electra", "distilbert", "bert"]), SCHEMA)
    result = plan(config)
    assert result.gradient_losses == {"mpnet": "contrastive", "electra": "contrastive",
                                      "distilbert": "mlm", "bert": "contrastive"}
    lines = [str(o) for o in result.omitted if "masked-LM loss" in str(o)]
    # MPNet's config names MPNetForMaskedLM, ELECTRA's discriminator ElectraForPreTraining: both said
    # to have what they lack; the plain BertModel promised nothing.
    assert any("mpnet" in line and "no masked-LM head weights" in line for line in lines)
    assert not any("bert's" in line for line in lines)


def test_an_explicit_mlm_loss_is_refused_naming_the_key(folders):
    config = config_with(folders, ["mpnet", "distilbert"], gradients={"loss": "mlm"})
    with pytest.raises(ConfigError) as err:
        load_config(config, SCHEMA)
    message = str(err.value)
    assert "`gradients.loss`" in message and "mpnet" in message and "distilbert:" not in message
    ok = config_with(folders, ["distilbert"], gradients={"loss": "mlm"})
    assert plan(load_config(ok, SCHEMA)).gradient_losses == {"distilbert": "mlm"}


def test_a_max_length_the_model_cannot_take_is_refused_at_load(folders):
    config = config_with(folders, ["mpnet"], extraction={"max_length": 65})
    with pytest.raises(ConfigError, match="`extraction.max_length`: 65 tokens .* at most 64"):
        load_config(config, SCHEMA)


def test_the_plan_of_a_hub_model_out_of_reach_is_unchanged(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "none"))
    config = load_config({"models": {"m": {"hub": "nobody/nothing"}}, "corpora": {"wiki": {"kind": "segments"}},
                          "surface": {"corpus": "wiki"}, "gradients": {"loss": "mlm"}}, SCHEMA)
    result = plan(config)
    assert result.weightings == {"m": ["attention", "norm"]} and result.gradient_losses == {"m": "mlm"}


SEGMENTS = [(["the", "cat", "sat", "on", "the", "mat", "."], ["it", "was", "happy", "."]),
            (["she", "saw", "a", "big", "red", "house", "."], ["he", "saw", "the", "dog", ","]),
            (["the", "dog", "walked", "."], ["a", "bird", "sat", "on", "the", "house", "."])]


def test_no_job_of_these_models_fails_for_a_reason_the_config_could_know(folders, tmp_path):
    """What the workflow runs per model after extraction (every view the plan keeps, gradient
    importance with the plan's loss), on tiny MPNet-, DistilBERT- and ELECTRA-like models."""
    from headatlas.analyses.base import run_analysis
    from headatlas.analyses.gradients import gradient_importance, load_for_loss
    from headatlas.analyses.surface import Entropy
    from headatlas.corpora.records import Sentence
    from headatlas.encoders.extract import extract
    from headatlas.encoders.models import load_model

    names = ["mpnet", "distilbert", "electra"]
    result = plan(load_config(config_with(folders, names), SCHEMA))
    segments = [Sentence(id=f"s{i}", words=a, words_b=b) for i, (a, b) in enumerate(SEGMENTS)]
    for name in names:
        spec = {"path": str(folders[name])}
        store = tmp_path / f"{name}.h5"
        extract(load_model(name, spec, device="cpu"), segments, store, max_length=64, progress=False,
                norms=result.norms(name))
        for view in result.weightings[name]:
            assert len(run_analysis(Entropy, store, progress=False, weighting=view).table) == 4
        loaded, loss = load_for_loss(name, spec, result.gradient_losses[name], device="cpu")
        assert loss == result.gradient_losses[name]
        heads = gradient_importance(loaded, loss, segments, max_length=64, batch_size=2, progress=False).table
        assert len(heads) == 4
