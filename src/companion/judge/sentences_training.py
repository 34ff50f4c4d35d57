"""The training claims' sentences: bodies of runs, paired tests at their looks, runs landed and awaited."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..base.phrasing import interval, joined
from .sentences_words import MISSING, _finite, _num, _part_of, count_of

__all__ = ["symmetry_peak", "EncoderDecoderBody", "encoder_decoder_body", "below_unigram", "paired_test",
           "look_reading", "spread_uncertainty", "training_summary", "paired_result", "swap_mirror",
           "thm_s1_14_clause", "training_bottom_line", "gate_floor", "horizon_flips", "runs_before_next_look",
           "training_runs_said", "minutes_by_mode", "variants_held_back", "regime_setting", "sooner_or_later",
           "paper_rate_runs", "other_corpora"]


def symmetry_peak(peak_step: int, peak: float, last_step: int, last: float) -> str:
    """Where the encoders' mean symmetry peaked over training, and whether the end state is
    what is left of a structure training built and then largely undid (below half the peak).
    A value that is not a number is said to be missing, and no shape is read from it.  A peak
    is early when it lies in the first half of the steps; half a peak is read only of a peak
    above 0 (a value at a negative peak is no fall from it); a peak after the last step is
    refused in one line."""
    if _finite(peak_step, last_step) and float(peak_step) > float(last_step):
        raise ValueError(f"the peak at step {peak_step} comes after the last step {last_step}; pass the step of "
                         "the curve's maximum and its last logged step.")
    if _finite(peak, last) and float(last) > float(peak):   # the peak is the highest value, the end's included
        raise ValueError(f"the end value {float(last)!r} is above the peak {float(peak)!r}; pass the curve's "
                         "maximum as the peak (its end included).")
    if not _finite(peak, last):
        return (f"The encoders' mean symmetry is missing at its peak or at its end (a value that is not a number), "
                f"so whether training undid the structure it built is not read: peak {_num(peak, '.3f')} at step "
                f"{peak_step}, end {_num(last, '.3f')} at step {last_step}.")
    if peak > 0 and last < 0.5 * peak:
        early = _finite(peak_step, last_step) and float(peak_step) <= 0.5 * float(last_step)
        return (f"The encoders' mean symmetry peaks{' early,' if early else ''} at step {peak_step} "
                f"({_num(peak, '.3f')}), and has fallen to "
                f"{_num(last, '.3f')} by step {last_step}: at this size the ordering at the end of a run is read off a "
                f"structure that training built and then largely undid.")
    return (f"The encoders' mean symmetry is highest at step {peak_step} ({_num(peak, '.3f')}) and ends at "
            f"{_num(last, '.3f')} (step {last_step}).")


@dataclass(frozen=True)
class EncoderDecoderBody:
    """What one body of encoder/decoder runs shows at its last step (standard initialisation)."""

    n_encoders: int
    n_decoders: int
    enc_symmetry: float            # means over seeds of the layer-mean scores
    dec_symmetry: float
    enc_directionality: float
    dec_directionality: float
    n_pairs: int                   # seed pairs with both arms
    n_enc_more_symmetric: int      # pairs where the encoder is the more symmetric
    n_dec_more_directional: int    # pairs where the decoder is the more column-dominant
    test_symmetry: str             # the rule's paired tests, as text (What survives)
    test_symmetry_authors: str
    test_directionality: str
    n_reversed: int                # pairs where the decoder is the more symmetric beyond the band
    n_gaps: int                    # pairs with both gaps computed
    band_symmetry: float           # the smallest effect of interest of the symmetry gap
    peak: str                      # symmetry_peak(...)
    n_late_top: int                # encoder seeds whose most symmetric layer is in the later half
    n_top: int


def encoder_decoder_body(b: EncoderDecoderBody) -> str:
    """The orderings a body shows (the paper draws them without an interval), the rule's tests
    of the mean paired gaps, the reversals beyond the yardstick, and Fig. 3c's late layers.  A
    count of pairs or seeds larger than the whole it is a part of is refused in one line."""
    _part_of(b.n_enc_more_symmetric, b.n_pairs, "seed pairs")
    _part_of(b.n_dec_more_directional, b.n_pairs, "seed pairs")
    _part_of(b.n_reversed, b.n_gaps, "seeds with both gaps")
    _part_of(b.n_late_top, b.n_top, "encoder seeds")
    return (f"Standard initialisation, {b.n_encoders} encoder and {count_of(b.n_decoders, 'decoder seed')}: "
            f"mean symmetry {_num(b.enc_symmetry, '.3f')} against {_num(b.dec_symmetry, '.3f')}, the encoder the more symmetric in "
            f"{b.n_enc_more_symmetric} of {count_of(b.n_pairs, 'seed pair')}; mean directionality "
            f"{_num(b.enc_directionality, '+.3f')} against {_num(b.dec_directionality, '+.3f')}, the decoder the more column-dominant "
            f"in {b.n_dec_more_directional} of {b.n_pairs}. The paper draws both orderings without an interval; "
            f"the rule of What survives tests the mean paired gap over seeds: symmetry {b.test_symmetry} (against "
            f"the authors' decoder: {b.test_symmetry_authors}), directionality {b.test_directionality}. In "
            f"{b.n_reversed} of {count_of(b.n_gaps, 'seed')} the decoder ends the more symmetric by more than the "
            f"smallest effect of interest ({_num(b.band_symmetry, '.3f')}). {b.peak} The most symmetric encoder layer is "
            f"in the later half of the network in {b.n_late_top} of {count_of(b.n_top, 'seed')} "
            f"(Fig. 3c's late layers).")


def below_unigram(min_standard_errors: float) -> str:
    """Every finished run ends below its corpus's unigram reference, by at least this many
    standard errors of the evaluation sample (the nearest whole number); a least distance
    below one keeps its digits, and one of 0 or less (a run at or above the reference) is
    said so, never 'every run ends below'."""
    m = min_standard_errors
    if not _finite(m):
        return ("How far the finished Wikipedia runs end below the corpus's unigram reference is missing (a run's "
                "loss or standard error is not a number).")
    m = float(m)
    if m <= 0:
        where = "at it" if m == 0 else f"{_num(-m, '.1f')} standard errors above it"
        return f"Not every finished Wikipedia run ends below the corpus's unigram reference: one ends {where}."
    if m < 1:
        return (f"Every finished Wikipedia run ends below the corpus's unigram reference, the closest by "
                f"{_num(m, '.2f')} of a standard error of the evaluation sample.")
    k = math.floor(m)   # "at least k": rounded down, never past the distance itself
    return (f"Every finished Wikipedia run ends below the corpus's unigram reference, by at least "
            f"{count_of(k, 'standard error')} of the evaluation sample.")


def paired_test(table, body_key: str, comparator: str = "decoder", bodies=None) -> str:
    """The rule's paired test of one claim on one body of runs, as What survives reports it:
    ``+0.034 (95% t-interval +0.009 to +0.059, seeds 10,11,12), not testable here``.

    ``table`` is :func:`companion.judge.claims.training_tests_table` of the claim; ``bodies``
    the rules file's body keys (default: those of ``data/verdict_rules.yaml``).  A key the
    rules file does not name is an error (a renamed body must not read as missing runs); a
    named body with no runs yet reads "not computed (runs missing)".
    """
    if bodies is None:
        from ..rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

        bodies = load_rules()["bodies"]
    if body_key not in bodies:
        raise ValueError(f"no body {body_key!r} in the rules file; its bodies are {sorted(bodies)}")
    r = table[(table["body_key"] == body_key) & (table["comparator"] == comparator)]
    if r.empty:
        return "not computed (runs missing)"
    if len(r) > 1:   # the first of two tests would be read as the only one
        raise ValueError(f"the table has {len(r)} rows for body {body_key!r} against the {comparator}; pass one "
                         "claim's table (one row per body and comparator).")
    r = r.iloc[0]
    n = _seed_count(r["n"])
    iv = interval(r["low"], r["high"]) if n > 1 else "one seed, no interval" if n == 1 else "no seeds, no interval"
    est = _num(r["estimate"], "+.3f")
    return f"{'estimate missing' if est == MISSING else est} ({iv}, seeds {r['seeds']}), {r['outcome']}"


def _seed_count(n) -> int:
    """``n`` as a number of seeds (a whole number, 0 or more); anything else (NaN, -1, 2.5, a
    bool) is refused in one line: a count that is no count must not read as 'one seed'."""
    import numbers

    if isinstance(n, bool) or not isinstance(n, numbers.Real) or not _finite(n) or n < 0 or n != int(n):
        raise ValueError(f"the number of seeds {n!r} is not a whole number of 0 or more; pass the test's row's 'n'.")
    return int(n)



def look_reading(seeds_in: int, look) -> str:
    """``4 seeds in, read at look 1``: how far a rules-v3 verdict is; before the first look
    (``look`` 'none yet') ``2 of 12 seeds in, no look read yet``.  A look written as the
    verdicts write it, ``look k of m (n seeds)``, must be one of the looks (1 <= k <= m) and
    have its seeds in (``seeds_in`` >= n), or it is refused in one line."""
    import re

    n_in = _seeds_in(seeds_in)
    m = re.fullmatch(r"\s*look (\d+) of (\d+)(?: \((\d+) seeds?\))?\s*", str(look))
    if m and not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"{look!r} is no look of the rules (looks 1 to {m.group(2)}); pass the verdict's 'look'.")
    if m and m.group(3) and n_in < int(m.group(3)):
        raise ValueError(f"{look!r} reads {m.group(3)} seeds but {n_in} are in; pass the verdict's 'seeds in' "
                         "and 'look' of one row.")
    if str(look) == "none yet":
        return f"{count_of(seeds_in, 'seed')} in, no look read yet"
    return f"{count_of(seeds_in, 'seed')} in, read at {look}"


def _seeds_in(seeds_in) -> int:
    """The seeds in of a verdict's row, written ``6 of 12`` (as the verdicts write it) or as a
    number; ``13 of 12`` (more seeds in than the claim plans) is refused in one line."""
    import re

    got = re.fullmatch(r"\s*(\d+) of (\d+)\s*", seeds_in) if isinstance(seeds_in, str) else None
    if got and int(got.group(1)) > int(got.group(2)):
        raise ValueError(f"{seeds_in.strip()!r} seeds in is more seeds than there are; pass the verdict's "
                         "'seeds in' as 'k of n' with k <= n.")
    return int(got.group(1)) if got else _seed_count(seeds_in)


def spread_uncertainty(bounds) -> str:
    """How far the true seed-to-seed spread may lie from the observed one, for each number of
    seeds a look reads: ``bounds`` maps seeds to (low, high) multiples, e.g. ``{3: (0.52, 6.28),
    6: (0.62, 2.45)}`` gives ``3 seeds leave the true spread anywhere from 0.52 to 6.28 times
    the observed one, 6 seeds from 0.62 to 2.45 times``."""
    from ..base.phrasing import count

    for n in dict(bounds):   # a spread needs two seeds: '1 seeds leave the true spread' reads none
        if count(n, "number of seeds a look reads") < 2:
            raise ValueError(f"one seed has no spread; give the bounds for looks of at least 2 seeds (got {n!r}).")
    parts = [f"{n} seeds {'leave the true spread anywhere ' if i == 0 else ''}from {_num(lo, '.2f')} to {_num(hi, '.2f')} times"
             + (" the observed one" if i == 0 else "")
             for i, (n, (lo, hi)) in enumerate(sorted(dict(bounds).items()))]
    if not parts:
        raise ValueError("no look to describe: give the spread's bounds for at least one number of seeds")
    return ", ".join(parts)


def training_summary(rows) -> str:
    """The training claims' readings at their looks in one line: ``Fig. 3a holds (4 seeds in,
    read at look 1); Table 1 not read yet (2 of 12 seeds in)``; ``rows``: (claim label, status,
    seeds in, look).  A status with words of its own in brackets (a fixed sequence's, under an
    earlier rules file) is stated as the book's status, 'inconclusive', with those words after
    the look: ``Fig. 3b inconclusive (6 seeds in, read at look 2; provisional: ...)``, so one
    claim is never given two statuses."""
    def one(label, status, n, look):
        status = str(status)
        _seeds_in(n)
        if str(look) == "none yet":
            return f"{label} {status} ({count_of(n, 'seed')} in)"
        if "(" in status:
            words = status[status.index("(") + 1:].rstrip(")")
            return f"{label} inconclusive ({look_reading(n, look)}; {words})"
        return f"{label} {status} ({look_reading(n, look)})"

    return "; ".join(one(*r) for r in rows)


def paired_result(estimate: float, low: float, high: float, n: int, outcome: str) -> str:
    """One paired test as ``+0.034 [+0.009, +0.059]: holds``; ``+0.034 (1 seed): ...`` with
    one seed.  An interval whose lower bound is above its upper one, or a number of seeds that
    is no whole number of 0 or more, is refused in one line."""
    n = _seed_count(n)
    if _finite(low, high) and low > high:
        raise ValueError(f"the interval runs from {low!r} down to {high!r}; pass its lower bound first.")
    if not _finite(estimate):
        return f"estimate missing (not a number): {outcome}"
    shown = (interval(low, high, estimate=estimate) if n > 1 else f"{_num(estimate, '+.3f')} (1 seed)" if n == 1
             else f"{_num(estimate, '+.3f')} (no seeds)")
    return f"{shown}: {outcome}"


def swap_mirror(gap: float, sesoi: float, n: int, judged: bool, outcome: str) -> str:
    """The objective swap's mirror (a pretrained decoder fine-tuned without its mask against
    its causal control): ``gap`` is swap minus control in symmetry, which the claim predicts
    positive; reported only unless ``judged``.  Starts with a space (it follows a sentence).
    A gap or yardstick that is not a number is said to be missing, with no direction read; a
    yardstick of 0 or less, or seeds that are no whole number, are refused in one line."""
    n = _seed_count(n)
    if _finite(sesoi) and float(sesoi) <= 0:   # every gap would read 'larger than' a yardstick of -0.01
        raise ValueError(f"the mirror's smallest effect of interest must be a number > 0; got {sesoi!r}: pass its "
                         "size, not a signed effect.")
    if not _finite(gap, sesoi):
        return (f" The mirror, a pretrained decoder (SmolLM2-135M) fine-tuned without its causal mask against "
                f"its causal control, has no number for its gap in symmetry relative to the control or for its "
                f"smallest effect of interest (a value is missing), with {n} seed(s) per arm: no direction is "
                "read from it.")
    # a gap of exactly 0 is neither with nor against the prediction, and one of the yardstick's size
    # neither larger nor smaller than it
    way = "with" if gap > 0 else "against" if gap < 0 else "neither with nor against"
    size = ("larger than" if abs(gap) > sesoi else "smaller than" if abs(gap) < sesoi else "as large as")
    return (f" The mirror, a pretrained decoder (SmolLM2-135M) fine-tuned without its causal mask against "
            f"its causal control, ended {_num(gap, '+.4f')} in symmetry relative to the control "
            f"({way} the prediction, {size} its smallest effect of interest, "
            f"{_num(sesoi, '.4f')}), with {n} seed(s) per arm: "
            + ("reported, not judged." if not judged else f"{outcome} by the same rule."))


def thm_s1_14_clause(holds: bool) -> str:
    """The clause after Thm. S1.14's status: what masked training does for symmetry."""
    if holds:
        return ": masked training builds its symmetry through the theorem's pairs"
    return ", although masked training does build symmetry"


def training_bottom_line(decided, n_untested: int) -> str:
    """The bottom line on training: ``decided`` lists (claim, predicate) of the training claims
    that have a decided status; ``n_untested`` more are not testable (a whole number >= 0)."""
    from ..base.phrasing import count

    n_untested = count(n_untested, "number of claims not testable")
    decided = list(decided)
    if not decided:
        return ("Whether training builds the paper's structures through the paper's mechanism is a question these "
                "runs are not far enough along to answer by the rules set for them, and the verdicts say so rather "
                "than reading an answer into them.")
    return ("In training, " + joined(f"{claim} is {predicate}" for claim, predicate in decided)
            + (f"; 1 more is not testable on the runs made here (its verdict names why)." if n_untested == 1 else
               f"; {n_untested} more are not testable on the runs made here (each verdict names why)."
               if n_untested else "."))


def gate_floor(floor: float) -> str:
    """The gate's context floor in nats: ``ln 2 = 0.693`` when it is ln 2 (to 5e-4) and reads
    0.693, else the number with every digit it was set with."""

    if not _finite(floor):
        return f"{MISSING} (the gate's floor is not a number)"
    if abs(floor - math.log(2)) < 5e-4 and f"{floor:.3f}" == "0.693":
        return "ln 2 = 0.693"
    from ..base.phrasing import as_set

    return as_set(floor, 3)   # 0.6925 or 0.6935, never '0.693' (read as ln 2) nor 'ln 2 = 0.694'


def horizon_flips(rows, half_step: int) -> str:
    """The tests whose effect changes between the half-way step and the end: ``rows`` are
    (figure, comparator, effect at half, effect at end, smallest effect of interest); a flip
    that both ends are smaller than d is said so (``half_step``: a whole number >= 0)."""
    from ..base.phrasing import count

    half_step = count(half_step, "step")
    flips = []
    for figure, comparator, at_half, at_end, sesoi in rows:
        small = _finite(at_half, at_end, sesoi) and max(abs(at_half), abs(at_end)) < sesoi
        flips.append(f"{figure} against the {comparator}, {_num(at_half, '+.3f')} at step {half_step:,} and "
                     f"{_num(at_end, '+.3f')} at the end" + (f", both smaller than d = {_num(sesoi, '.3f')}" if small else ""))
    return "; ".join(flips) if flips else "no test of this body fails it"


def runs_before_next_look(waiting) -> str:
    """The rules-v3 claims still waiting for runs before their next look: ``waiting`` lists
    (claim label, names of the missing runs); the first two runs are named."""
    waiting = list(waiting)
    if not waiting:
        return "every run of the looks read so far has landed"
    shared = {}   # claims of one body wait for the same runs: named once, with every claim that waits
    for label, missing in waiting:
        shared.setdefault(tuple(missing), []).append(label)
    return "; ".join(f"{joined(labels)}: {len(missing)} run(s) before {'its' if len(labels) == 1 else 'their'} next look "
                     f"({', '.join(missing[:2])}{', ...' if len(missing) > 2 else ''})"
                     for missing, labels in shared.items())


def training_runs_said(table, primary_arms: dict | None = None) -> str:
    """What the table of landed rules-v3 runs (``runs_table``) says in two sentences: how
    many runs per body, on which devices, how long after the rules' first commit they
    started, for how many every step's machine is recorded, and how far apart in time the
    arms of one seed started (a pair started hours apart may have met two machines), and,
    where the table has ``CPU s/step``, the compute a CPU step took against its wall clock.
    ``primary_arms``: the pairs a claim compares in each body, ``{body: [(candidate,
    comparator), ...]}`` (:func:`companion.train.studies.registered_bodies.claim_pairs`), or
    ``{body: [arm, ...]}`` (every two of those arms a pair); only those pairs count in how far
    apart a pair started (a secondary arm enters no pair).  Without it, a seed with exactly
    two runs is a pair, and a seed with more gives no figure (which two are compared is not
    known)."""
    if len(table) == 0:
        return "No run of the confirmatory bodies has landed yet."
    per_body = joined(f"{n} of {body}" for body, n in table.groupby("body", sort=False).size().items())
    named = sorted({_device_name(d) for d in table["device"]} - {""})
    devices = joined(["the CPU" if d == "CPU" else d for d in named]
                     + (["an unrecorded device"] if any(not _device_name(d) for d in table["device"]) else []))
    after = table["after rules (h)"]
    # a run whose machines are not text (a missing cell) has none recorded
    recorded = sum(isinstance(m, str) and bool(m.strip()) and "not recorded" not in m for m in table["machines"])
    spread = _pair_spread(table, primary_arms)
    apart = (f" The two runs of a pair started up to {_num(max(spread), '.1f')} h apart, so a pair may have met "
             "two machines even where both read the same device." if spread and max(spread) > 0 else "")
    pace = ""
    if "CPU s/step" in table and table["CPU s/step"].notna().any():
        from ..base.phrasing import span

        cpu = table["CPU s/step"][[_finite(v) for v in table["CPU s/step"]]]
        wall = span(table.loc[cpu.index, "s/step"] if "s/step" in table else (), ".2f", empty="")
        pace = (f" On the CPU a step took {span(cpu, '.2f')} s of compute (one thread); "
                + (f"the wall clock per step, {wall} s, also counts the time a run was paused or shared its core."
                   if wall else "the wall clock per step is not recorded."))
    unknown = len(after) - sum(_finite(a) for a in after)
    after = after[[_finite(a) for a in after]]
    when = _when(float(after.min()), float(after.max())) if len(after) else \
        "with no start recorded against the rules' first commit"
    if len(after) and unknown:   # the span is of the runs with a start: say how many it leaves out
        when += f" ({count_of(unknown, 'run')} with no start recorded)"
    return (f"{count_of(len(table), 'run')} landed ({per_body}), made on {devices}, "
            f"{when}. Every step's machine "
            f"is recorded for {recorded} of them (runs begun before machines were recorded say "
            f"'not recorded').{apart}{pace}")


def _device_name(d) -> str:
    """A run's device as text, or '' where it is not recorded (a missing cell, blank text)."""
    return d.strip() if isinstance(d, str) else ""


def _when(lo: float, hi: float) -> str:
    """When the runs started against the rules' first commit, ``lo`` to ``hi`` hours after it:
    a start before it (a negative number of hours) is said to be before, never '-2.0 h after',
    and a small one keeps its digits (``0.04 h``, never ``-0.0``)."""
    h = lambda v: _num(abs(v), ".1f")
    if lo >= 0:
        return f"starting {h(lo)} to {h(hi)} h after the rules' first commit"
    if hi < 0:
        return f"starting {h(hi)} to {h(lo)} h before the rules' first commit"
    return f"starting {h(lo)} h before to {h(hi)} h after the rules' first commit"


def _pair_spread(table, primary_arms) -> list[float]:
    """Hours between the starts of the two runs of each pair :func:`training_runs_said` counts
    (a start not recorded gives none)."""
    import itertools

    t = pd.to_datetime(table["started"], utc=True, errors="coerce", format="ISO8601")
    has_arm = "arm" in table
    out = []
    for (body, _), idx in table.groupby(["body", "seed"], sort=False).groups.items():
        when = {}
        for i in idx:
            when.setdefault(table.at[i, "arm"] if has_arm else i, []).append(t[i])
        if primary_arms is None:
            pairs = [tuple(when)] if len(idx) == 2 and len(when) == 2 else []
        else:
            named = list(primary_arms.get(body) or ())
            pairs = ([tuple(p) for p in named] if named and all(isinstance(p, (tuple, list)) for p in named)
                     else list(itertools.combinations([a for a in named if isinstance(a, str)], 2)))
        for a, b in pairs:
            if len(when.get(a, ())) == 1 and len(when.get(b, ())) == 1:
                h = abs((when[a][0] - when[b][0]).total_seconds()) / 3600
                if _finite(h):
                    out.append(h)
    return out


def minutes_by_mode(minutes) -> str:
    """``12 minutes (decoder) and 15 minutes (encoder)``: the CPU time of a run, per mode
    (``minutes`` maps each mode to its minutes, in the order to be read); a negative time is
    refused in one line."""
    minutes = dict(minutes)
    if bad := [f"{k} ({v!r})" for k, v in minutes.items() if _finite(v) and float(v) < 0]:
        raise ValueError(f"a CPU time is never negative; got minutes {', '.join(bad)}: pass each mode's minutes.")

    def one(mode, v):
        if not _finite(v):
            return f"time missing ({mode})"
        shown = _num(v, ".0f")   # 0.3 reads 0.3, never '0 minutes'
        return f"{shown} minute{'' if shown == '1' else 's'} ({mode})"

    return joined(one(k, v) for k, v in minutes.items())


def variants_held_back(rows, max_pair_cpu_s: float) -> str:
    """The compute study's variants that left the band sooner than the regime, each with what
    kept it out: ``rows`` are (variant, decoder directionality, encoder directionality, CPU
    seconds of a pair); ``none`` when there are none.  A variant that none of the regime's
    conditions keeps out says so in words, never ``v ()``: it is still one that left sooner."""
    out = []
    for v, dec_dir, enc_dir, cpu_s in rows:
        if not _finite(dec_dir, enc_dir):
            reasons = ["its directionality is missing"]
        else:
            # 0 is neither row- nor column-dominant; a value that rounds to 0 keeps its sign (+0.004)
            ends = ("row-dominant" if dec_dir > 0 else "neither row- nor column-dominant")
            reasons = [txt for bad, txt in (
                (not dec_dir < 0, f"its decoder ends {ends} ({_num(dec_dir, '+.2f')})"),
                (not dec_dir < enc_dir, "its decoder is not the more column-dominant")) if bad]
        if not _finite(cpu_s):
            reasons.append("its cost is missing")
        elif cpu_s > max_pair_cpu_s:
            reasons.append(f"a pair costs {_num(cpu_s, '.0f')} CPU-seconds")
        out.append(f"{v} ({'; '.join(reasons) or 'nothing recorded keeps it out'})")
    return ", ".join(out) or "none"


def regime_setting(variant) -> str:
    """What the compute study's regime changes: ``(setting, value)`` as ``lr = 0.003``; None
    for the base configuration.  The value is written with every digit it was set with (a switch
    as ``True`` or ``False``), never rounded to six digits."""
    if variant is None:
        return "the base configuration"
    name, value = variant
    if isinstance(value, str) or type(value).__name__ in ("bool", "bool_"):
        return f"{name} = {value}"
    if not _finite(value):
        return f"{name} = {MISSING}"
    import numbers

    if isinstance(value, numbers.Integral):
        return f"{name} = {int(value)}"
    from ..base.phrasing import as_set

    return f"{name} = {as_set(value, 0)}"


def sooner_or_later(exponent: float) -> str:
    """Whether a projected exit comes sooner (a negative exponent of width) or later; an exponent
    of 0 is neither."""
    if not _finite(exponent):
        return "sooner or later, which cannot be told (the exponent is missing)"
    return "sooner" if exponent < 0 else "later" if exponent > 0 else "neither sooner nor later (the exponent is 0)"


def paper_rate_runs(loss_paper: float, below_unigram: float, loss_book: float, sym_paper: float,
                    sym_book: float, n_seeds: int, settings: str) -> str:
    """The encoders trained at the paper's learning rate against the book's, paired by seed:
    held-out loss and mean symmetry at the end, and what the runs saw (``settings``).  A loss
    above the unigram reference (``below_unigram`` < 0) is said to be above it, never '-0.05 below'."""
    b = below_unigram
    where = (f"how far from the unigram reference is {MISSING}" if not _finite(b) else
             f"{_num(b, '.2f')} below the unigram reference" if b > 0 else
             f"{_num(-b, '.2f')} above the unigram reference" if b < 0 else "at the unigram reference")
    return (f"At the paper's rate the encoders end at a held-out loss of {_num(loss_paper, '.2f')} "
            f"nats ({where}) against "
            f"{_num(loss_book, '.2f')} at the book's, and at a mean symmetry of "
            f"{_num(sym_paper, '.3f')} against {_num(sym_book, '.3f')} "
            f"({count_of(_seed_count(n_seeds), 'paired seed')}). What these runs saw: {settings}.")


def other_corpora(n_cached: int, n_runs: int, n_both: int, n_sym: int, n_dir: int) -> str:
    """The BERT-Mini runs on the other corpora: how many are cached, and on how many of the
    corpora with both arms the encoder is the more symmetric / the decoder the more
    column-dominant."""
    from ..base.phrasing import count

    n_cached, n_runs, n_both, n_sym, n_dir = (count(v, "count of runs or corpora")
                                              for v in (n_cached, n_runs, n_both, n_sym, n_dir))
    if max(n_sym, n_dir) > n_both:
        raise ValueError(f"{max(n_sym, n_dir)} of the {n_both} corpora with both arms: a part is more than its whole; "
                         "pass the counts of one set of runs.")
    cached = (f"{n_cached} of {count_of(n_runs, 'run')} cached" if n_cached <= n_runs else   # never '5 of 4 runs'
              f"{count_of(n_cached, 'run')} cached ({n_runs} planned)")
    return (f"{cached}; of the {n_both} {'corpus' if n_both == 1 else 'corpora'} with both "
            f"an encoder and a decoder, the encoder ends the more symmetric on {n_sym} and the decoder the more "
            f"column-dominant on {n_dir}.")
