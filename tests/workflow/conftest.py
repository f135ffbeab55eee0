"""A tiny but complete copy of the workflow in a temp folder: tiny random BERT and RoBERTa, tiny corpora."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, make_tiny_encoder, make_tiny_model

SNAKEMAKE = [sys.executable, "-m", "snakemake"]
RELS = ["det", "amod", "nsubj", "obj", "case", "nmod:poss", "advmod", "compound"]
TAGS = {"the": "DT", "a": "DT", "cat": "NN", "dog": "NN", "mat": "NN", "house": "NN", "bird": "NN",
        "sat": "VBD", "saw": "VBD", "was": "VBD", "big": "JJ", "red": "JJ", "happy": "JJ",
        "he": "PRP", "she": "PRP", "it": "PRP", "on": "IN", "and": "CC"}


def write_treebank(path: Path, n_docs: int = 3, per_doc: int = 6, seed: int = 0) -> None:
    """Random valid trees over the tiny vocabulary, with one coreferent pronoun chain per doc."""
    rng = random.Random(seed)
    lines = []
    for d in range(n_docs):
        lines.append(f"# newdoc id = doc{d}")
        for s in range(per_doc):
            words = [rng.choice(sorted(TAGS)) for _ in range(rng.randint(3, 9))]
            root = rng.randrange(len(words))
            heads = [0] * len(words)
            for i in range(len(words)):
                if i != root:  # attach to root or an earlier-attached word: always a tree
                    heads[i] = rng.choice([root] + [j for j in range(i) if j != root]) + 1
            lines += [f"# sent_id = doc{d}-{s + 1}", f"# text = {' '.join(words)}"]
            for i, word in enumerate(words):
                rel = "root" if heads[i] == 0 else rng.choice(RELS)
                misc = "Entity=(1)" if i == 0 else "_"
                lines.append(f"{i + 1}\t{word}\t{word}\tX\t{TAGS[word]}\t_\t{heads[i]}\t{rel}\t_\t{misc}")
            lines.append("")
    path.write_text("\n".join(lines) + "\n")


def tiny_config(root: Path) -> dict:
    return {
        "mirror": None,
        # A second family: byte-level BPE, <s> A </s></s> B </s>, no token types, positions offset by 2.
        "models": {"tiny": {"path": str(root / "tiny-bert")}, "tiny_roberta": {"path": str(root / "tiny-roberta")}},
        "corpora": {
            "wikipedia": {"kind": "segments", "path": str(FIXTURES / "tiny" / "wiki.json"),
                          "n_segments": 6, "seed": 0},
            "tb": {"kind": "treebank", "format": "conllu", "path": str(root / "tb.conllu")},
            "tb_docs": {"kind": "documents", "from": "tb"},
            "tb_windows": {"kind": "documents", "from": "tb", "cover": "windows", "stride": 16},
        },
        "extraction": {"max_length": 48, "batch_size": 4, "threads": 1},
        "surface": {"corpus": "wikipedia"},
        "syntax": {"key_relations": ["det", "obj", "nmod:poss", "aux:pass"]},  # aux:pass: absent -> note
        "finetune": {"models": ["tiny"], "corpus": "tb", "max_steps": 4, "batch_size": 4,
                     "eval_every": 2, "max_length": 48, "threads": 1},
        "ablation": {"task": "upos", "model": "tiny", "batch_size": 8, "threads": 1},
        "patterns": {"corpora": ["wikipedia", "tb"]},  # labels: the packaged MiniLM maps
        "importance": {"seeds": [0, 1], "max_examples": 12, "batch_size": 8, "threads": 1,
                       "bootstrap": {"n": 100, "seed": 0}},
        "plots": {"formats": ["svg", "pdf"]},  # every figure also as PDF, and caption-free
    }


def copy_workflow(target: Path) -> None:
    """The workflow's own files, so edits in the test never touch the repository."""
    for name in ("Snakefile", "workflow", "profiles", "envs", "src"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(SNAKEMAKE + ["--directory", str(workdir), "--snakefile",
                                         str(workdir / "Snakefile"), *args],
                            capture_output=True, text=True, cwd=workdir)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def tiny_folder(root: Path, config: dict | None = None, n_docs: int = 3) -> Path:
    """``root`` with the workflow, the tiny models and treebank, and ``config`` (default: the tiny one)."""
    copy_workflow(root)
    make_tiny_model(root / "tiny-bert", layers=2, heads=2)
    make_tiny_encoder(root / "tiny-roberta", "roberta", layers=2, heads=2)
    write_treebank(root / "tb.conllu", n_docs=n_docs)
    (root / "config.yaml").write_text(yaml.safe_dump(config or tiny_config(root)))
    return root


@pytest.fixture(scope="session")
def tiny_workflow(tmp_path_factory) -> Path:
    """A folder with the workflow, a tiny config, and every output built once."""
    root = tiny_folder(tmp_path_factory.mktemp("workflow"))
    snakemake(root, "--cores", "2")
    return root
