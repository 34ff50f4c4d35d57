"""companion: executable companion to Saponati et al., "The underlying structures of
self-attention: symmetry, directionality, and emergent dynamics in Transformer training"
(ICML 2025).

Data flows one way: checkpoint -> adapter -> bilinear form -> scores -> tidy table ->
figure -> chapter, and for training: run -> history -> evidence -> verdict -> page.  The
subpackages are layers, each importing only those below it (ARCHITECTURE.md, checked by
``lint-imports``): ``base`` <- ``core`` | ``rules`` <- ``adapters`` | ``zoo`` <- ``train``
<- ``survey`` <- ``judge`` <- ``book`` <- ``cli``.

The public names below are loaded on first use, so ``import companion`` alone (and every
tool of the book that needs no tensor) does not import PyTorch.
"""

from importlib import import_module

__version__ = "0.1.0"

_PUBLIC = {
    "bilinear_form": "core.bilinear",
    "head_factors": "core.bilinear",
    "per_head_bilinear_forms": "core.bilinear",
    "symmetry_score": "core.scores",
    "symmetry_score_factored": "core.scores",
    "directionality_score": "core.scores",
    "directionality_score_factored": "core.scores",
    "structure_scores": "core.scores",
    "run_size": "base.runtime",
    "default_device": "base.runtime",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'companion' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
