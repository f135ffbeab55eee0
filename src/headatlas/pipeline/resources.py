"""Cluster resources from measurements: each rule's ``mem_mb`` and ``runtime`` from its benchmarks.

Every heavy rule writes ``logs/benchmarks/...tsv`` (Snakemake's ``benchmark:``: wall time ``s``
and peak resident memory ``max_rss`` in MB of the job's process tree). This module maps each
file to its rule through the rules' own ``benchmark:`` patterns, takes the largest peak and the
longest time over every job of the rule (all models, corpora, shards, and every directory
given), and adds headroom::

    mem_mb  = round_up(max_rss * mem_headroom + overhead_mb, 100)
    runtime = max(min_runtime, ceil(s * time_headroom / 60))        # minutes, as Snakemake wants

``overhead_mb`` is the Snakemake processes that run each job inside its SLURM allocation, about
170 MB each in tests/cluster (two in a plain job: the batch step and the job step; three in a job
array task): the benchmark measures only the job's own script, SLURM counts them all. The result is a ``set-resources``
block for a Snakemake profile::

    headatlas resources logs/benchmarks                       # print the block
    headatlas resources logs/benchmarks --update profiles/slurm/config.yaml

``--update`` rewrites the block between the ``# BEGIN derived resources`` and ``# END derived
resources`` lines of the profile and keeps every other key a rule has there (partition, GRES,
CPUs), and the entries of rules that were not measured.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import yaml

from headatlas.weightings import SUFFIX_PATTERN

BEGIN = "# BEGIN derived resources"
EARLIER = " (an earlier measurement)"  # a kept rule's comment, once
END = "# END derived resources"
DERIVED = ("mem_mb", "runtime")
PREFIX = "logs/benchmarks/"
#: Wildcards with a global constraint in ``workflow/rules/common.smk``.
CONSTRAINED = {"shard": r"\d+",
               # '' (attention weights) or '-norm': an empty wildcard must match too
               "weighting": SUFFIX_PATTERN}


@dataclass(frozen=True)
class Policy:
    """Headroom added to the measurements (see the module docstring)."""

    mem_headroom: float = 1.5
    overhead_mb: int = 500
    time_headroom: float = 2.0
    min_runtime: int = 10
    per_attempt: bool = True  # mem_mb x the attempt: the profile's retry asks for more memory


@dataclass
class RuleUsage:
    """The largest measurements over every benchmark file of one rule."""

    rule: str
    files: list[str] = field(default_factory=list)
    max_rss: float = 0.0
    max_rss_file: str = ""
    seconds: float = 0.0
    seconds_file: str = ""
    shared_with: tuple[str, ...] = ()

    def add(self, path: str, seconds: float, max_rss: float) -> None:
        self.files.append(path)
        if max_rss >= self.max_rss:
            self.max_rss, self.max_rss_file = max_rss, path
        if seconds >= self.seconds:
            self.seconds, self.seconds_file = seconds, path

    def resources(self, policy: Policy) -> dict[str, int]:
        mem = math.ceil((self.max_rss * policy.mem_headroom + policy.overhead_mb) / 100) * 100
        runtime = max(policy.min_runtime, math.ceil(self.seconds * policy.time_headroom / 60))
        return {"mem_mb": int(mem), "runtime": int(runtime)}


@dataclass(frozen=True)
class BenchmarkPattern:
    rule: str
    pattern: str

    @property
    def relative(self) -> str:
        """The pattern below the benchmarks folder (``logs/benchmarks/`` by convention)."""
        return self.pattern.removeprefix(PREFIX)

    @property
    def regex(self) -> re.Pattern:
        parts = re.split(r"\{(\w+)\}", self.relative)
        body = "".join(re.escape(p) if i % 2 == 0 else f"(?:{CONSTRAINED.get(p, '[^/]+')})"
                       for i, p in enumerate(parts))
        return re.compile(r"(?:^|/)" + body + "$")

    @property
    def literal(self) -> int:
        """Characters outside wildcards: the more, the more specific the pattern."""
        return len(re.sub(r"\{\w+\}", "", self.relative))


# A rule's benchmark: the helper of workflow/rules/common.smk, benchmarks("x/{model}") ->
# <logs>/benchmarks/x/{model}.tsv, or a path string.
BENCHMARK = re.compile(r'^\s+benchmark:\s*\n\s+(?:benchmarks\("([^"]+)"\)|(f?)"([^"]+)")', re.M)


def _literal(helper: str | None, f_prefix: str, text: str) -> str:
    """A rule's benchmark as Snakemake sees it: benchmarks("x/{model}") or f"{LOGS}/x/{{model}}.tsv"
    -> logs/benchmarks/x/{model}.tsv (the benchmarks folder is named by the ``logs`` config key;
    ``logs`` by default)."""
    if helper:
        return f"{PREFIX}{helper}.tsv"
    if not f_prefix:
        return text
    return text.replace("{LOGS}/", "logs/").replace("{{", "{").replace("}}", "}")


def benchmark_patterns(rules_dir: Path) -> list[BenchmarkPattern]:
    """Each rule's ``benchmark:`` pattern, read from the ``*.smk`` files of ``rules_dir``."""
    found = []
    for smk in sorted(Path(rules_dir).glob("*.smk")):
        text = smk.read_text()
        for name, body in re.findall(r"^rule (\w+):\n(.*?)(?=^\S|\Z)", text, re.M | re.S):
            match = BENCHMARK.search(body)
            if match:
                found.append(BenchmarkPattern(name, _literal(*match.groups())))
        # `use rule A as B with:` keeps A's benchmark: pattern unless it sets its own: B's jobs
        # then write the same files, so B is measured with A (e.g. extract_temp with extract).
        for parent, alias, body in re.findall(r"^use rule (\w+) as (\w+) with:\n(.*?)(?=^\S|\Z)",
                                              text, re.M | re.S):
            match = BENCHMARK.search(body)
            if match:
                found.append(BenchmarkPattern(alias, _literal(*match.groups())))
            else:
                found += [BenchmarkPattern(alias, p.pattern) for p in found if p.rule == parent]
    if not found:
        raise SystemExit(f"no rule with a benchmark: found in {rules_dir}/*.smk")
    return found


def rules_of(path: str, patterns: Sequence[BenchmarkPattern]) -> tuple[str, ...]:
    """The rule(s) whose pattern matches ``path`` most specifically (two only if tied).

    ``path`` is relative to the benchmarks folder (``extract/m/c/shard-0.tsv``); a longer path
    matches too (``run/logs/benchmarks/extract/...``).
    """
    matching = [p for p in patterns if p.regex.search(path)]
    if not matching:
        return ()
    best = max(p.literal for p in matching)
    return tuple(sorted({p.rule for p in matching if p.literal == best}))


def read_benchmark(path: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one benchmark file: the largest over its rows."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows:
        raise ValueError(f"{path}: an empty benchmark file")

    def number(row: dict, key: str) -> float:
        value = row.get(key, "NA")
        return 0.0 if value in ("NA", "", "-") else float(value)

    return max(number(r, "s") for r in rows), max(number(r, "max_rss") for r in rows)


def measure(dirs: Iterable[Path], patterns: Sequence[BenchmarkPattern]) -> tuple[dict[str, RuleUsage], list[str]]:
    """Rule -> its largest measurements over the ``*.tsv`` below ``dirs``; files no rule claims."""
    usage: dict[str, RuleUsage] = {}
    unmatched = []
    for folder in dirs:
        folder = Path(folder)
        if not folder.is_dir():
            raise SystemExit(f"{folder}: not a folder of benchmarks (logs/benchmarks of a run)")
        for path in sorted(folder.rglob("*.tsv")):
            rules = rules_of(path.relative_to(folder).as_posix(), patterns)
            if not rules:
                unmatched.append(str(path))
                continue
            seconds, rss = read_benchmark(path)
            for rule in rules:
                entry = usage.setdefault(rule, RuleUsage(rule))
                entry.add(str(path), seconds, rss)
                entry.shared_with = tuple(r for r in rules if r != rule)
    return usage, unmatched


def existing_set_resources(profile: Path | None) -> dict[str, dict]:
    if profile is None or not Path(profile).exists():
        return {}
    loaded = yaml.safe_load(Path(profile).read_text()) or {}
    return {rule: dict(values or {}) for rule, values in (loaded.get("set-resources") or {}).items()}


def earlier_measurements(profile: Path | None) -> dict[str, str]:
    """Rule -> the comment its entry of ``profile``'s block has from an earlier measurement
    (``3 job(s); peak ...``), so that a run which did not measure the rule keeps saying where its
    numbers come from."""
    if profile is None or not Path(profile).exists():
        return {}
    found = re.findall(r"^  ([\w-]+):  # (\d+ job\(s\); .*)$", Path(profile).read_text(), flags=re.MULTILINE)
    return dict(found)


def render(usage: dict[str, RuleUsage], policy: Policy, keep: dict[str, dict], sources: Sequence[str],
           rules: Sequence[str], note: str = "", earlier: dict[str, str] | None = None) -> str:
    """The ``set-resources`` block, between the markers, with where each number comes from
    (``earlier``: :func:`earlier_measurements`, kept for the rules not measured now)."""
    earlier = earlier or {}
    lines = [
        f"{BEGIN}: written by `python -m headatlas.pipeline.resources`; rerun it, do not edit the numbers.",
        f"# Measured in: {note or measured_in(sources)}",
        f"# mem_mb = peak RSS x {policy.mem_headroom:g} + {policy.overhead_mb} MB (the Snakemake "
        f"processes in the job), rounded up to 100{', x the attempt (a retry asks for twice that)' if policy.per_attempt else ''};",
        f"# runtime = longest wall time x {policy.time_headroom:g}, at least {policy.min_runtime} min. "
        "Other keys of a rule are kept.",
    ]
    unmeasured = [r for r in rules if r not in usage and r not in earlier]
    if unmeasured:
        lines.append("# Not measured (the rule's own resources, else default-resources): " + ", ".join(unmeasured))
    lines.append("set-resources:")
    for rule in sorted(set(usage) | set(keep)):
        values = dict(keep.get(rule, {}))
        if rule in usage:
            u = usage[rule]
            values.update(u.resources(policy))
            if policy.per_attempt:  # an expression Snakemake evaluates per attempt
                values["mem_mb"] = f"{values['mem_mb']} * attempt"
            lines.append(f"  {rule}:  # {len(u.files)} job(s); peak {u.max_rss:.0f} MB "
                         f"({_short(u.max_rss_file)}), longest {u.seconds:.0f} s ({_short(u.seconds_file)})"
                         + (f"; pattern shared with {', '.join(u.shared_with)}" if u.shared_with else ""))
        elif rule in earlier:
            lines.append(f"  {rule}:  # {earlier[rule].removesuffix(EARLIER)}{EARLIER}")
        else:
            lines.append(f"  {rule}:  # not measured: kept as it was")
        for key in sorted(values, key=lambda k: (k not in DERIVED, k)):
            lines.append(f"    {key}: {_scalar(values[key])}")
    lines.append(END)
    return "\n".join(lines) + "\n"


def measured_in(sources: Sequence[str]) -> str:
    """The folders measured, as a profile may record them: relative to the working directory,
    else only how many (an absolute path names one machine's, often temporary, folder)."""
    here = Path.cwd().resolve()
    inside = [Path(s).resolve() for s in sources if Path(s).resolve().is_relative_to(here)]
    if len(inside) == len(sources):
        return ", ".join(str(p.relative_to(here)) for p in inside)
    return f"logs/benchmarks of {len(sources)} finished run(s) (say which with --note)"


def _short(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[parts.index("benchmarks") + 1:]) if "benchmarks" in parts else path


def _scalar(value) -> str:
    if isinstance(value, bool) or value is None:
        return yaml.safe_dump(value).split("\n")[0]
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def update_profile(profile: Path, block: str) -> None:
    """Replace the lines from BEGIN to END (inclusive) of ``profile`` with ``block``."""
    text = Path(profile).read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{profile}: no '{BEGIN}' ... '{END}' lines to replace; add them around "
                         "its set-resources block")
    start = text.rfind("\n", 0, start) + 1
    end = text.find("\n", end)
    end = len(text) if end < 0 else end + 1
    new = text[:start] + block + text[end:]
    yaml.safe_load(new)  # never write a profile Snakemake cannot read
    Path(profile).write_text(new)


def main(argv: Sequence[str] | None = None, prog: str = "headatlas resources") -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("benchmarks", nargs="+", type=Path, help="logs/benchmarks folder(s) of finished runs")
    parser.add_argument("--rules", type=Path, default=Path("workflow/rules"),
                        help="the workflow's rules folder (default: workflow/rules)")
    parser.add_argument("--profile", type=Path, help="a profile whose other set-resources keys are kept")
    parser.add_argument("--update", action="store_true", help="rewrite the block in --profile in place")
    parser.add_argument("--note", default="", help="what was measured (default: the folders' names)")
    defaults = Policy()
    parser.add_argument("--mem-headroom", type=float, default=defaults.mem_headroom)
    parser.add_argument("--overhead-mb", type=int, default=defaults.overhead_mb)
    parser.add_argument("--time-headroom", type=float, default=defaults.time_headroom)
    parser.add_argument("--min-runtime", type=int, default=defaults.min_runtime, help="minutes")
    args = parser.parse_args(argv)
    if args.update and not args.profile:
        parser.error("--update needs --profile")
    policy = Policy(args.mem_headroom, args.overhead_mb, args.time_headroom, args.min_runtime)
    patterns = benchmark_patterns(args.rules)
    usage, unmatched = measure(args.benchmarks, patterns)
    for path in unmatched:
        print(f"warning: no rule's benchmark: pattern matches {path}", file=sys.stderr)
    if not usage:
        raise SystemExit(f"no benchmark files below {', '.join(map(str, args.benchmarks))}")
    rules = list(dict.fromkeys(p.rule for p in patterns))
    block = render(usage, policy, existing_set_resources(args.profile), [str(d) for d in args.benchmarks],
                   rules, args.note, earlier_measurements(args.profile))
    if args.update:
        update_profile(args.profile, block)
        print(f"updated {args.profile}: {len(usage)} measured rule(s)", file=sys.stderr)
    else:
        sys.stdout.write(block)


if __name__ == "__main__":
    main()
