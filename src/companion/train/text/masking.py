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
        import numbers

        def whole(v):
            return isinstance(v, numbers.Integral) and not isinstance(v, bool)

        if not 0.0 < self.prob < 1.0:
            raise ValueError(f"masking probability must lie in (0, 1); got {self.prob}.")
        if not whole(self.vocab_size) or self.vocab_size < 1:
            raise ValueError(f"the vocab size must be a whole number of at least 1, not {self.vocab_size!r}.")
        if not whole(self.first_regular_id) or not 0 <= self.first_regular_id < self.vocab_size:
            raise ValueError(f"first_regular_id {self.first_regular_id!r} must be a whole number in [0, "
                             f"{self.vocab_size}): the ids from it up are the regular tokens masking draws from.")
        if not whole(self.mask_id):   # 1.5 was written into the long ids as 1 ([UNK])
            raise ValueError(f"mask id {self.mask_id!r} is not a whole number; give the mask token's id.")
        if not 0 <= self.mask_id < self.vocab_size:
            raise ValueError(f"mask id {self.mask_id} is outside the vocabulary of {self.vocab_size}.")
        if self.first_regular_id and self.mask_id >= self.first_regular_id:
            # a regular id as the mask: drawn as a random replacement and met in the text, a
            # masked position could not be told from a real token
            raise ValueError(f"mask id {self.mask_id} is a regular id (>= first_regular_id {self.first_regular_id}); "
                             "the mask must be one of the special ids below it.")
