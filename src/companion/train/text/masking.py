"""Which token ids masked-LM corruption may touch: a property of the vocabulary, hence of the
text, which the objectives (:mod:`companion.train.models.objectives`) take as given."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MaskingSpec"]


@dataclass(frozen=True)
class MaskingSpec:
    """Token ids the masked-LM corruption needs.

    ``first_regular_id``: ids below it are special tokens, never chosen and never used as
    random replacements.
    """

    mask_id: int
    vocab_size: int
    first_regular_id: int = 0
    prob: float = 0.15

    def __post_init__(self):
        if not 0.0 < self.prob < 1.0:
            raise ValueError(f"masking probability must lie in (0, 1); got {self.prob}.")
        if not 0 <= self.mask_id < self.vocab_size:
            raise ValueError(f"mask id {self.mask_id} is outside the vocabulary of {self.vocab_size}.")
