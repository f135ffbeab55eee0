"""A tiny but complete copy of the workflow in a temp folder: tiny random BERT and RoBERTa, tiny corpora."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from tests.conftest import ROOT, make_tiny_encoder

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


TOY = ROOT / ".test"  # the toy configuration a user runs by hand (snakemake --directory .test)


def tiny_config(root: Path) -> dict:
    """`.test/config.yaml` with its files in ``root`` (tiny_folder copies them there), plus what
    the workflow tests check on top of it: a second family (byte-level BPE, <s> A </s></s> B </s>,
    no token types, positions offset by 2), documents cut into windows, a key relation absent
    from the treebank (a note), one thread per job and every figure also as PDF."""
    config = yaml.safe_load((TOY / "config.yaml").read_text())
    config["models"]["tiny"]["path"] = str(root / "tiny-bert")
    config["models"]["tiny_roberta"] = {"path": str(root / "tiny-roberta")}
    corpora = config["corpora"]
    corpora["wikipedia"]["path"] = str(TOY / "corpora" / "wiki.json")  # one path: tables record it
    corpora["tb"]["path"] = str(root / "tb.conllu")
    corpora["tb_windows"] = {"kind": "documents", "from": "tb", "cover": "windows", "stride": 16}
    config["syntax"]["key_relations"].append("aux:pass")
    for section in ("extraction", "finetune", "ablation", "importance"):
        config[section]["threads"] = 1
    config["plots"] = {"formats": ["svg", "pdf"]}  # labels of patterns: the packaged MiniLM maps
    return config


def tiny_run_config(root: Path) -> dict:
    """:func:`tiny_config` plus what the shared tiny run (:func:`tiny_workflow`) checks on top: a
    third family, ModernBERT (pre-LayerNorm, RoPE, a fused Wqkv, its second layer a sliding window
    of +-4 tokens), with every analysis and a fine-tuned tagger. RoBERTa there runs what is its
    family's own (surface tables in both views, Table 1), so the run stays the size it was."""
    config = tiny_config(root)
    config["models"]["tiny_roberta"]["analyses"] = ["surface", "syntax"]
    config["models"]["tiny_modernbert"] = {"path": str(root / "tiny-modernbert")}
    config["finetune"]["models"].append("tiny_modernbert")
    return config


def copy_workflow(target: Path) -> None:
    """The workflow's own files, so edits in the test never touch the repository."""
    for name in ("Snakefile", "workflow", "profiles", "envs", "src"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)


def copy_built(root: Path, target: Path) -> Path:
    """A copy of a built workflow folder (paths in its config relative to it): every file with its
    mtime, and Snakemake's records, so the copy plans what the original would."""
    shutil.copytree(root, target, symlinks=True)  # copy2: mtimes kept
    return target


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
    shutil.copytree(TOY / "models" / "tiny-bert", root / "tiny-bert")  # make_tiny_model(layers=2, heads=2)
    make_tiny_encoder(root / "tiny-roberta", "roberta", layers=2, heads=2)
    if "tiny_modernbert" in (config or {}).get("models", {}):
        make_tiny_encoder(root / "tiny-modernbert", "modernbert", layers=2, heads=2)
    write_treebank(root / "tb.conllu", n_docs=n_docs)  # n_docs=3: .test/corpora/tiny.conllu
    (root / "config.yaml").write_text(yaml.safe_dump(config or tiny_config(root)))
    return root


@pytest.fixture(scope="session")
def tiny_workflow(tmp_path_factory) -> Path:
    """A folder with the workflow, a tiny config, and every output built once: once per test
    run, also under pytest-xdist, whose processes share it (the first to ask builds it while the
    others wait; tests/conftest.py keeps the files that run Snakemake inside it in one process)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each process's own
    root, built = base / "tiny-workflow", base / "tiny-workflow.built"
    with FileLock(f"{root}.lock"):
        if not built.is_file():
            shutil.rmtree(root, ignore_errors=True)  # what a failed build left
            root.mkdir()
            tiny_folder(root, tiny_run_config(root))
            snakemake(root, "--cores", "2")
            built.touch()
    return root
