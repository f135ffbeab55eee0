"""torch at its first use: the reading rules of the model-running analyses start without it."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# What the claims, figure, compare and atlas rules of gradients, probes, ablation and importance
# import (workflow/scripts/*_claims.py, gradients_figure.py, probes_table3.py, atlas_heads.py, ...).
READERS = ["headatlas.analyses.gradients", "headatlas.analyses.probes", "headatlas.interventions.ablation",
           "headatlas.interventions.importance", "headatlas.report.atlas", "headatlas.plots.probes",
           "headatlas.plots.gradients", "headatlas.plots.importance"]


def imported_after(statements: str) -> set[str]:
    code = f"import sys\n{statements}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    return set(result.stdout.split())


def test_the_reading_modules_do_not_import_torch():
    modules = imported_after("\n".join(f"import {m}" for m in READERS))
    assert "torch" not in modules and "transformers" not in modules


def test_torch_comes_at_the_first_attribute_and_the_probes_classes_with_it():
    modules = imported_after("import headatlas.analyses.probes as p\nassert 'torch' not in sys.modules\n"
                             "assert p.AttentionProbe.__module__ == 'headatlas.analyses.probe_models'\n"
                             "from headatlas.encoders.lazy import lazy_import\n"
                             "t = lazy_import('torch')\nassert t.ones(2).sum().item() == 2.0")
    assert "torch" in modules


def test_inference_mode_holds_when_the_function_runs():
    from headatlas.encoders.lazy import inference_mode

    import torch

    @inference_mode
    def grads_enabled():
        return torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    assert grads_enabled() == (False, True) and torch.is_grad_enabled()
