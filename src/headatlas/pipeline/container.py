"""The container recipe (``envs/Dockerfile``), generated from the one pin list, ``requirements.txt``.

``python -m headatlas.pipeline.container > envs/Dockerfile`` writes it; a unit test keeps the
committed file equal to this output, so the image installs exactly the pins the virtual
environment and the conda environment do. The image is CPU-only (torch from PyTorch's CPU index:
PyPI's Linux wheel is the CUDA build, GBs larger) and holds the workflow and the library; run
the workflow in it with ``docker run -v "$PWD:/work" headatlas snakemake --cores all`` in a clone
(or a folder with a ``config.yaml``). No image is published, so the workflow names no
``containerized:`` image; README.md ("Containers") says what was and was not run.

Light module (standard library only).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYTHON = "3.11"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def pins(requirements: Path = ROOT / "requirements.txt") -> list[str]:
    """The ``name==version`` lines of ``requirements`` (comments dropped), in order."""
    lines = (re.sub(r"\s*#.*", "", line).strip() for line in requirements.read_text().splitlines())
    return [line for line in lines if line]


def dockerfile(requirements: Path = ROOT / "requirements.txt") -> str:
    """The recipe: Python, torch's CPU wheel at the pinned version, every other pin, the package."""
    found = pins(requirements)
    torch = next((p for p in found if p.split("==")[0] == "torch"), None)
    if torch is None:
        raise ValueError(f"{requirements}: no torch pin")
    rest = [p for p in found if p != torch]
    install = " \\\n      ".join(rest)
    return f"""# Generated from requirements.txt by `python -m headatlas.pipeline.container > envs/Dockerfile`;
# edit the pins there, not here (tests/unit/test_packaging.py keeps the two equal).
# Build from a clone: docker build -f envs/Dockerfile -t headatlas .
# Run in a clone:     docker run --rm -v "$PWD:/work" headatlas snakemake --cores all
FROM python:{PYTHON}-slim
ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg
# CPU build of the pinned torch (PyPI's Linux wheel is the CUDA one).
RUN pip install {torch} --index-url {TORCH_INDEX}
RUN pip install \\
      {install}
# The library and its console script (the workflow in a mounted clone reads the clone's own src/).
# Without .git the version is the build argument: --build-arg VERSION=$(git describe --tags).
ARG VERSION=0.0.0
COPY pyproject.toml README.md LICENSE /opt/headatlas/
COPY src /opt/headatlas/src
RUN SETUPTOOLS_SCM_PRETEND_VERSION_FOR_HEADATLAS=${{VERSION#v}} pip install --no-deps /opt/headatlas
WORKDIR /work
"""


def main() -> None:
    sys.stdout.write(dockerfile())


if __name__ == "__main__":
    main()
