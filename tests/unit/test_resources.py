"""Cluster resources from benchmarks (headatlas.pipeline.resources) and the SLURM profile that holds them."""

from __future__ import annotations

import re

import pytest
import yaml

from headatlas.pipeline import resources as res
from tests.conftest import ROOT

RULES = ROOT / "workflow" / "rules"
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
# Two rules write the same benchmark pattern (a segments or documents corpus per model).
# Rules that write the same benchmark files: the two prepare rules share a pattern, and
# extract_temp is `use rule extract as extract_temp` (the same job, its store temp()).
SHARED = ({"prepare_segments", "prepare_documents"}, {"extract", "extract_temp"})


def write_benchmark(path, seconds: float, rss: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{seconds}\n")


def example_path(pattern: str) -> str:
    """A file the pattern names: each wildcard filled with a plausible value."""
    fill = {"shard": "0", "seed": "0", "weighting": "-norm"}
    return re.sub(r"\{(\w+)\}", lambda m: fill.get(m.group(1), f"x{m.group(1)}"),
                            pattern.removeprefix("logs/benchmarks/"))


def test_every_benchmark_pattern_names_its_own_rule():
    patterns = res.benchmark_patterns(RULES)
    assert {"extract", "syntax_scores", "coref_mentions", "headtypes_figure", "probes_run"} <= {p.rule for p in patterns}
    for p in patterns:
        found = set(res.rules_of(example_path(p.pattern), patterns))
        assert found == set().union({p.rule}, *(s for s in SHARED if p.rule in s)), (p, found)


def test_specific_patterns_win_over_wildcards():
    patterns = res.benchmark_patterns(RULES)
    # {analysis}.tsv of surface_table would match these; the literal names win
    assert res.rules_of("surface/m/c/paper_claims.tsv", patterns) == ("surface_claims",)
    assert res.rules_of("surface-norm/m/c/paper_claims.tsv", patterns) == ("surface_claims",)  # {weighting}
    assert res.rules_of("surface-x/m/c/paper_claims.tsv", patterns) == ()
    assert res.rules_of("headtypes/m/c/features.tsv", patterns) == ("headtypes_features",)
    assert res.rules_of("headtypes/m/c/tsne.tsv", patterns) == ("headtypes_figure",)
    assert res.rules_of("prepare/gum.tsv", patterns) == ("prepare_treebank",)
    assert res.rules_of("extract/m/c/shard-x.tsv", patterns) == ()  # shard is \d+
    assert res.rules_of("other/file.tsv", patterns) == ()
    assert res.rules_of("run/logs/benchmarks/syntax/m/c/scores.tsv", patterns) == ("syntax_scores",)


def test_largest_measurement_with_headroom(tmp_path):
    bench = tmp_path / "run" / "logs" / "benchmarks"
    write_benchmark(bench / "extract" / "m" / "a" / "shard-0.tsv", seconds=100, rss=1000)
    write_benchmark(bench / "extract" / "m" / "b" / "shard-1.tsv", seconds=900, rss=300)
    write_benchmark(bench / "coref" / "m" / "c" / "mentions.tsv", seconds=5, rss=100)
    usage, unmatched = res.measure([bench], res.benchmark_patterns(RULES))
    assert unmatched == [] and set(usage) == {"extract", "extract_temp", "coref_mentions"}
    policy = res.Policy(mem_headroom=1.5, overhead_mb=500, time_headroom=2.0, min_runtime=10)
    # peak 1000 MB (shard a) x 1.5 + 500 = 2000; longest 900 s (shard b) x 2 = 30 min
    assert usage["extract"].resources(policy) == {"mem_mb": 2000, "runtime": 30}
    assert usage["extract_temp"].resources(policy) == usage["extract"].resources(policy)
    assert usage["coref_mentions"].resources(policy) == {"mem_mb": 700, "runtime": 10}  # 650 -> 700; floor 10
    # a second run's folder: the larger value of either counts
    other = tmp_path / "other" / "logs" / "benchmarks"
    write_benchmark(other / "coref" / "m" / "c" / "mentions.tsv", seconds=1200, rss=50)
    usage, _ = res.measure([bench, other], res.benchmark_patterns(RULES))
    assert usage["coref_mentions"].resources(policy) == {"mem_mb": 700, "runtime": 40}


def test_update_keeps_the_other_keys_and_the_rest_of_the_profile(tmp_path):
    bench = tmp_path / "logs" / "benchmarks"
    write_benchmark(bench / "extract" / "m" / "c" / "shard-0.tsv", seconds=60, rss=700)
    profile = tmp_path / "config.yaml"
    profile.write_text("executor: slurm\n# keep me\n" + res.BEGIN + "\nset-resources:\n  extract:\n"
                       "    slurm_partition: \"gpu\"\n    gres: \"gpu:1\"\n    mem_mb: 1\n"
                       "  ablation:\n    mem_mb: 5\n" + res.END + "\nset-threads:\n  extract: 8\n")
    res.main([str(bench), "--rules", str(RULES), "--profile", str(profile), "--update"])
    text = profile.read_text()
    loaded = yaml.safe_load(text)
    assert "# keep me" in text and loaded["executor"] == "slurm" and loaded["set-threads"] == {"extract": 8}
    assert loaded["set-resources"]["extract"] == {"mem_mb": "1600 * attempt", "runtime": 10,
                                                  "slurm_partition": "gpu", "gres": "gpu:1"}
    assert eval(loaded["set-resources"]["extract"]["mem_mb"], {"attempt": 2}) == 3200  # a retry: twice
    assert loaded["set-resources"]["ablation"] == {"mem_mb": 5}  # not measured: kept
    assert text.count(res.BEGIN) == text.count(res.END) == 1
    res.main([str(bench), "--rules", str(RULES), "--profile", str(profile), "--update"])
    assert profile.read_text() == text  # the same measurements give the same profile


def test_a_partial_update_keeps_where_the_other_rules_numbers_came_from(tmp_path):
    bench = tmp_path / "logs" / "benchmarks"
    write_benchmark(bench / "extract" / "m" / "c" / "shard-0.tsv", seconds=60, rss=700)
    profile = tmp_path / "config.yaml"
    profile.write_text(res.BEGIN + "\nset-resources:\n  ablation:  # 2 job(s); peak 1085 MB (ablation/m.tsv), "
                       "longest 481 s (ablation/m.tsv)\n    mem_mb: \"2200 * attempt\"\n    runtime: 17\n"
                       + res.END + "\n")
    for _ in range(2):  # twice: the note is added once
        res.main([str(bench), "--rules", str(RULES), "--profile", str(profile), "--update"])
        text = profile.read_text()
        assert "  ablation:  # 2 job(s); peak 1085 MB (ablation/m.tsv), longest 481 s (ablation/m.tsv)" \
               " (an earlier measurement)\n" in text
        assert "  extract:  # 1 job(s); peak 700 MB" in text
    not_measured = next(line for line in text.splitlines() if line.startswith("# Not measured"))
    assert "ablation" not in not_measured.split(": ", 1)[1].split(", ")


def test_update_needs_the_markers(tmp_path):
    bench = tmp_path / "b"
    write_benchmark(bench / "extract" / "m" / "c" / "shard-0.tsv", seconds=1, rss=1)
    profile = tmp_path / "config.yaml"
    profile.write_text("executor: slurm\n")
    with pytest.raises(SystemExit, match="BEGIN derived resources"):
        res.main([str(bench), "--rules", str(RULES), "--profile", str(profile), "--update"])


def test_the_slurm_profile_names_only_real_rules_and_has_no_fake_account():
    profile = yaml.safe_load(PROFILE.read_text())
    text = "\n".join(p.read_text() for p in RULES.glob("*.smk"))
    rules = set(re.findall(r"^rule (\w+):", text, re.M)) | set(re.findall(r"^use rule \w+ as (\w+)", text, re.M))
    assert set(profile["set-resources"]) <= rules and set(profile["set-threads"]) <= rules
    # extract_temp is extract for the models whose stores are temp(): the same cluster settings
    assert profile["set-resources"]["extract_temp"] == profile["set-resources"]["extract"]
    assert profile["set-threads"]["extract_temp"] == profile["set-threads"]["extract"]
    # Job arrays stay off (plugin 2.8 issues #447, #473); the commented line turns them on for both.
    assert "slurm-array-jobs" not in profile
    assert '# slurm-array-jobs: "extract,extract_temp"' in PROFILE.read_text()
    assert "slurm_account" not in profile["default-resources"]  # a made-up account breaks real clusters
    assert profile["set-resources"]["extract"]["slurm_partition"] == "gpu"
    assert profile["set-resources"]["extract"]["gres"] == "gpu:1"
    # fused mode's extraction runs the model too: on a GPU node, with the threads extract has
    fused, extract = profile["set-resources"]["fused_extract"], profile["set-resources"]["extract"]
    assert (fused["slurm_partition"], fused["gres"]) == (extract["slurm_partition"], extract["gres"])
    assert profile["set-threads"]["fused_extract"] == profile["set-threads"]["extract"]
    text = PROFILE.read_text()
    assert text.count(res.BEGIN) == 1 and text.count(res.END) == 1
    for rule, values in profile["set-resources"].items():
        if rule != "extract" or "mem_mb" in values:
            assert {"mem_mb", "runtime"} <= set(values), rule


def test_the_profile_records_no_folder_outside_the_working_directory(tmp_path, monkeypatch):
    from headatlas.pipeline.resources import measured_in

    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs" / "benchmarks").mkdir(parents=True)
    assert measured_in(["logs/benchmarks"]) == "logs/benchmarks"
    text = measured_in(["logs/benchmarks", "/tmp/someone-else/run/logs/benchmarks"])
    assert "someone-else" not in text and "2 finished run(s)" in text
