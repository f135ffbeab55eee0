"""What every rule's script does first: log into the rule's log file, hold the job to its threads."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from pathlib import Path


# The variables thread pools read when they start: OpenMP (torch, scikit-learn), BLAS, numba.
# RAYON_NUM_THREADS: the fast tokenizers' pool, which encodes a batch of sentences in parallel
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "RAYON_NUM_THREADS")


def limit_threads(n: int) -> None:
    """Hold this process to ``n`` threads of computation: the job's ``threads``.

    Snakemake counts a job's threads against ``--cores`` but does not stop torch, BLAS or
    OpenMP from using every core; a one-thread job then competes with the job beside it
    (measured: a two-thread fine-tuning step costs ~20% more CPU than a one-thread step).
    Pools not started yet read the environment; those already loaded are set directly.
    """
    from threadpoolctl import threadpool_limits

    os.environ.update({name: str(n) for name in THREAD_VARIABLES})
    threadpool_limits(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)


def check_stores(snakemake) -> None:
    """Refuse a job's ``stores`` (stores, or fused mode's states) written for another model or
    corpus than the job's: a file copied over another's path would otherwise be analysed."""
    wildcards = dict(snakemake.wildcards.items())
    paths = list(snakemake.input.get("stores", [])) if hasattr(snakemake.input, "get") else []
    if not paths or not {"model", "corpus"} <= set(wildcards):
        return
    from headatlas.errors import StoreError
    from headatlas.store.schema import rebuild_hint
    from headatlas.store.states import open_record

    for path in paths:
        with open_record(path) as record:
            found = {k: record.attrs.get(k) for k in ("model_name", "corpus")}
        expected = {"model_name": wildcards["model"], "corpus": wildcards["corpus"]}
        if found != expected:
            raise StoreError(f"{path}: written for model {found['model_name']!r} on corpus "
                             f"{found['corpus']!r}, but this job analyses model "
                             f"{expected['model_name']!r} on {expected['corpus']!r} (a file copied "
                             f"over another's?); {rebuild_hint(path)}")


# A progress bar's state in what tqdm writes: "45%|####      | 9/20 [01:02<01:16, 7.1s/it]".
PROGRESS = re.compile(r"(?:(?P<desc>[^\r\n|]*?):\s*)?(?P<pct>\d+)%\|[^|]*\|\s*(?P<rest>[^\r\n]*)")


class ConsoleProgress:
    """The job's stderr: everything goes to its log; a progress bar's state also goes to the
    console, one line at most every ``every`` seconds, so a long job (fine-tuning, ablation:
    minutes) says where it is where the user is looking, not only in its log."""

    def __init__(self, log, console, job: str, every: float = 60.0, clock=time.monotonic):
        self.log, self.console, self.job, self.every, self.clock = log, console, job, every, clock
        self.last = clock()  # the first line after a minute: short jobs say nothing

    def write(self, text: str) -> int:
        self.log.write(text)
        now = self.clock()
        if now - self.last >= self.every:
            bars = list(PROGRESS.finditer(text))
            if bars:
                bar = bars[-1]
                what = f"{bar['desc'].strip()}: " if bar["desc"] and bar["desc"].strip() else ""
                self.console.write(f"[{self.job}] {what}{bar['pct']}% {bar['rest'].strip()}\n")
                self.console.flush()
                self.last = now
        return len(text)

    def flush(self) -> None:
        self.log.flush()

    def __getattr__(self, name):  # the rest of a file's face (encoding, fileno, isatty): the log's
        return getattr(self.log, name)


def job_name(snakemake) -> str:
    """``rule model=minilm corpus=gum``: how the console names a job."""
    wildcards = " ".join(f"{k}={v}" for k, v in snakemake.wildcards.items())
    return f"{snakemake.rule} {wildcards}".strip()


@contextlib.contextmanager
def rule_logging(snakemake):
    """Send logging, warnings and progress bars (stderr) of a rule to its log file, and hold
    the job to its ``threads`` (:func:`limit_threads`); a progress bar's state also reaches the
    console once a minute (:class:`ConsoleProgress`).

    An exception is logged with its message before it propagates, so the log
    says what went wrong and Snakemake still marks the job as failed.
    """
    limit_threads(snakemake.threads)
    log_path = Path(snakemake.log[0]) if snakemake.log else None
    handle = open(log_path, "w", buffering=1) if log_path else sys.stderr
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    old_stderr = sys.stderr
    stream = ConsoleProgress(handle, old_stderr, job_name(snakemake)) if log_path else handle
    logging.basicConfig(stream=stream, level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    sys.stderr = stream
    try:
        check_stores(snakemake)
        yield logging.getLogger(f"rule.{snakemake.rule}")
    except Exception as err:
        logging.getLogger(f"rule.{snakemake.rule}").error("%s: %s", type(err).__name__, err)
        raise
    finally:
        sys.stderr = old_stderr
        if log_path:
            handle.close()
