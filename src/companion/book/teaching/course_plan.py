"""A course plan that adds up: each lecture's reading and core exercises, computed.

The instructor's page ("Teaching with this book") shows :data:`COURSE`, a unit of lectures,
with two sums per lecture computed from the book itself:

* **reading**: the words of its core chapters as a reader sees them (:func:`prose_words`:
  code cells, solutions, exercises, labels and directive options left out; a glued value, a
  cross-reference or a formula counted as one word), at :data:`WORDS_PER_MINUTE`;
* **core exercises**: the time budgets of the core chapters' exercises marked *core* in
  its chapter's entry of ``data/chapters.yaml``.

Their sum is the lecture's *core material*, which must fit the lecture's stated time
(:func:`plan_problems`; ``tests/test_course_plan.py`` fails with the lecture's name when it
does not). Optional chapters, and exercises marked recommended or optional, are listed as
optional material and are not summed into the core.

From a built book the plan is recounted as a reader and a lecturer meet it
(:func:`built_problems`): the reading from the prose *as the page renders it*
(:func:`rendered_words`: every glued value pasted as the build computed it, so that a glued
sentence counts its words, not one), and the slides of each lecture's decks
(:func:`deck_slides`), at most :data:`SLIDES_PER_MINUTE` a minute of its stated time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ...base.paths import ROOT
from ..editions.solutions import _drop_blocks, prose_words  # noqa: F401 (prose_words re-exported)
from .exercise_labels import check_page_labels, read_page  # noqa: F401 (read_page re-exported)

__all__ = ["WORDS_PER_MINUTE", "SLIDES_PER_MINUTE", "Lecture", "COURSE", "prose_words", "chapter_words",
           "lecture_sums", "plan_problems", "plan_table", "plan_markdown", "rendered_words", "deck_slides",
           "built_problems"]

#: reading speed for technical prose with formulas (a common estimate is 200-250 words a minute)
WORDS_PER_MINUTE = 200
#: the most slides a lecture's decks may hold per minute of its stated time: a slide takes at
#: least a minute to present (the decks of a 90-minute lecture: at most 90 slides)
SLIDES_PER_MINUTE = 1


@dataclass(frozen=True)
class Lecture:
    title: str
    minutes: int                      # the time the lecture states for its core material
    chapters: tuple[str, ...]         # core reading, in order
    optional: tuple[str, ...] = ()    # optional reading (not summed into the core)
    about: str = ""                   # one sentence for the guide


def _from_registry(title: str, minutes: int, about: str) -> Lecture:
    """A lecture whose core and optional reading are the pages ``data/chapters.yaml`` gives it."""
    from ..budgets.chapters_registry import lecture_chapters, load_registry, toc_pages

    registry, pages = load_registry(), toc_pages()
    return Lecture(title, minutes, lecture_chapters(title, "core", registry, pages),
                   optional=lecture_chapters(title, "optional", registry, pages), about=about)


#: the unit; each lecture's reading is the pages that name it in ``data/chapters.yaml``
#: (``lecture:``, with ``reading: optional`` for optional reading), in the order of ``_toc.yml``
COURSE: tuple[Lecture, ...] = (
    _from_registry("The bilinear form and how to measure it", 90,
                   about="The logit of one head as a bilinear form, and the two scores that describe its matrix."),
    _from_registry("From one gradient step to structure", 90,
                   about="Gradients as sums of rank-one matrices; which tokens are context and which are "
                         "predicted; why that should make M column-dominant or symmetric."),
    _from_registry("Pretrained models", 90,
                   about="The scores of published checkpoints, measured live, against the paper's figures."),
    # recounted from the rendered pages and the decks (built_problems): the training lecture read
    # 97 min with the mechanism in it (52 min of rendered prose), so the mechanism opens the
    # interventions lecture, and what survives, 25 min of rendered prose and 15 of exercises on
    # its own, closes the unit in a shorter lecture of its own
    _from_registry("Training runs", 90,
                   about="Paired seeds, intervals and rules written before the data: what the training "
                         "runs can and cannot decide."),
    _from_registry("The mechanism, and interventions", 90,
                   about="The updates that make the structure, step by step; then changing a trained model's "
                         "objective or its initialisation."),
    _from_registry("What survives", 60,
                   about="The page that states which of the paper's claims hold, and how each was decided."),
)

def chapter_words(book: Path | str = ROOT / "book") -> dict[str, int]:
    """``{chapter: prose words}`` for every ``.md`` page of ``book``."""
    return {p.stem: prose_words(read_page(p)) for p in sorted(Path(book).glob("*.md"))}


def rendered_words(build: Path | str = ROOT / "_build", root: Path | str = ROOT) -> dict[str, int]:
    """``{chapter: prose words}`` of every chapter of the book at ``root`` as its page renders
    it: :func:`prose_words` of the source with each glued value (``{glue:text}`name:spec```)
    pasted as the build's executions hold it (:func:`companion.book.site.executions.find`,
    formatted as the page formats it), so that a glued sentence counts for its words.

    A glued name that no execution of the build holds is a ``KeyError`` naming the chapter and
    the name (a build of another version of the chapter, or none: build the book first)."""
    from ..site.chapters import book_chapters
    from ..site.executions import build_sources, find, text

    chapters = book_chapters(root)
    found = find(chapters, build_sources(build))
    out = {}
    for ch in chapters:
        glue = found[ch.docname].glue
        name = Path(ch.docname).name

        def value(m, glue=glue, name=name):
            data = glue.get(m.group("name"), {}).get("data", {})
            raw = data.get("text/markdown", data.get("text/plain"))
            if raw is None:
                raise KeyError(f"{name}: no execution under {build} holds the glued value {m.group('name')!r}; "
                               "build the book first (make book)")
            raw = "".join(raw) if isinstance(raw, list) else str(raw)
            return f" {text(raw, m.group('spec') or '')} "

        page = read_page(ch.source)
        page = _drop_blocks(page)   # not read, so their values are not needed
        out[name] = prose_words(_GLUE_ROLE.sub(value, page))
    return out


def deck_slides(folder: Path | str = ROOT / "_build" / "slides") -> dict[str, int]:
    """``{chapter: slides}`` of the decks in ``folder`` (``<chapter>.slides.html``, one
    ``<section>`` a slide, as :mod:`companion.book.editions.slides` writes them)."""
    return {p.name.removesuffix(".slides.html"): len(re.findall(r"<section\b", read_page(p)))
            for p in sorted(Path(folder).glob("*.slides.html"))}


def built_problems(course=COURSE, build: Path | str = ROOT / "_build", root: Path | str = ROOT,
                   slides: Path | str | None = None, toc: list[str] | None = None) -> list[str]:
    """:func:`plan_problems` of the plan recounted from a built book: the reading from the
    rendered prose (:func:`rendered_words`), the slides from the decks (:func:`deck_slides`,
    ``slides`` by default ``<build>/slides``)."""
    slides = Path(build) / "slides" if slides is None else Path(slides)
    if not slides.is_dir():
        raise FileNotFoundError(f"no decks at {slides}; build them first (make slides)")
    return plan_problems(course, Path(root) / "book", toc=toc, words=rendered_words(build, root),
                         slides=deck_slides(slides))


#: every role myst-nb pastes a value's text with: ``{glue:text}``, ``{glue:md}``, and ``{glue}``,
#: ``{glue:}``, ``{glue:any}`` (a value's text, as ``{glue:text}`` without a format)
_GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md|any)?)?\}`(?P<name>[^`:]+)(?::(?P<spec>[^`]*))?`")


def lecture_sums(lecture: Lecture, words: dict[str, int], labels: dict, exercises: dict[str, list[str]]) -> dict:
    """The computed sums of one lecture.

    ``words``: :func:`chapter_words`; ``labels``: :func:`companion.book.teaching.exercise_labels.load_exercise_labels`;
    ``exercises``: ``{chapter: [exercise label, ...]}``
    (:func:`companion.book.teaching.exercise_labels.book_exercise_labels`).
    """
    listed = lecture.chapters + lecture.optional
    twice = sorted({c for c in listed if listed.count(c) > 1})
    if twice:   # its words and exercises would be summed twice
        raise ValueError(f"lecture {lecture.title!r} lists chapter {twice[0]!r} twice; list each chapter once "
                         "(as core or as optional reading)")
    missing = [c for c in listed if c not in words]
    if missing:
        raise KeyError(f"lecture {lecture.title!r} names chapters the book does not have: {missing}")
    check_page_labels({c: exercises.get(c, []) for c in listed}, labels)   # no entry, or summed twice
    core_words = sum(words[c] for c in lecture.chapters)
    core_ex = [k for c in lecture.chapters for k in exercises.get(c, []) if labels[k]["importance"] == "core"]
    other_ex = [k for c in lecture.chapters + lecture.optional for k in exercises.get(c, []) if k not in core_ex]
    reading = math.ceil(core_words / WORDS_PER_MINUTE)
    exercise_minutes = sum(labels[k]["minutes"] for k in core_ex)
    return {"lecture": lecture.title, "minutes": lecture.minutes, "chapters": list(lecture.chapters),
            "optional chapters": list(lecture.optional), "words": core_words,
            "reading minutes": reading, "core exercises": core_ex, "core exercise minutes": exercise_minutes,
            "core minutes": reading + exercise_minutes, "other exercises": other_ex,
            "other exercise minutes": sum(labels[k]["minutes"] for k in other_ex),
            "optional words": sum(words[c] for c in lecture.optional)}


def _inputs(book, labels, exercises, words=None):
    from .exercise_labels import book_exercise_labels, load_exercise_labels

    book = Path(book)
    labels = load_exercise_labels() if labels is None else labels
    exercises = book_exercise_labels(book) if exercises is None else exercises
    return {**chapter_words(book), **(words or {})}, labels, exercises


def plan_problems(course=COURSE, book: Path | str = ROOT / "book", labels: dict | None = None,
                  exercises: dict | None = None, toc: list[str] | None = None,
                  words: dict[str, int] | None = None, slides: dict[str, int] | None = None) -> list[str]:
    """What is wrong with the plan, one line each, naming the lecture or chapter (empty: it adds up).

    A lecture whose core material (reading plus core exercises) exceeds its stated minutes; a
    lecture whose decks hold more than :data:`SLIDES_PER_MINUTE` slides a minute of its stated
    time (``slides``: ``{chapter: slides}``, :func:`deck_slides`, summed over its core chapters;
    a chapter without a deck has none); a chapter taught twice; a chapter of the book's table of contents ``toc`` with
    exercises that no lecture teaches; an exercise with no entry in the labels.  ``words``
    (``{chapter: words}``, :func:`rendered_words`) replaces the words counted in the sources.
    """
    words, labels, exercises = _inputs(book, labels, exercises, words)
    problems = []
    seen: dict[str, str] = {}
    for lec in course:
        for c in dict.fromkeys(lec.chapters + lec.optional):   # twice in one lecture: lecture_sums says so
            if c in seen:
                problems.append(f"chapter {c} is in two lectures: {seen[c]!r} and {lec.title!r}")
            elif toc is not None and c not in toc:
                problems.append(f"lecture {lec.title!r} teaches chapter {c}, which is not in the table of contents "
                                "(_toc.yml); add it there or take it out of the lecture")
            seen[c] = lec.title
        unlabelled = [k for c in lec.chapters + lec.optional for k in exercises.get(c, []) if k not in labels]
        if unlabelled:
            problems.append(f"lecture {lec.title!r}: exercises with no entry in data/chapters.yaml: {unlabelled}; "
                            "add their difficulty, importance and minutes under their chapter's exercises")
            continue
        try:
            s = lecture_sums(lec, words, labels, exercises)
        except (KeyError, ValueError) as err:
            problems.append(str(err.args[0]))
            continue
        if s["core minutes"] > lec.minutes:
            problems.append(f"lecture {lec.title!r}: core material takes {s['core minutes']} min "
                            f"({s['reading minutes']} reading {s['words']:,} words, {s['core exercise minutes']} "
                            f"core exercises), over its stated {lec.minutes} min")
        if slides is not None:
            shown = sum(slides.get(c, 0) for c in lec.chapters)   # the optional decks are for reading
            cap = int(lec.minutes * SLIDES_PER_MINUTE)
            if shown > cap:
                problems.append(f"lecture {lec.title!r}: its decks hold {shown} slides, over the cap of {cap} "
                                f"({SLIDES_PER_MINUTE} a minute of its stated {lec.minutes} min)")
    for c in (toc or []):
        if exercises.get(c) and c not in seen:
            problems.append(f"chapter {c} has exercises but no lecture teaches it")
    pages: dict[str, list[str]] = {}
    for c, labels_of_c in exercises.items():
        for k in labels_of_c:
            pages.setdefault(k, []).append(c)
    for k, where in pages.items():   # its minutes would be summed once per page
        if len(where) > 1:
            problems.append(f"exercise label {k} is on {len(where)} exercises ({', '.join(where)}); give each "
                            "exercise a label of its own")
    return problems


def plan_table(course=COURSE, book: Path | str = ROOT / "book", labels: dict | None = None,
               exercises: dict | None = None):
    """One row a lecture: stated minutes, reading, core exercises, their sum, optional material.

    Words are counted in the sources (a glued value is one word): the chapters' executions are
    not all there while this page executes.  :func:`built_problems` recounts from a built book."""
    import pandas as pd

    words, labels, exercises = _inputs(book, labels, exercises)
    rows = []
    for i, lec in enumerate(course, 1):
        s = lecture_sums(lec, words, labels, exercises)
        rows.append({"lecture": f"{i}. {lec.title}", "stated (min)": lec.minutes, "core words (source)": s["words"],
                     "reading (min)": s["reading minutes"], "core exercises (min)": s["core exercise minutes"],
                     "core total (min)": s["core minutes"], "optional words (source)": s["optional words"],
                     "optional exercises (min)": s["other exercise minutes"]})
    return pd.DataFrame(rows)


def _name(name: str, what: str) -> str:
    """``name`` when a ``{doc}`` or ``{ref}`` role and a link can carry it as it is (letters,
    digits, ``-``, ``_``, ``.``, ``/``); else a one-line error naming it: a backtick would
    end the role, ``<...>`` name another target, a quote or ``<`` open markup of its own."""
    if not re.fullmatch(r"[\w./-]+", str(name)):
        raise ValueError(f"the course plan's {what} {name!r} holds characters a link or a role cannot carry; "
                         "rename it with letters, digits, '-', '_' or '.'.")
    return name


def plan_markdown(course=COURSE, book: Path | str = ROOT / "book", labels: dict | None = None,
                  exercises: dict | None = None, slides: str = "../slides") -> str:
    """The plan as MyST: per lecture its chapters ({doc} links), slides, exercises ({ref} links)
    and computed sums. Rendered with the cell's ``markdown_format: myst``, so that a dangling
    exercise label fails the build under ``--warningiserror``."""
    import html

    words, labels, exercises = _inputs(book, labels, exercises)
    refs = lambda ks: ", ".join(f"{{ref}}`{_name(k, 'exercise label')}`" for k in ks) or "none"
    out = []
    for i, lec in enumerate(course, 1):
        s = lecture_sums(lec, words, labels, exercises)
        for c in lec.chapters + lec.optional:
            _name(c, "chapter name")
        lec = Lecture(html.escape(lec.title), lec.minutes, lec.chapters, lec.optional, html.escape(lec.about))
        docs = ", ".join(f"{{doc}}`{c}`" for c in lec.chapters)
        from ..site.chapters import is_notebook_source

        decks = ", ".join(f'<a href="{slides}/{c}.slides.html">{c}</a>' for c in lec.chapters + lec.optional
                          if is_notebook_source(Path(book) / f"{c}.md"))   # a page without code has no deck
        out.append(f"**Lecture {i}: {lec.title}.**\n")
        if lec.about:
            out.append(lec.about + "\n")
        out.append(f"- **Read** (core): {docs}; {s['words']:,} words, about {s['reading minutes']} min "
                   f"at {WORDS_PER_MINUTE} words a minute.")
        if lec.optional:
            out.append(f"- **Optional reading**: {', '.join(f'{{doc}}`{c}`' for c in lec.optional)}; "
                       f"{s['optional words']:,} words, not counted in the core.")
        out.append(f"- **Core exercises**: {refs(s['core exercises'])}; {s['core exercise minutes']} min.")
        out.append(f"- **Core material**: {s['core minutes']} of the lecture's {lec.minutes} min.")
        if s["other exercises"]:
            out.append(f"- **Further exercises** (recommended or optional, {s['other exercise minutes']} min): "
                       f"{refs(s['other exercises'])}.")
        out.append(f"- **Slides**: {decks}.\n")
    return "\n".join(out)
