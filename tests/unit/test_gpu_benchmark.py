"""benchmarks/gpu.py runs in its quick mode (tiny geometry, CPU): the script the GPU check uses."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"


def test_the_gpu_benchmark_runs_its_paths_on_the_cpu(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    gpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu)
    out = tmp_path / "gpu.json"
    # a sample of 4 examples: the second batch of 8 draws norm shares' pairs for some rows alone
    assert gpu.main(["--quick", "--floor", "--sample-examples", "4", "--processes", "2", "--out", str(out),
                     "--disk", str(tmp_path)]) == 0
    result = json.loads(out.read_text())
    assert result["sample_examples"] == 4
    assert set(result["paths"]) == {"encode", "sdpa", "eager", "fused", "fused_host", "store", "fused_x2"}
    # two processes at once, each its own inputs, timed from the first start to the last end
    both = result["paths"]["fused_x2"]
    assert both["examples"] == 2 * result["paths"]["fused"]["examples"]
    assert both["seconds"] >= max(both["each_seconds"]) > 0
    assert result["device_to_host_bytes_per_token"]["fused"] == 0
    assert result["ratio_to_sdpa"]["sdpa"] == 1.0
    assert all(row["tokens_per_s"] > 0 for row in result["paths"].values())
    g = result["geometry"]  # 2 bytes per float16 weight: L·H·n per token, and the norms
    assert result["device_to_host_bytes_per_token"]["store"] == 2 * g["layers"] * (g["heads"] * g["n"] + g["heads"] + g["n"])
    assert result["paths"]["store"]["disk_bytes"] > 0
    # the batched torch path computes what the numpy path does, run by run (and samples alike)
    assert len(result["fused_vs_fused_host"]) == 13
    assert all(row["claims_equal"] and row["max_relative_difference"] < 1e-5
               for row in result["fused_vs_fused_host"].values()), result["fused_vs_fused_host"]
    # the floor: operations the device path issues per batch, counted where a GPU's code runs
    floor = result["floor"]
    assert floor["fused"]["ops_per_batch"] > 5 * floor["sdpa"]["ops_per_batch"] > 0
    assert "| fused |" in capsys.readouterr().out
    assert not list(tmp_path.glob("tmp*"))  # its work folder is gone
