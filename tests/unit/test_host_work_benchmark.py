"""benchmarks/host_work.py runs every step on a small batch (the script the closing notes cite)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "host_work.py"


def test_the_host_work_benchmark_times_every_step(capsys):
    spec = importlib.util.spec_from_file_location("host_work_benchmark", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--batch", "4", "--length", "32", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[1].strip() for line in lines[1:]] == list(bench.STEPS)
    assert all(float(line.split()[-2]) > 0 for line in lines[1:])
