"""What one checkpoint of the offline zoo is: its pinned files (Part), the model (ZooModel), its stacks' KINDS."""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import CompanionError

__all__ = ["Part", "ZooModel", "KINDS"]


def _digest(value, what: str) -> str:
    """A pinned sha256 as hashlib writes it: 64 hexadecimal digits in lower case (a pin in capitals
    never equals a hexdigest, and one of another length names no file), or a one-line refusal."""
    import re

    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", value):
        raise CompanionError(f"the zoo's sha256 of {what} must be 64 hexadecimal digits; got {value!r}.")
    return value.lower()


@dataclass(frozen=True)
class Part:
    """One file shipped inside an installed distribution (``dist==version``)."""

    dist: str
    version: str
    path: str  # relative to the distribution's install root (as in its RECORD)
    size: int | None = None
    sha256: str | None = None  # pinned where the part is checked on its own ("parts", a second file)

    def __post_init__(self):
        if self.sha256 is not None:
            object.__setattr__(self, "sha256", _digest(self.sha256, f"part {self.path!r} of {self.dist}"))

    @property
    def pin(self) -> str:
        return f"{self.dist}=={self.version}"


#: What a stack of self-attention layers counts as in the survey.  The rule: a decoder is
#: causal self-attention trained to predict the next token, with or without an encoder beside
#: it; an encoder is bidirectional self-attention; "none" is a stack that has no
#: self-attention (Bergamot's decoder: an SSRU cell and cross-attention only).
KINDS = ("encoder", "decoder", "none")


@dataclass(frozen=True)
class ZooModel:
    """One checkpoint of the zoo (:mod:`companion.zoo.registry` explains ``assembly``)."""

    name: str
    model: str
    role: str  # "encoder", "decoder" or "encoder-decoder"
    modality: str  # "text", "vision" or "audio"
    reader: str  # the format the reader parses
    licence: str
    assembly: str  # "installed", "concat" or "zip"
    parts: tuple[Part, ...]
    sha256: str  # of the main file (the file, or the weights inside the folder)
    size: int
    main: str  # the main file's name in the assembled folder
    folder: bool = False  # read_qk opens the folder (config.json beside the weights)
    extra: tuple[Part, ...] = ()  # files copied beside the main file (config, tokenizer)
    members: tuple[str, ...] = ()  # for "zip": the members to extract, main first
    part_size: int = 0  # for "zip": the size of every part but the last
    part_numbers: tuple[int, ...] = ()  # for "zip": which parts (1-based) the packages ship
    reader_module: str | None = None  # a module that must import for the reader to exist
    catalog_key: str | None = None  # the entry of data/catalog.csv, when the paper has one
    notes: str = ""
    # (component, kind) for each stack read_qk yields, the kind one of KINDS (see above)
    kinds: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "sha256", _digest(self.sha256, self.name))

    def kind_of(self, component: str) -> str:
        """What the stack ``component`` counts as; refused when the rule was not applied to it."""
        found = dict(self.kinds).get(component)
        if found not in KINDS:
            raise CompanionError(
                f"the kind of {self.name}'s {component!r} stack is not decided (recorded: "
                f"{dict(self.kinds) or 'nothing'}); the survey cannot count it as an encoder or a decoder.")
        return found

    @property
    def kind(self) -> str:
        """The kinds of its stacks, as ``companion zoo list`` shows them."""
        counted = [k for _, k in self.kinds if k != "none"]
        return " + ".join(dict.fromkeys(counted)) or "undecided"

    @property
    def total_size(self) -> int:
        """Bytes of the model's weight files: ``size``, or every installed file's (T5's two graphs)."""
        if self.assembly == "installed" and len(self.parts) > 1:
            return sum(p.size or 0 for p in self.parts)
        return self.size

    @property
    def pins(self) -> list[str]:
        seen = []
        for p in self.parts + self.extra:
            if p.pin not in seen:
                seen.append(p.pin)
        return seen
