"""benchmarks/scaling.py, docs/scaling.md's arithmetic: store sizes by hand, and the fused cost
model reproduces the measured row it was calibrated on."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scaling.py"


@pytest.fixture(scope="module")
def scaling():
    spec = importlib.util.spec_from_file_location("scaling_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_minilm_segment_of_128_is_2_57_mb_in_the_store(scaling):
    # float16: 6 x 12 maps and 6 norm maps of 128 x 128, 6 x 12 x 128 value norms
    assert scaling.store_bytes(6, 12, 1, 128, 128 ** 2) == 2 * 6 * 13 * 128 ** 2 + 2 * 6 * 12 * 128 == 2_574_336


def test_the_fused_model_gives_back_the_row_it_was_calibrated_on(scaling):
    run = scaling.CALIBRATION
    L, H, d = scaling.MODELS["MiniLM-L6 (embedded)"]
    store_path, fused = scaling.fused_over_store(L, H, d, run["tokens"], run["sum_n2"])
    assert fused / store_path == pytest.approx(run["fused"] / run["store"], rel=1e-12)
    with_maps, fused_per_element, store_per_element = scaling.calibrated()
    assert with_maps == run["forward_with_maps"] / run["bare"]
    # the store path costs more per map element, so its ratio falls as maps outweigh the forward
    assert store_per_element > fused_per_element > 0
    short, long = (scaling.fused_over_store(L, H, d, 1e6 * n, 1e6 * n * n) for n in (128, 512))
    assert long[1] / long[0] < short[1] / short[0]


def test_the_tables_print(scaling, capsys):
    scaling.main()
    out = capsys.readouterr().out
    assert "| bert-large | Wikipedia, 10^6 segments of 512 |" in out and "The check row" in out
