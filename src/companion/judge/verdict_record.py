"""What a verdict is: the five-plus statuses, the record of one claim's check
(:class:`Verdict`), and how each mathematical claim is decided (:data:`MATH_CHECKS`).

The lowest module of the claims: :mod:`companion.judge.claims` and the modules of the
claims themselves (:mod:`~companion.judge.math_claims`, :mod:`~companion.judge.premise_claims`,
:mod:`~companion.judge.empirical_claims`) build on it, and ``claims`` re-exports every name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..base.errors import CompanionError

__all__ = ["MATH_CHECKS", "Plain", "STATUSES", "Verdict"]


class Plain(str):
    """A string whose ``repr`` is itself, so that ``{glue:text}`` shows it without quotes."""

    def __repr__(self) -> str:
        return str(self)


STATUSES = ("holds", "holds with a correction", "holds, size open", "negligible", "premise fails", "inconclusive",
            "refuted", "not testable here")


#: how each mathematical claim is decided: none of these is a test that could come out
#: otherwise by chance; they are checked by a closed form, a counterexample or a fixed
#: computation (one draw, one configuration)
MATH_CHECKS = {
    "prop_2_1": "fixed computation (one random draw, N > d, linear programme)",
    "prop_2_2": "fixed computation against autograd (one draw)",
    "remark_s1_6": "fixed computation (remainder's slope in the learning rate)",
    "prop_s1_7": "counterexample (one draw; algebraic identity)",
    "prop_s1_8": "Monte Carlo against the closed form",
    "cor_s1_9": "Monte Carlo against the closed form",
    "prop_s1_10": "measurement on a corpus against the closed form",
    "lemma_s1_11": "counterexample (closed form)",
    "remark_s1_15": "closed form",
    "prop_s1_17": "closed form and Monte Carlo",
    "prop_s1_18": "counterexample and Monte Carlo",
}


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim's check."""

    key: str
    claim: str
    status: str
    measured: str
    size: str
    chapter: str
    label: str
    kind: str = "mathematical"   # or "empirical": decided by a rule of data/verdict_rules.yaml
    check: str = ""              # how it is decided (MATH_CHECKS, or the empirical test)
    power: str = ""              # empirical: the effect found with probability 0.8 at its seeds
    rule_after: bool = False     # empirical: the rule was written after (some of) its evidence
    family: str = ""             # empirical: its family and whether its decided outcome stands at the family's level
    rules: str = ""              # a claim read at looks: e.g. 'verdict rules, version 4, look 2 of 4'
    withheld: str = ""           # a claim's own decided reading where the family's level does not let it stand

    def __post_init__(self):
        # a record read back from a table may carry a NaN for an empty text, or a flag as text
        # ('False' is a true string: a page would say the rule was written after its evidence)
        for name, value in self.__dict__.items():
            if name == "rule_after":
                if type(value).__name__ not in ("bool", "bool_"):
                    raise CompanionError(f"rule_after must be True or False, got {value!r}; read the verdict "
                                         "table back with its flags as booleans.")
                object.__setattr__(self, name, bool(value))
            elif not isinstance(value, str):
                raise CompanionError(f"{name} must be text, got {value!r}; an empty field is '' (read the "
                                     "verdict table back with its text columns as text).")
        if self.status not in STATUSES:
            raise CompanionError(f"status must be one of {STATUSES}, got {self.status!r}.")
        if self.kind not in ("mathematical", "empirical"):
            raise CompanionError(f"kind must be 'mathematical' or 'empirical', got {self.kind!r}.")
        if not self.check and self.key in MATH_CHECKS:
            object.__setattr__(self, "check", MATH_CHECKS[self.key])

    def as_dict(self) -> dict:
        return asdict(self)

