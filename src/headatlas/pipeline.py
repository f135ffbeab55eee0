"""Glue for Snakemake scripts: logging into the rule's log file, captions."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path


@contextlib.contextmanager
def rule_logging(snakemake):
    """Send logging, warnings and progress bars (stderr) of a rule to its log file.

    An exception is logged with its message before it propagates, so the log
    says what went wrong and Snakemake still marks the job as failed.
    """
    log_path = Path(snakemake.log[0]) if snakemake.log else None
    handle = open(log_path, "w", buffering=1) if log_path else sys.stderr
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(stream=handle, level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    old_stderr = sys.stderr
    sys.stderr = handle
    try:
        yield logging.getLogger(f"rule.{snakemake.rule}")
    except Exception as err:
        logging.getLogger(f"rule.{snakemake.rule}").error("%s: %s", type(err).__name__, err)
        raise
    finally:
        sys.stderr = old_stderr
        if log_path:
            handle.close()


def describe(attrs: dict, n_examples: int, unit: str = "segments") -> str:
    """Figure footnote: model, corpus, N, and the known deviations from the paper."""
    model = attrs.get("model_name", "?")
    source = attrs.get("model_id", "")
    corpus = attrs.get("corpus", "?")
    text = f"model {model} ({source}), corpus {corpus}, N = {n_examples} {unit}"
    if attrs.get("model_id") != "bert-base-cased":
        text += (f"; deviation: paper used bert-base-cased (12x12 heads), this is "
                 f"{attrs.get('n_layers')}x{attrs.get('n_heads')}")
    return text
