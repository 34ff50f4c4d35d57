"""Is every attention layer the configuration announces present in the weights?

A checkpoint with a shard missing, an index that lists only some shards, or a layer's
tensors dropped would otherwise be scored on fewer layers without a word, and its median
across layers would be a different number.  The layer plans found in the tensor names are
compared with the layer count of ``config.json`` (or of the GGUF metadata); the indices
of each stack must be exactly ``0 .. n-1``.
"""

from __future__ import annotations

import itertools
from collections import Counter

from ..base.errors import CompanionError
from .families import LayerPlan, positive_int

__all__ = ["expected_layers", "check_layer_count"]

# families whose stored layers are not one per applied layer (ALBERT shares one layer)
_NO_COUNT = {"albert"}


def _first_int(cfg: dict, *names):
    """The first of ``names`` present, as a checked count (a present field that is not a
    positive whole number is refused, never skipped)."""
    for n in names:
        v = cfg.get(n)
        if v is not None:
            return n, positive_int(v, n)
    return None, None


def expected_layers(config: dict, family: str, component: str, gguf: bool = False):
    """``(field, n)``: the configuration's layer count for one stack, or ``(None, None)``."""
    if family in _NO_COUNT:
        return None, None
    if gguf:
        arch = config.get("general.architecture", family)
        return _first_int(config, f"{arch}.block_count")
    if component == "encoder" and ("encoder_layers" in config or family in ("t5", "mt5")):
        return _first_int(config, "encoder_layers", "num_layers")
    if component == "decoder" and ("decoder_layers" in config or family in ("t5", "mt5")):
        return _first_int(config, "decoder_layers", "num_decoder_layers", "num_layers")
    return _first_int(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers")


def check_layer_count(config: dict, family: str, plans: list[LayerPlan], location: str,
                      gguf: bool = False) -> None:
    """Refuse when a stack's layers are not exactly the ``0 .. n-1`` the config announces."""
    stacks: dict[tuple[str, str], list[int]] = {}
    for p in plans:
        stacks.setdefault((p.component, p.role), []).append(p.index)
    for (component, role), found in stacks.items():
        field, n = expected_layers(config, family, component, gguf)
        if n is None and gguf and family not in _NO_COUNT:
            arch = config.get("general.architecture", family)
            raise CompanionError(
                f"{location}: the GGUF metadata has no {arch}.block_count, so a missing last layer "
                "could not be told from a complete file; the file is malformed (llama.cpp writes it).")
        if n is None:
            # no count to compare with: the indices must at least leave no gap
            n, field = max(found) + 1, "the highest layer index found"
        # never a set of range(n): a config may announce a billion layers
        have = set(found)
        if len(have) != len(found):   # a layer read twice would count twice in every median
            twice = sorted(i for i, c in Counter(found).items() if c > 1)
            raise CompanionError(
                f"{location}: the conversion gives {component} layer {twice[0]} ({role} attention) more than once "
                f"({len(found)} plans for {len(have)} layers); each layer must be read once. Fix the "
                "families= conversion (two tensor patterns matching one layer?).")
        extra = sorted(i for i in have if not 0 <= i < n)
        n_missing = n - (len(have) - len(extra))
        missing = list(itertools.islice((i for i in range(n) if i not in have), 9)) if n_missing else []
        if missing or extra:
            what = (f"layers {missing[:8]}{' ...' if n_missing > 8 else ''} are missing"
                    if missing else f"it has layers {extra[:8]} beyond that")
            raise CompanionError(
                f"{location}: the configuration announces {n} {component} layers ({field}) "
                f"but {what} ({role} attention, {len(found)} found): the checkpoint is "
                "incomplete (a missing shard or an index listing only some?). Download it again."
            )
