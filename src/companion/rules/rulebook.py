"""The rules file, loaded and checked whole before any verdict: the one in force
(``data/verdict_rules.yaml``, version 4) or an earlier one (versions 1 to 3, kept unchanged in
``data/rules_history/`` and read by the page "How the rules changed").  :func:`load_rules` reads
every version; the one place that branches on the version is the schema check (versions 1 and 2:
:func:`companion.rules.verdicts.check_earlier`; version 3: one fixed sequence; version 4:
families whose level is split equally over their members, with a committed family table whose
worst case must stay within the stated level, and the claims read once under ``evidence``).

:func:`load_rules` refuses, in one line naming the rule and the reason, a file that cannot
judge what it says it judges: no version, a key written twice, a look without a nominal level
(or a nominal level that is not what the spending function gives the looks), a claim named
twice or in no family, a family over its level (or read at looks with an alpha of its own,
which the looks would ignore), a yardstick derived from a body it judges or of another quantity
than its claim's, one whose rule's fields (speed-up, scale, the score read at each look) its
reading could not use, a claim comparing an arm with itself, a body whose seeds overlap another's,
are fewer than the last look or cannot seed a run, one listing an arm twice, holding a field no
look reads (``extra_seeds``, ``patterns``) or registered under a file outside the repository, a
design check whose committed table fails its own targets or was computed for other yardsticks,
spreads or settings (or a planning spread that is not its pilot's bound), a family table
computed for other settings, a timestamp without a zone or in the future.  :func:`claim_rule` gives a training claim's rule
(read at looks), :func:`rule` a claim read once.  The fields' bounds are checked in
:mod:`companion.rules.fields`, the committed design and family tables in
:mod:`companion.rules.design_tables` (both re-exported here); the statistics live in
:mod:`companion.rules.sequential` and :mod:`companion.rules.statistics`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..base.errors import CompanionError
from ..base.paths import DATA_DIR
from .design_tables import (SETTINGS_DRAWS, SETTINGS_Z, _check_design, _check_family_table, _committed_path,
                            _required_table, design_table_path, family_table_path)
from .fields import (ARM_INITS, ARM_MODES, CLAIM_QUANTITIES, GUARD_REFERENCES, LEVELS, MAX_DRAW_CELLS, MAX_DRAWS,
                     MAX_SEED, POWER_TARGETS, _QUANTITIES, _YARDSTICK_RULES, _arm, _check_levels_and_quantities, _check_sequential,
                     _check_simulation_size, _fail, _num, nominal)

__all__ = ["RULES_PATH", "RULES_HISTORY", "text_edits_after", "changes_after_first_run", "judging_parts", "family_of",
           "family_table_path", "load_rules", "earlier_rules", "rule", "nominal", "design_table_path", "claim_rule",
           "ARM_MODES", "ARM_INITS", "GUARD_REFERENCES", "CLAIM_QUANTITIES", "LEVELS", "POWER_TARGETS", "MAX_DRAWS",
           "MAX_DRAW_CELLS", "SETTINGS_DRAWS", "SETTINGS_Z"]

#: the one rules file in force (the loader's default)
RULES_PATH = DATA_DIR / "verdict_rules.yaml"
#: the earlier rules files, kept unchanged (read by the page "How the rules changed")
RULES_HISTORY = {v: DATA_DIR / "rules_history" / f"verdict_rules_v{v}.yaml" for v in (1, 2, 3)}

#: the keys a body and a claim read at looks may hold (versions 3 and 4): any other is refused,
#: since a misspelt key reads as absent and its default silently stands in ('sing: -1' left a
#: loss claim's sign at +1, reversing its effect)
BODY_KEYS = frozenset({"label", "pattern", "corpus", "tokenizer", "seeds", "steps", "lr",
                       "arms", "secondary_arms", "guard_reference", "plan", "blind", "devices", "registered"})
CLAIM_KEYS = frozenset({"claim", "quantity", "test", "candidate", "comparator", "secondary_comparators", "sign",
                        "body", "sesoi", "pilot", "fixed", "seen_before", "below_target"})
#: the fields of earlier bodies (versions 1 and 2) that no look reads, refused in a body read at
#: looks with what it reads instead: 'extra_seeds' and 'patterns' loaded and were ignored
EARLIER_BODY_KEYS = {"extra_seeds": "its runs are those of 'seeds' (list every seed there)",
                     "patterns": "its runs are found by its one 'pattern'"}
#: a yardstick's keys ('read_form' for read_from left a yardstick fixed that is read at each look)
YARDSTICK_KEYS = frozenset({"applies_to", "derived_from", "rule", "scale", "speedup", "body", "value_when_fixed",
                            "read_from", "derivation"})

#: the keys of the file's own sections (versions 3 and 4), refused the same way when unknown: a
#: misspelt 'evidense' dropped every claim read once, 'familes' left version 4 without families
SECTION_KEYS = {
    "the file": frozenset({"version", "framework", "bodies", "pilots", "yardsticks", "claims", "evidence"}),
    "framework": frozenset({"fixed", "level", "sequential", "family", "families", "family_check", "gate",
                            "design_check"}),
    "framework.sequential": frozenset({"alpha", "looks", "nominal_when_fixed", "spending"}),
    "framework.gate": frozenset({"context_floor_nats", "derivation", "guard_blocks", "horizon_fraction",
                                 "memorisation_nats", "seen_before"}),
    "framework.design_check": frozenset({"draws", "planning_confidence", "seed", "table", "targets"}),
    "framework.design_check.targets": frozenset({"direction_at_0", "refuted_at_d", "true_at_pilot"}),
    "framework.family": frozenset({"fwer", "method", "order"}),
    "framework.family_check": frozenset({"correlation", "draws", "effects_over_d", "seed", "spreads_over_d", "table"}),
    "evidence": frozenset({"framework", "yardsticks", "claims"}),
    "evidence.framework": frozenset({"level", "power"}),
    "evidence.framework.power": frozenset({"target", "draws", "seed"}),
}
#: a family's keys, and a claim's read once (version 2's fields, which the file's claims read once keep)
FAMILY_KEYS = frozenset({"method", "members", "fwer", "alpha", "tests"})
EVIDENCE_CLAIM_KEYS = frozenset({
    "also", "amended", "amended_at", "arms", "band_derivation", "bodies", "claim", "comparators", "confirmatory",
    "correction", "descriptive", "design", "evidence", "fixed", "gate", "interval", "interval_v2", "level",
    "min_seeds", "outcomes", "p_value", "p_value_v2", "plan", "primary", "quantity", "reported_beside", "secondary",
    "secondary_bodies", "seeds", "seen_before", "sesoi", "test", "threshold", "threshold_derivation", "window",
    "windows"})
#: the arms a claim read once is compared on, fixed by its reading (companion.judge.empirical.update_tests,
#: companion.train.studies.swap): other arms in its rule loaded and were never read
READ_ONCE_ARMS = {"update_structure": {"candidate": "encoder", "comparator": "decoder", "init": "standard"},
                  "objective_swap": {"candidate": "swap", "comparator": "control"}}
DESIGN_KEYS = frozenset({"units", "decoder_rule", "encoder_rule", "tokens", "quantised_copies", "unit_value",
                         "members", "layers", "heads", "test", "family", "check", "planned", "fixed"})


def _check_section_keys(rules: dict, path) -> None:
    """Refuse an unknown key in the file's own sections, a family, a claim read once or its
    design (versions 3 and 4; the earlier files are kept as they were written)."""
    def at(*keys):   # the mapping at that place, or None where the file holds none there
        d = rules
        for k in keys:
            d = d.get(k) if isinstance(d, dict) else None
        return d if isinstance(d, dict) else None

    for where, allowed in SECTION_KEYS.items():
        d = rules if where == "the file" else at(*where.split("."))
        if d is not None:
            _known_keys(d, allowed, path, where)
    for name, f in (at("framework", "families") or {}).items():
        if isinstance(f, dict):
            _known_keys(f, FAMILY_KEYS, path, f"framework.families.{name}")
    for name, y in (at("evidence", "yardsticks") or {}).items():
        if isinstance(y, dict):
            _known_keys(y, YARDSTICK_KEYS, path, f"evidence yardstick {name!r}")
    for key, r in (at("evidence", "claims") or {}).items():
        if isinstance(r, dict):
            _known_keys(r, EVIDENCE_CLAIM_KEYS, path, f"rule {key!r}")
            if isinstance(r.get("design"), dict):
                _known_keys(r["design"], DESIGN_KEYS, path, f"rule {key!r} (design)")


def _known_keys(d: dict, allowed: frozenset, path, where: str) -> None:
    """Refuse, naming it, a key ``allowed`` does not hold."""
    unknown = sorted(str(k) for k in d if k not in allowed)
    if unknown:
        _fail(path, where, f"unknown key {unknown[0][:40]!r} (a misspelt key reads as absent and its default "
                           f"would silently stand in); the keys are {', '.join(sorted(allowed))}.")


def load_rules(path: str | Path | None = None, check_design: bool = True) -> dict:
    """A rules file of any version, checked whole (see the module's docstring): the file in
    force by default, or ``path`` (e.g. ``RULES_HISTORY[2]``).  ``check_design=False`` skips
    the committed design and family tables (used while computing them)."""
    from .verdicts import _when, check_earlier, load_unique

    path = Path(path) if path is not None else RULES_PATH
    if path.exists() and not path.is_dir():   # a FIFO would block, a device never end
        from ..base.paths import regular_file

        regular_file(path, "the rules file")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise CompanionError(f"no rules file at {path}; the book's data/verdict_rules.yaml is needed (run from a "
                             "checkout or an editable install), or give the path of a rules file.") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as err:
        raise CompanionError(f"cannot read the rules at {path} ({type(err).__name__}); give a readable YAML file.") from None
    rules = load_unique(text, path)
    if not isinstance(rules, dict):
        _fail(path, "the file", "must be a mapping (version, framework, bodies, yardsticks, claims).")
    version = rules.get("version")
    if version is None:
        _fail(path, "the file", "has no 'version'; every rules file states its version (1 to 4).")
    if isinstance(version, bool) or not isinstance(version, int) or version not in (1, 2, 3, 4):
        _fail(path, "the file", f"'version' must be 1, 2, 3 or 4; got {str(version)[:20]!r}.")
    _check_levels_and_quantities(rules, path)
    if version <= 2:
        return check_earlier(rules, path)
    _check_section_keys(rules, path)
    rules["__file__"] = str(path)   # where its committed tables are looked for
    for section in ("framework", "bodies", "yardsticks", "claims"):
        if not isinstance(rules.get(section), dict) or not rules[section]:
            _fail(path, "the file", f"{section!r} must be a non-empty mapping.")
    fw = rules["framework"]
    fw["fixed"] = _when(fw.get("fixed"), "framework", path)
    _num(fw.get("level", 0.95), path, "framework", "level", 0, 1)
    _check_sequential(fw.get("sequential"), path)
    if rules["version"] == 3:
        fam = fw.get("family")
        if not isinstance(fam, dict) or fam.get("method") != "fixed-sequence":
            _fail(path, "framework.family", "must be {method: fixed-sequence, order: [...], fwer: ...}.")
        if not isinstance(fam.get("order"), list) or sorted(map(str, fam["order"])) != sorted(rules["claims"]):
            _fail(path, "framework.family", f"'order' must list every claim once ({sorted(rules['claims'])}); "
                                            f"got {str(fam.get('order'))[:80]!r}.")
        _num(fam.get("fwer"), path, "framework.family", "fwer", 0, 0.5)
        fw["families"] = {"all": {"method": "fixed-sequence", "members": list(fam["order"]), "fwer": fam["fwer"]}}
    else:
        _check_families(rules, path)
    gate = fw.get("gate")
    if not isinstance(gate, dict):
        _fail(path, "framework.gate", "must be a mapping.")
    for field in ("context_floor_nats", "memorisation_nats"):
        _num(gate.get(field), path, "framework.gate", field, 0)
    _num(gate.get("horizon_fraction"), path, "framework.gate", "horizon_fraction", 0, 1)
    _num(gate.get("guard_blocks"), path, "framework.gate", "guard_blocks", 1, whole=True)
    dc = fw.get("design_check")
    if not isinstance(dc, dict) or not isinstance(dc.get("targets"), dict):
        _fail(path, "framework.design_check", "must be a mapping with draws, seed, planning_confidence, targets, table.")
    _num(dc.get("draws"), path, "framework.design_check", "draws", 999, MAX_DRAWS + 1, whole=True)
    _check_simulation_size(dc["draws"], fw["sequential"]["looks"], path, "framework.design_check")
    _num(dc.get("seed"), path, "framework.design_check", "seed", -1, whole=True)
    _num(dc.get("planning_confidence"), path, "framework.design_check", "planning_confidence", 0.5, 1)
    for t in ("direction_at_0", "refuted_at_d", "true_at_pilot"):
        _num(dc["targets"].get(t), path, "framework.design_check.targets", t, 0, 1)
    if dc["targets"]["true_at_pilot"] < 0.5:
        _fail(path, "framework.design_check.targets", "'true_at_pilot' below 0.5 is no power target.")
    if not isinstance(dc.get("table"), str):
        _fail(path, "framework.design_check", "'table' must name the committed design table.")

    last_look = fw["sequential"]["looks"][-1]
    seen_seeds: dict = {}
    for key, b in rules["bodies"].items():
        where = f"body {key!r}"
        if not isinstance(b, dict):
            _fail(path, where, "must be a mapping.")
        for field, read in EARLIER_BODY_KEYS.items():
            if field in b:
                _fail(path, where, f"{field!r} is read for the bodies of versions 1 and 2 only; no look of a body "
                                   f"read at looks reads it: {read}.")
        _known_keys(b, BODY_KEYS, path, where)
        for field in ("label", "pattern", "corpus", "plan"):
            if not isinstance(b.get(field), str) or not b[field]:
                _fail(path, where, f"{field!r} must be text.")
        seeds = b.get("seeds")
        if not (isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
            _fail(path, where, f"'seeds' must be a list of whole numbers; got {str(seeds)[:60]!r}.")
        if len(set(seeds)) != len(seeds):
            _fail(path, where, "a seed is listed twice.")
        off = [s for s in seeds if not 0 <= s <= MAX_SEED]
        if off:   # loaded, then listed as a missing run that `companion train` refuses to make
            _fail(path, where, f"seed {off[0]} cannot seed a run: `companion train` takes seeds from 0 to {MAX_SEED}; "
                               "give seeds in that range.")
        if len(seeds) < last_look:
            _fail(path, where, f"{len(seeds)} seeds cannot reach the last look ({last_look} seeds).")
        for s in seeds:
            if s in seen_seeds:
                _fail(path, where, f"seed {s} is also a seed of body {seen_seeds[s]!r}; bodies use their own seeds.")
            seen_seeds[s] = key
        _num(b.get("steps"), path, where, "steps", 0, whole=True)
        _num(b.get("lr"), path, where, "lr", 0)
        arms = b.get("arms")
        if not (isinstance(arms, list) and len(arms) >= 2):
            _fail(path, where, "'arms' must list at least two arms MODE/INIT.")
        if not isinstance(b.get("secondary_arms") or [], list):
            _fail(path, where, "'secondary_arms' must list arms MODE/INIT.")
        for a in arms + list(b.get("secondary_arms") or []):
            _arm(a, path, where)
        listed = arms + list(b.get("secondary_arms") or [])
        twice = [a for a in listed if listed.count(a) > 1]
        if twice:   # a secondary comparison would read a primary arm against itself
            primary = " (as a primary and a secondary arm)" if twice[0] in arms and arms.count(twice[0]) == 1 else ""
            _fail(path, where, f"arm {twice[0]!r} is listed twice{primary}; list each arm once, a primary arm under "
                               "'arms' only.")
        if rules["version"] >= 4:
            reg = b.get("registered")
            if not (isinstance(reg, dict) and isinstance(reg.get("file"), str) and reg.get("fixed") is not None):
                _fail(path, where, "'registered' must name the rules file and stamp the body was registered under "
                                   "({file: data/..., fixed: <time with zone>}).")
            if Path(reg["file"]).is_absolute() or Path(os.path.normpath(reg["file"])).parts[:1] == ("..",):
                # read for its stamp and first commit: any file outside would anchor the body's runs
                _fail(path, where, f"'registered' names {reg['file'][:80]!r}, outside the repository; name the rules "
                                   "file under it (e.g. data/verdict_rules.yaml).")
            reg["fixed"] = _when(reg.get("fixed"), where + ".registered", path)
            if reg["fixed"] > fw["fixed"]:
                _fail(path, where, f"registered at {reg['fixed'].isoformat()}, after the file's own stamp "
                                   f"({fw['fixed'].isoformat()}).")
        if b.get("guard_reference") not in GUARD_REFERENCES:
            _fail(path, where, f"'guard_reference' must be one of {GUARD_REFERENCES} (the sample the seen "
                               f"training blocks are compared with); got {str(b.get('guard_reference'))[:30]!r}.")
    named = rules.get("pilots") or {}
    if not (isinstance(named, dict) and all(isinstance(v, str) for v in named.values())):
        _fail(path, "pilots", "must be a mapping of names to pilot bodies (text), e.g. wiki: wikipedia-bert-mini-blind.")
    pilots = set(named.values())
    for name, y in rules["yardsticks"].items():
        where = f"yardstick {name!r}"
        if not isinstance(y, dict):
            _fail(path, where, "must be a mapping.")
        _known_keys(y, YARDSTICK_KEYS, path, where)
        _num(y.get("value_when_fixed"), path, where, "value_when_fixed", 0)
        if y.get("rule") not in _YARDSTICK_RULES:
            _fail(path, where, f"'rule' must be one of {_YARDSTICK_RULES}.")
        src = y.get("derived_from")
        if not (isinstance(src, list) and src and all(isinstance(s, str) for s in src)):
            _fail(path, where, "'derived_from' must list the pilot bodies it was computed from.")
        judged = set(src) & set(rules["bodies"])
        if judged:
            _fail(path, where, f"it is derived from {sorted(judged)[0]!r}, a body these rules judge; a yardstick "
                               "comes from what was seen before the runs it judges.")
        if not set(src) <= pilots:
            _fail(path, where, f"'derived_from' names {sorted(set(src) - pilots)}, not a pilot of the file.")
        if not isinstance(y.get("derivation"), str):
            _fail(path, where, "needs a 'derivation'.")
        _check_yardstick_rule(y, path, where)
        ap = y.get("applies_to")
        if ap is not None and not (isinstance(ap, list) and ap and all(q in _QUANTITIES for q in ap)):
            # text was read letter by letter ('eval_loss' in 'symmetry, eval_loss' held)
            _fail(path, where, f"'applies_to' must list the quantities it is a yardstick of, from {_QUANTITIES}; "
                               f"got {str(ap)[:60]!r}.")
        rf = y.get("read_from")
        if rf is not None:
            if rules["version"] < 4:
                _fail(path, where, "'read_from' (a yardstick read at each look from the body's own runs) is a "
                                   "version-4 rule.")
            if not (isinstance(rf, dict) and rf.get("score") in _QUANTITIES):
                _fail(path, where, f"'read_from' must be {{arm: MODE/INIT, score: one of {_QUANTITIES}}}.")
            _arm(rf.get("arm"), path, where)
            # the score a look reads: speedup-nats reads the held-out loss, scaled-iqr the score it scales
            reads = "eval_loss" if y["rule"] == "speedup-nats" else y["scale"]["score"]
            if rf["score"] != reads:
                _fail(path, where, f"'read_from' reads {rf['score']!r}, but its rule {y['rule']} reads {reads!r} at "
                                   f"each look (the score would be ignored, or scaled by another score's width); "
                                   f"set read_from.score to {reads!r}.")
    for key, r in rules["claims"].items():
        where = f"rule {key!r}"
        if not isinstance(r, dict):
            _fail(path, where, "must be a mapping.")
        _known_keys(r, CLAIM_KEYS, path, where)
        for field in ("claim", "test", "seen_before"):
            if not isinstance(r.get(field), str):
                _fail(path, where, f"needs {field!r}.")
        r["fixed"] = _when(r.get("fixed"), where, path)
        if r.get("test") != "paired-t":
            _fail(path, where, f"test {r.get('test')!r}: a claim read at looks is a paired-t claim (claims read "
                               "once go under 'evidence').")
        if r.get("quantity") not in _QUANTITIES:
            _fail(path, where, f"quantity must be one of {_QUANTITIES}; got {str(r.get('quantity'))[:40]!r}.")
        if not isinstance(r.get("body"), str) or r["body"] not in rules["bodies"]:
            _fail(path, where, f"body {str(r.get('body'))[:40]!r} is not a body of the file.")
        body = rules["bodies"][r["body"]]
        for field in ("candidate", "comparator"):
            _arm(r.get(field), path, where)
            if r[field] not in body["arms"]:
                _fail(path, where, f"{field} {r[field]!r} is not a primary arm of body {r['body']!r}.")
        if r["candidate"] == r["comparator"]:   # every paired difference 0: each look 'not testable here'
            _fail(path, where, f"compares arm {r['candidate']!r} with itself; name another arm of body "
                               f"{r['body']!r} as its comparator.")
        if not isinstance(r.get("secondary_comparators") or [], list):
            _fail(path, where, "'secondary_comparators' must list arms MODE/INIT.")
        for a in r.get("secondary_comparators") or []:
            if a not in (body.get("secondary_arms") or []):
                _fail(path, where, f"secondary comparator {a!r} is not a secondary arm of body {r['body']!r}.")
        if isinstance(r.get("sign", 1), bool) or r.get("sign", 1) not in (1, -1):   # yes/true is no sign
            _fail(path, where, f"'sign' must be 1 or -1; got {str(r.get('sign'))[:20]!r}.")
        if not isinstance(r.get("sesoi"), str) or r["sesoi"] not in rules["yardsticks"]:
            _fail(path, where, f"sesoi {str(r.get('sesoi'))[:40]!r} is not a yardstick of the file.")
        if r["body"] in rules["yardsticks"][r["sesoi"]]["derived_from"]:
            _fail(path, where, "its yardstick is derived from the body it judges.")
        applies = rules["yardsticks"][r["sesoi"]].get("applies_to")
        if applies is not None and r["quantity"] not in applies:
            _fail(path, where, f"its yardstick {r['sesoi']!r} applies to {applies}, not to its quantity "
                               f"{r['quantity']!r} (a yardstick of another quantity is in other units); name a "
                               "yardstick of its quantity.")
        rf = rules["yardsticks"][r["sesoi"]].get("read_from")
        if rf is not None and rf["arm"] not in body["arms"]:
            _fail(path, where, f"its yardstick reads arm {rf['arm']!r}, not a primary arm of body {r['body']!r}.")
        p = r.get("pilot")
        if not isinstance(p, dict) or not isinstance(p.get("body"), str) or p["body"] not in pilots:
            _fail(path, where, "'pilot' must name a pilot body of the file.")
        for field in ("estimate_when_fixed",):
            _num(p.get(field), path, where, f"pilot.{field}")
        for field in ("sd_when_fixed", "planning_sd_when_fixed"):
            _num(p.get(field), path, where, f"pilot.{field}", 0)
        _num(p.get("seeds"), path, where, "pilot.seeds", 1, whole=True)
    if rules["version"] >= 4:
        _check_evidence(rules, path)
    if check_design:
        _check_design(rules, path)
        if rules["version"] >= 4:
            _check_family_table(rules, path)
    return rules


def _check_yardstick_rule(y: dict, path, where: str) -> None:
    """The fields a yardstick's rule reads (versions 3 and 4): ``speedup-nats`` a share of the
    steps ``speedup`` in (0, 1); ``scaled-iqr`` a ``scale`` naming a published score and role
    (Tables S2/S3).  A role misspelt read no published level, and every look read 'not
    testable here'; a speed-up of 1.26 read the loss at a step before the first."""
    if y["rule"] == "speedup-nats":
        _num(y.get("speedup"), path, where, "speedup", 0, 1)
        return
    s = y.get("scale")
    if not (isinstance(s, dict) and s.get("score") in ("symmetry", "directionality")
            and s.get("role") in ("encoder", "decoder")):
        _fail(path, where, "a scaled-iqr yardstick needs 'scale' with score symmetry or directionality and role "
                           f"encoder or decoder (the paper's rows it is scaled from); got {str(s)[:80]!r}.")


def _check_evidence(rules: dict, path) -> None:
    """Version 4's claims read once (``evidence``): version 2's schema for each claim, no claim
    also read at looks, and each in a family."""
    from .verdicts import check_earlier

    ev = rules.get("evidence")
    if ev is None:
        rules["evidence"] = {"framework": {"level": 0.95}, "yardsticks": {}, "claims": {}}
        return
    if not isinstance(ev, dict) or not isinstance(ev.get("claims"), dict) or not isinstance(ev.get("framework"), dict):
        _fail(path, "evidence", "must be a mapping with 'framework' (level, power), 'yardsticks' and 'claims'.")
    twice = sorted(set(ev["claims"]) & set(rules["claims"]))
    if twice:
        _fail(path, f"rule {twice[0]!r}", "is named twice: under 'claims' (read at looks) and under 'evidence'.")
    check_earlier({"version": 2, "framework": ev["framework"], "yardsticks": ev.get("yardsticks") or {},
                   "claims": ev["claims"]}, path, gate=False)
    for key, r in ev["claims"].items():
        if "design" in r:
            _check_survey_design(r["design"], f"rule {key!r} (design)", path, rules)
        want = READ_ONCE_ARMS.get(key)
        if want is not None and "arms" in r and r["arms"] != want:   # loaded, and the reading compared its own arms
            _fail(path, f"rule {key!r}", f"'arms' {str(r['arms'])[:80]} is not what its reading compares ({want}); "
                                         "the runs are read as that whatever the rule says: restore it, or change the "
                                         "reading with the rule.")


def _check_survey_design(design, where: str, path, rules: dict) -> None:
    """A registered design of a claim read once over models: its unit rule, members, test,
    family and committed check table, stamped with a zone and not in the future."""
    from .verdicts import _when

    if not isinstance(design, dict):
        _fail(path, where, "must be a mapping (units, decoder_rule, encoder_rule, members, test, family, check, fixed).")
    for field in ("units", "decoder_rule", "encoder_rule", "test", "check"):
        if not isinstance(design.get(field), str) or not design[field].strip():
            _fail(path, where, f"{field!r} must be text.")
    members = design.get("members")
    if not (isinstance(members, dict) and all(isinstance(members.get(s), dict) and members[s] for s in ("encoders", "decoders"))):
        _fail(path, where, "'members' must name the encoder and decoder units, each with its checkpoints.")
    if design.get("family") not in rules["framework"]["families"]:
        _fail(path, where, f"family {str(design.get('family'))[:40]!r} is not a family of the file.")
    design["fixed"] = _when(design.get("fixed"), where, path)
    named = design["check"].split()[0]
    _required_table(_committed_path(rules, named, path), path, where, named, "companion.survey.design", "check table")


def _check_families(rules: dict, path) -> None:
    """Version 4's families: every claim in exactly one family; each family's level split
    equally over its members is one side of the per-claim two-sided ``alpha`` of
    ``framework.sequential`` (members x alpha / 2 <= fwer); the family
    check's settings.  Sets ``framework.family`` (all members in file order) for the tables."""
    fw = rules["framework"]
    fams = fw.get("families")
    if not isinstance(fams, dict) or not fams:
        _fail(path, "framework.families", "must map each family's name to {method: split, members: [...], fwer: ...}.")
    seen: dict = {}
    read_once = set((rules.get("evidence") or {}).get("claims") or {}) if isinstance(rules.get("evidence"), dict) else set()
    twice = sorted(read_once & set(rules["claims"]))
    if twice:
        _fail(path, f"rule {twice[0]!r}", "is named twice: under 'claims' (read at looks) and under 'evidence'.")
    for name, f in fams.items():
        where = f"framework.families.{name}"
        if not isinstance(f, dict) or f.get("method") != "split":
            _fail(path, where, "must be {method: split, members: [...], fwer: ...} (the level split equally over "
                               "the members).")
        members = f.get("members")
        if not (isinstance(members, list) and members and all(isinstance(m, str) for m in members)):
            _fail(path, where, "'members' must list the family's claims.")
        twice = sorted({m for m in members if members.count(m) > 1})
        if twice:
            _fail(path, where, f"claim {twice[0]!r} is listed twice in its members; list it once.")
        for m in members:
            if m not in rules["claims"] and m not in read_once:
                _fail(path, where, f"member {m!r} is not a claim of the file.")
            if m in seen:
                _fail(path, where, f"claim {m!r} is also a member of family {seen[m]!r}; a claim is in one family.")
            seen[m] = name
        _num(f.get("fwer"), path, where, "fwer", 0, 0.5)
        once = [m for m in members if m in read_once]
        if once and len(once) != len(members):
            _fail(path, where, "mixes claims read at looks with claims read once; give each kind its own family.")
        alpha = _num(f.get("alpha", fw["sequential"]["alpha"]), path, where, "alpha", 0, 0.5)
        if not once and abs(alpha - fw["sequential"]["alpha"]) > 1e-12:
            _fail(path, where, f"'alpha' {alpha:g}: claims read at looks are read at framework.sequential.alpha "
                               f"({fw['sequential']['alpha']:g}), so this family's own 'alpha' would be ignored while "
                               "its level is checked by it; remove it, or change framework.sequential.alpha.")
        tests = _num(f.get("tests", len(members)), path, where, "tests", len(members) - 1, whole=True)
        # at most one of a test's two one-sided nulls (effect <= 0, effect >= d) is true, so a
        # test errs with at most alpha / 2; the family with at most tests x alpha / 2
        if alpha / 2 * tests > f["fwer"] + 1e-12:
            _fail(path, where, f"{tests} tests at {alpha / 2:g} a side each spend {alpha / 2 * tests:g}, more than "
                               f"the family's fwer {f['fwer']}; set the per-test two-sided alpha to at most "
                               f"2 x fwer / tests = {2 * f['fwer'] / tests:g}.")
        f["alpha"], f["tests"], f["read_once"] = alpha, tests, bool(once)
    missing = sorted((set(rules["claims"]) | read_once) - set(seen))
    if missing:
        _fail(path, "framework.families", f"claim {missing[0]!r} is in no family.")
    fc = fw.get("family_check")
    if not isinstance(fc, dict):
        _fail(path, "framework.family_check", "must be a mapping (draws, seed, correlation, effects_over_d, "
                                              "spreads_over_d, table).")
    _num(fc.get("draws"), path, "framework.family_check", "draws", 999, MAX_DRAWS + 1, whole=True)
    _check_simulation_size(fc["draws"], fw["sequential"]["looks"], path, "framework.family_check")
    _num(fc.get("seed"), path, "framework.family_check", "seed", -1, whole=True)
    _num(fc.get("correlation"), path, "framework.family_check", "correlation", -1e-12, 1)
    for field in ("effects_over_d", "spreads_over_d"):
        v = fc.get(field)
        if not (isinstance(v, list) and v):
            _fail(path, "framework.family_check", f"{field!r} must list numbers.")
        for x in v:
            _num(x, path, "framework.family_check", field, -1e-12 if field == "effects_over_d" else 0)
    if not isinstance(fc.get("table"), str):
        _fail(path, "framework.family_check", "'table' must name the committed family table.")
    fw["family"] = {"method": "split", "order": [m for f in fams.values() if not f["read_once"] for m in f["members"]],
                    "fwer": max(f["fwer"] for f in fams.values())}


def family_of(key: str, rules: dict) -> str:
    """The name of the family claim ``key`` belongs to."""
    for name, f in rules["framework"]["families"].items():
        if key in f["members"]:
            return name
    raise CompanionError(f"claim {key!r} is in no family of the rules.")


def earlier_rules(version: int = 2) -> dict:
    """An earlier rules file as committed (``data/rules_history/``): version 2 names the bodies
    of runs made before the rules in force (the pilots, the blind bodies, the manual's), which
    the chapters show beside the claims' readings."""
    if version not in RULES_HISTORY:
        raise CompanionError(f"no earlier rules file of version {version!r}; the history holds {sorted(RULES_HISTORY)}.")
    return load_rules(RULES_HISTORY[version])


def claim_rule(key: str, rules: dict | None = None) -> dict:
    """One claim read at looks: its rule with its body, yardstick value, family and the looks'
    nominal levels."""
    rules = rules if rules is not None else load_rules()
    if key not in (rules.get("claims") or {}) or rules.get("version", 1) < 3:
        raise CompanionError(f"claim {key!r} is not read at looks in these rules (version {rules.get('version')}); "
                             f"those claims are {sorted(rules.get('claims') or {}) if rules.get('version', 1) >= 3 else []}.")
    r = dict(rules["claims"][key], key=key)
    r["body_rule"] = dict(rules["bodies"][r["body"]], key=r["body"])
    r["d"] = float(rules["yardsticks"][r["sesoi"]]["value_when_fixed"])   # read_from: the planning value
    r["yardstick"] = dict(rules["yardsticks"][r["sesoi"]], key=r["sesoi"])
    r["family"] = family_of(key, rules) if "families" in rules["framework"] else "all"
    r["looks"] = list(rules["framework"]["sequential"]["looks"])
    r["nominal"] = [float(a) for a in rules["framework"]["sequential"]["nominal_when_fixed"]]
    return r


def rule(key: str, rules: dict | None = None) -> dict:
    """One claim read once (the survey, the premises, the mechanism, the swap; in an earlier
    file, any claim), with its framework's settings under ``"framework"`` (and, in the file in
    force, its family under ``"framework"]["family"]``) and the yardsticks."""
    rules = rules if rules is not None else load_rules()
    if rules.get("version", 1) >= 3:
        ev = rules.get("evidence") or {"claims": {}}
        if key not in ev["claims"]:
            where = "is read at looks (companion.rules.rulebook.claim_rule)" if key in rules["claims"] else "has no rule"
            raise CompanionError(f"claim {key!r} {where} in these rules; the claims read once are {sorted(ev['claims'])}.")
        fw = dict(ev["framework"])
        name = family_of(key, rules)
        fw["family"] = dict(rules["framework"]["families"][name], name=name)
        return dict(ev["claims"][key], framework=fw, key=key, yardsticks=ev.get("yardsticks", {}))
    if key not in rules["claims"]:
        raise CompanionError(f"no rule for claim {key!r} in the rules file; rules exist for "
                             f"{sorted(rules['claims'])}.")
    return dict(rules["claims"][key], framework=rules.get("framework", {}), key=key,
                yardsticks=rules.get("yardsticks", {}))


# what changed in a rules file after a body's first run: companion.rules.edits (re-exported here)
from .edits import changes_after_first_run, judging_parts, text_edits_after  # noqa: E402,F401
