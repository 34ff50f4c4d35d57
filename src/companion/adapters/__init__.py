"""Checkpoint adapters: read only the query/key projections of a checkpoint.

``read_qk(source)`` accepts a local Hugging Face folder, a ``.gguf`` file or a hub id and
returns a :class:`QKCheckpoint`.  (Implemented family by family in this package.)
"""

from .types import ROLES, QKCheckpoint, QKLayer

__all__ = ["QKCheckpoint", "QKLayer", "ROLES"]
