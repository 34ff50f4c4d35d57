"""companion: executable companion to Saponati et al., "The underlying structures of
self-attention: symmetry, directionality, and emergent dynamics in Transformer training"
(ICML 2025).

Data flows one way: checkpoint -> adapter -> bilinear form -> scores -> tidy table ->
figure -> chapter.  The modules follow that order.
"""

from .bilinear import bilinear_form, head_factors, per_head_bilinear_forms
from .runtime import default_device, run_size
from .scores import (
    directionality_score,
    directionality_score_factored,
    structure_scores,
    symmetry_score,
    symmetry_score_factored,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "bilinear_form",
    "head_factors",
    "per_head_bilinear_forms",
    "symmetry_score",
    "symmetry_score_factored",
    "directionality_score",
    "directionality_score_factored",
    "structure_scores",
    "run_size",
    "default_device",
]
