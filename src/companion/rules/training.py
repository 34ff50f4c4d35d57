"""Rules v2 applied to one paired training test (Figs. 3a/3b, Fig. S5b, Table 1).

The judgement of a training claim runs one way (:func:`companion.judge.empirical.training_tests`):
the rule names its bodies and pairs (here), a body's runs become one evidence table with
every value the rule reads (:func:`companion.train.studies.evidence.body_evidence`), the
rule is applied to each pair once (:func:`apply_rule_to_pair`: the paired effect at the end and
half-way, the gate with its own worded reason, the outcome, the power), and the verdict's
row is assembled from the result.  Nothing here reads a run: every input is a value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..base.errors import CompanionError
from ..base.phrasing import as_set
from .verdicts import rule_written_after
from .power import directional_power
from .estimates import rounded
from .statistics import (deciding_p, directional_outcome, directional_outcome_first, p_above, p_below, paired_t,
                         power_spread, seeds_without_a_number)

__all__ = ["bodies_of", "pairs_of", "is_primary", "context_part", "gate", "gate_why", "apply_rule_to_pair"]

#: the claims compared across modes (encoder against each comparator), as against across starts
ACROSS_MODES = ("training_symmetry", "training_directionality")


def bodies_of(r: dict) -> list[str]:
    """The bodies a rule reads, in order: primary, confirmatory (rules v2.1), secondary."""
    conf = (r.get("confirmatory") or {}).get("body")
    return [r["primary"]["body"]] + ([conf] if conf else []) + list(r.get("secondary_bodies", []))


def pairs_of(key: str, r: dict) -> list[tuple]:
    """``(candidate arm, comparator arm, comparator label)`` of every paired test of the claim.

    Figs. 3a/3b: the candidate mode against each comparator mode, standard start.  Fig. S5b
    and Table 1: the candidate start against the baseline start, in the judged mode and each
    mode reported beside it."""
    if key in ACROSS_MODES:
        return [((r["arms"]["candidate"], "standard"), (c, "standard"), c) for c in r["comparators"]]
    modes = [r["arms"]["mode"]] + list(r.get("reported_beside", []))
    return [((m, r["arms"]["candidate"]), (m, r["arms"]["baseline"]), m) for m in modes]


def is_primary(key: str, r: dict, body: str, comparator: str) -> bool:
    """Whether the test of ``comparator`` on ``body`` is the rule's primary test."""
    chosen = r["primary"]["comparator"] if key in ACROSS_MODES else r["arms"]["mode"]
    return body == r["primary"]["body"] and comparator == chosen


def context_part(loss: pd.Series, reference, nats: float) -> dict:
    """One arm's context part of the gate: its seed-mean final held-out ``loss`` against its
    unigram ``reference`` (a number, or a function giving it, called only when needed).  An
    arm with no loss, or with a non-finite one (a mean would skip the NaN seed and pass), or
    against a reference that is not finite, does not pass."""
    if loss.empty or not np.isfinite(loss.to_numpy(float)).all():
        return {"loss": float("nan"), "reference": float("nan"), "below": float("nan"), "passes": False}
    ref = float(reference() if callable(reference) else reference)
    below = ref - float(loss.mean())
    # a reference that is no finite number (+inf from a zero probability) is no yardstick: an
    # arm 'inf below' it has shown nothing.  Compared after rounding to DIGITS significant digits,
    # as interval ends and yardsticks are: a floor met exactly is met, whatever the last bit
    # (4.0 - 3.3069 is 0.69309999... in floating point, 6.0 - 5.3069 is 0.69310000...3)
    return {"loss": float(loss.mean()), "reference": ref, "below": below,
            "passes": bool(np.isfinite(ref) and rounded(below) >= rounded(nats))}


def gate(losses: dict, references: dict, gaps: dict, half_step, e_end, e_half, sesoi: float, cfg: dict) -> dict:
    """Rules v2's gate, "trained enough", for one paired test.

    ``losses``, ``references``, ``gaps``: per arm ``(mode, init)``, the final held-out losses
    by seed, the unigram reference of the arm's objective (a number or a function giving
    it) and the memorisation gaps by seed; ``half_step``: the half-horizon step (None where
    none was logged); ``e_end``, ``e_half``: the paired estimates at the end and half-way
    (``e_half`` None where it could not be formed); ``cfg``: the framework's gate settings.
    Three parts, each reported with its values:

    ``context``
        every arm's seed-mean final held-out loss at least ``context_floor_nats`` below the
        unigram reference of what its objective predicts (an arm with a non-finite loss, or
        none, does not pass);
    ``horizon``
        the paired effect at ``horizon_fraction`` of the horizon and at its end agree in
        sign and differ by less than ``sesoi``;
    ``memorisation``
        every arm's seed-mean held-out minus training loss at most ``memorisation_nats``.

    ``passes`` is their conjunction; ``reason`` names the first part that fails ('not
    trained enough', 'trained into memorisation', 'not stable between horizons') and ``why``
    says it with what was measured (the horizon's two effects against the rule).
    """
    ctx = {arm: context_part(losses[arm], references[arm], cfg["context_floor_nats"]) for arm in losses}
    mem = {}
    for arm, g in gaps.items():
        g = g.dropna()
        v = float(g.mean()) if len(g) else float("nan")
        # rounded as context_part compares: a gap of exactly the allowed 0.10 (3.2 - 3.1 is 0.10000000000000009) passes
        mem[arm] = {"gap": v, "passes": bool(rounded(v) <= rounded(cfg["memorisation_nats"]))}
    if e_half is not None and half_step is not None:
        # 'differ by less than sesoi', rounded likewise: a change of exactly sesoi is not less
        stable = bool(np.sign(e_half.mean) == np.sign(e_end.mean)
                      and rounded(abs(e_end.mean - e_half.mean)) < rounded(sesoi))
        horizon = {"step": int(half_step), "at_half": e_half.mean, "at_end": e_end.mean, "passes": stable}
    else:
        horizon = {"step": None, "at_half": float("nan"), "at_end": float("nan"), "passes": False}
    parts = {"context": all(c["passes"] for c in ctx.values()), "memorisation": all(m["passes"] for m in mem.values()),
             "horizon": horizon["passes"]}
    reason = ("" if all(parts.values()) else "not trained enough" if not parts["context"] else
              "trained into memorisation" if not parts["memorisation"] else "not stable between horizons")
    below = "; ".join(f"{m}/{i} {g['below']:+.2f} below unigram" for (m, i), g in ctx.items())
    held = "; ".join(f"{m}/{i} held-out minus training {g['gap']:+.3f}" for (m, i), g in mem.items())
    text = (f"context: {below} (needs {as_set(cfg['context_floor_nats'])}); memorisation: {held} (at most "
            f"{as_set(cfg['memorisation_nats'], 2)}); horizon: effect {horizon['at_half']:+.3f} at step "
            f"{horizon['step']} and {horizon['at_end']:+.3f} at the end")
    why = gate_why({"gate_reason": reason, "horizon_at_half": horizon["at_half"], "horizon_at_end": horizon["at_end"],
                    "sesoi": sesoi}) if reason else ""
    return {"passes": all(parts.values()), "parts": parts, "reason": reason, "why": why, "context": ctx,
            "memorisation": mem, "horizon": horizon, "text": text}


def gate_why(r) -> str:
    """A failed gate's reason with what was measured, where the row carries it: for the
    horizon part, the paired effect half-way and at the end against what :func:`gate` asks
    (the same sign and a change below the smallest effect of interest d), e.g. 'not stable
    between horizons: the effect was +0.087 half-way and +0.148 at the end, a change of 0.061
    where the rules allow less than d = 0.055'."""
    if r.get("gate_why"):
        return str(r["gate_why"])          # the gate's own words, where the row carries them
    reason = r.get("gate_reason") or "its gate failed"
    half, end, d = (r.get(k) for k in ("horizon_at_half", "horizon_at_end", "sesoi"))
    if reason == "not stable between horizons" and isinstance(half, float) and half != half:
        # the row carries no effect half-way (NaN: the half-horizon step unlogged, or no seed of both
        # arms there): the horizons were never compared, so nothing was found unstable
        return (f"{reason}: no paired effect half-way could be formed (no seed of both arms logged the "
                "half-horizon step), so the effect at the end cannot be shown stable")
    if reason != "not stable between horizons" or any(v is None or v != v for v in (half, end, d)):
        return reason
    how = ("the sign changed" if half * end <= 0 else
           f"a change of {abs(end - half):.3f} where the rules allow less than d = {as_set(d)}")
    return f"{reason}: the effect was {half:+.3f} half-way and {end:+.3f} at the end, {how}"


def _non_finite_seeds(pair: dict) -> list[int]:
    """The seeds of ``pair`` (those both arms ran, as the paired t pairs them) whose paired
    value at the end or half-way is not a finite number in either arm, whose memorisation
    gap (held-out minus training loss) is missing or not finite in either arm, or whose final
    held-out loss is not finite in either arm."""
    a, b = (pd.Series(v, dtype=float) for v in pair["end"])
    common = a.index.intersection(b.index)
    bad = set()
    for values in (pair["end"], pair.get("half")):
        if values is not None:
            bad |= {int(s) for s in seeds_without_a_number(*values)}
    for gaps in (pair.get("gaps") or {}).values():
        g = pd.Series(gaps, dtype=float)
        bad |= {int(s) for s in common if s not in g.index or not np.isfinite(g[s])}
    # a final held-out loss that is no finite number (a diverged run) read 'not trained enough'
    # through the context part's mean; it is a seed without a number, named as such
    for loss in (pair.get("losses") or {}).values():
        v = pd.Series(loss, dtype=float)
        bad |= {int(s) for s in common if s in v.index and not np.isfinite(v[s])}
    return sorted(bad)


def _refuse_non_finite_seeds(g: dict, pair: dict) -> dict:
    """The gate fails where a seed of the pair gave no finite value (a diverged run): the
    paired t would drop that seed and decide on the others, a choice of seeds the rules never
    made.  This part is named first when it fails (the other parts read the values it found
    missing), and the others' text is kept.  Rules v3's gate does the same, naming the seed."""
    bad = _non_finite_seeds(pair)
    if not bad:
        return {**g, "parts": {**g["parts"], "finite": True}}
    why = (f"seed(s) {', '.join(map(str, bad))} gave no finite value (the effect at the end or "
           "half-way, the memorisation gap or the held-out loss); a test over the other seeds would choose its seeds "
           "after the data")
    return {**g, "passes": False, "parts": {**g["parts"], "finite": False},
            "reason": "a seed gave no finite value", "why": f"a seed gave no finite value: {why}",
            "text": f"{g['text']}; finite values: {why}"}


def apply_rule_to_pair(key: str, r: dict, body: str, pair: dict, evidence: dict) -> dict:
    """The rule applied once to one paired test of a body's evidence
    (:func:`companion.train.studies.evidence.body_evidence`): everything the verdict's row
    states, as values.

    The paired effect is candidate minus comparator by seed (for Table 1, baseline minus
    candidate: > 0 when the symmetric start is ahead), at the end and half-way; the gate
    (:func:`gate`); the v2 outcome against the yardstick ``evidence["sesoi"]``; the power of
    the applied test; the one-sided p-values (the deciding one for Holm); whether the rule
    was written after the runs; and, beside it, the outcome version 1 gave (its gate: every
    arm 1 nat below its reference; its band: ``pair["first_band"]``)."""
    fw = r["framework"]
    level = fw.get("level", 0.95)

    def effect(values):
        a, b = values
        return paired_t(b, a, level) if key == "table_1" else paired_t(a, b, level)

    est = effect(pair["end"])
    try:
        half = effect(pair["half"]) if pair["half"] is not None else None
    except (CompanionError, ValueError):
        half = None
    sesoi = evidence["sesoi"]
    g = gate(pair["losses"], pair["references"], pair["gaps"], pair["half_step"], est, half, sesoi, fw["gate"])
    g = _refuse_non_finite_seeds(g, pair)
    outcome = directional_outcome(est, sesoi, r.get("min_seeds", 3), g["passes"])
    old_gate = all(rounded(c["below"]) >= 1.0 for c in g["context"].values())   # v1's gate: 1 nat below (rounded as the v2 gate)
    outcome_first = directional_outcome_first(est, pair["first_band"], 3, old_gate)
    comparator = pair["comparator"]
    if comparator in r.get("reported_beside", []):
        outcome = f"{outcome} (reported beside)"
    primary = is_primary(key, r, body, comparator)
    conf = r.get("confirmatory") or {}
    role = "primary" if primary else (
        "confirmatory" if body == conf.get("body") and comparator == conf.get("comparator", comparator)
        else "secondary")
    pw = fw.get("power", {})
    power = directional_power(est.n, power_spread(est), sesoi, est.level, pw.get("target", 0.8), pw.get("draws", 200_000),
                              pw.get("seed", 20261126))
    return {"estimate": est, "half": half, "gate": g, "outcome": outcome, "outcome_first": outcome_first,
            "primary": primary, "role": role, "power": power, "p_holds": p_above(est, 0.0),
            "p_refuted": p_below(est, sesoi),
            "p_decides": deciding_p(est, outcome, sesoi) if est.n > 1 else float("nan"),
            "after": rule_written_after(r, evidence["starts"]), "sesoi": sesoi}
