"""The fields of a rules file and their bounds, each refused in one line naming the rule and the fix."""

from __future__ import annotations

import math

import numpy as np

from ..base.errors import CompanionError

__all__ = ["ARM_MODES", "ARM_INITS", "GUARD_REFERENCES", "MAX_DRAWS", "MAX_SEED", "MAX_DRAW_CELLS", "CLAIM_QUANTITIES", "LEVELS",
           "POWER_TARGETS", "nominal"]

ARM_MODES = ("encoder", "decoder", "authors-decoder")
ARM_INITS = ("standard", "symmetric")
_QUANTITIES = ("symmetry", "directionality", "eval_loss")
#: what the memorisation guard compares the seen training blocks with (companion.train.runner.loop.guard_samples)
GUARD_REFERENCES = ("unseen", "heldout")
_YARDSTICK_RULES = ("scaled-iqr", "speedup-nats")
#: the largest seed a body may list: ``companion train`` takes seeds in [0, 2**32 - 1]
#: (companion.train.runner.config.MAX_SEED, a layer above the rules)
MAX_SEED = 2 ** 32 - 1
#: the design check's Monte Carlo size is bounded (a typo of 10^9 draws would exhaust memory)
MAX_DRAWS = 2_000_000
#: ... and so is each simulated matrix, draws x the last look's seeds (8 bytes each; the family
#: check holds one per body at once): 2,000,000 draws of 935 seeds asked numpy for 14.9 GB.  The
#: simulations themselves hold every caller to it (companion.rules.sequential)
from .sequential import MAX_DRAW_CELLS  # noqa: E402


def _check_simulation_size(draws, looks, path, where) -> None:
    """Refuse a Monte Carlo check whose draws x last-look matrix would not fit in memory."""
    cells = int(draws) * int(looks[-1])
    if cells > MAX_DRAW_CELLS:
        _fail(path, where, f"{draws:,} draws of the last look's {looks[-1]} seeds ask for {cells * 8 / 1e9:.1f} GB "
                           f"per simulated matrix; draws x the last look's seeds may be at most {MAX_DRAW_CELLS:,}: "
                           f"lower 'draws' to {MAX_DRAW_CELLS // int(looks[-1]):,} or fewer.")


def _fail(path, where: str, what: str):
    raise CompanionError(f"{where} in {path}: {what}")


def yaml_hint(v) -> str:
    """Why text that reads as a number was read as text: YAML 1.1 (PyYAML) takes an exponent
    for a number only with a decimal point before it and a sign after the ``e``: ``1e-3`` and
    ``1.0e5`` are strings, ``1.0e-3`` and ``1.0e+5`` numbers."""
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return ""
        if not math.isfinite(x):
            return ""
        if "e" not in v.lower():
            return f" (text, not a number: write {_yaml_number(x)} without quotes)"
        return (" (YAML reads a number with an exponent as text unless a decimal point comes before the e and a "
                f"sign after it, as in 1.0e-3 or 1.0e+5: write {_yaml_number(x)})")
    return ""


def _yaml_number(x: float) -> str:
    """``x`` written so that YAML 1.1 reads it as a number."""
    mantissa, _, exponent = f"{x:.15g}".partition("e")
    if not exponent:
        return mantissa if "." in mantissa else f"{mantissa}.0"
    return f"{mantissa if '.' in mantissa else mantissa + '.0'}e{'' if exponent[0] in '+-' else '+'}{exponent}"


def _num(v, path, where, field, lo=None, hi=None, whole=False):
    ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
          and (not whole or isinstance(v, int)) and (lo is None or v > lo) and (hi is None or v < hi))
    if not ok:
        rng = f" in ({lo}, {hi})" if lo is not None and hi is not None else (f" > {lo}" if lo is not None else "")
        _fail(path, where, f"{field!r} must be a {'whole ' if whole else ''}number{rng}; got {str(v)[:40]!r}{yaml_hint(v)}.")
    return v


#: every quantity a claim may name (a claim read once: a list of them, more under ``also``); the
#: levels and power targets a file may state (beyond them no seed count reaches the tails asked for)
CLAIM_QUANTITIES = ("symmetry", "directionality", "eval_loss", "update_symmetry", "update_directionality")
LEVELS, POWER_TARGETS = (0.5, 0.999), (0.5, 0.99)


def _check_levels_and_quantities(rules: dict, path) -> None:
    """Refuse, in one line naming the rule and the field, a level or power target outside
    :data:`LEVELS` / :data:`POWER_TARGETS` or a quantity not in :data:`CLAIM_QUANTITIES`
    wherever the file states one (framework, claims read once and their framework, an earlier
    version's claims), before anything is computed from them; a section that is not a mapping
    is left to the schema checks, which name it."""
    def level(v, where, field="level", bounds=LEVELS):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not bounds[0] <= v <= bounds[1]:
            usual = "0.95 is the usual level" if field == "level" else "0.8 is the usual target"
            _fail(path, where, f"{field!r} must be a number from {bounds[0]} to {bounds[1]} ({usual}); got {str(v)[:40]!r}.")

    def framework(fw, where):
        if isinstance(fw, dict) and "level" in fw:
            level(fw["level"], where)
        if isinstance(fw, dict) and isinstance(fw.get("power"), dict) and "target" in fw["power"]:
            level(fw["power"]["target"], f"{where}.power", "target", POWER_TARGETS)

    def claims(section, suffix):
        for key, r in (section.items() if isinstance(section, dict) else ()):
            if isinstance(r, dict) and "level" in r:
                level(r["level"], f"rule {key!r}{suffix}")
            for field in ("quantity", "also") if isinstance(r, dict) else ():
                names = r.get(field) if isinstance(r.get(field), list) else [r.get(field)]
                bad = [q for q in names if q not in CLAIM_QUANTITIES]
                if field in r and r[field] is not None and (bad or not names):   # None: a claim without one
                    _fail(path, f"rule {key!r}{suffix}", f"{field!r} names {str(bad[0] if bad else names)[:40]!r}, "
                                                         f"which no reader computes; use one of {', '.join(CLAIM_QUANTITIES)}.")

    framework(rules.get("framework"), "framework")
    if rules.get("version") in (1, 2):
        claims(rules.get("claims"), "")
    if isinstance(rules.get("evidence"), dict):
        framework(rules["evidence"].get("framework"), "evidence.framework")
        claims(rules["evidence"].get("claims"), " (evidence)")


def _arm(text, path, where):
    if not isinstance(text, str) or text.count("/") != 1:
        _fail(path, where, f"an arm is MODE/INIT (e.g. encoder/standard); got {str(text)[:40]!r}.")
    mode, init = text.split("/")
    if mode not in ARM_MODES or init not in ARM_INITS:
        _fail(path, where, f"arm {text!r}: mode one of {ARM_MODES}, init one of {ARM_INITS}.")
    return mode, init


def nominal(rules: dict) -> np.ndarray:
    """The one-sided nominal level of each look, recomputed from the looks and the spending."""
    from .sequential import nominal_levels

    s = rules["framework"]["sequential"]
    return nominal_levels(s["looks"], s["alpha"], s["spending"])


def _check_sequential(s, path):
    from .sequential import SPENDING

    where = "framework.sequential"
    if not isinstance(s, dict):
        _fail(path, where, "must be a mapping (looks, spending, alpha, nominal_when_fixed).")
    looks = s.get("looks")
    if not (isinstance(looks, list) and looks and all(isinstance(n, int) and not isinstance(n, bool) for n in looks)
            and looks[0] >= 2 and all(b > a for a, b in zip(looks, looks[1:]))):
        _fail(path, where, f"'looks' must be rising whole seed counts >= 2 (e.g. [3, 6, 9, 12]); got {str(looks)[:60]!r}.")
    if len(looks) > 20:
        _fail(path, where, f"at most 20 looks; got {len(looks)}.")
    if s.get("spending") not in SPENDING:
        _fail(path, where, f"'spending' must be one of {SPENDING}; got {str(s.get('spending'))[:40]!r}.")
    _num(s.get("alpha"), path, where, "alpha", 0, 0.5)
    nom = s.get("nominal_when_fixed")
    if not isinstance(nom, list) or len(nom) != len(looks):
        _fail(path, where, f"every look needs its nominal level: {len(looks)} looks, "
                           f"{len(nom) if isinstance(nom, list) else 'no'} levels in 'nominal_when_fixed'.")
    from .sequential import nominal_levels

    try:
        now = nominal_levels(looks, s["alpha"], s["spending"])
    except ValueError as err:
        _fail(path, where, str(err))
    for k, (a, b) in enumerate(zip(nom, now)):
        _num(a, path, where, f"nominal_when_fixed[{k}]", 0, 0.5)
        if abs(a - b) > 1e-3 * b + 1e-9:
            _fail(path, where, f"look {k + 1}'s nominal level {a:.6g} is not what {s['spending']} spending of "
                               f"{s['alpha']} gives the looks {looks} ({b:.6g}); recompute it.")
