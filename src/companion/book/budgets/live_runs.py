"""What a chapter trains live, per run size: one source for the chapter and for its budget.

Two chapters train BERT-Mini-sized models while they execute (their "A live run" section):
the training chapter (an encoder and a decoder) and the symmetric-initialisation chapter
(three seeds of a standard and a symmetric start).  The chapter reads its number of steps
here (:func:`live_plan`) and checks that it trained :attr:`LivePlan.runs` runs; the T4
estimate of the status page (:mod:`companion.book.budgets.colab_budget`) reads the same plan, so the
budget and the notebook cannot drift apart.

The ``gpu`` steps are chosen so that the chapter fits issue 45's budget (10 minutes on an
H100, 30 on a free Colab T4) by the estimate of :mod:`companion.book.budgets.colab_budget`; the
chapter's evidence is its cached runs, and the live runs show the same measurement being
made, at a size a reader can afford.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.runtime import RUN_SIZES, run_size

__all__ = ["LivePlan", "LIVE_RUNS", "live_plan"]


@dataclass(frozen=True)
class LivePlan:
    """``runs`` training runs of ``steps`` steps each, at the model size the run size picks
    (:func:`companion.train.models.bert.size_for_run`: ``tiny``, ``bert-mini`` or ``bert``)."""

    chapter: str
    size: str
    runs: int
    steps: int


# chapter -> (runs, {run size: steps per run})
LIVE_RUNS: dict[str, tuple[int, dict[str, int]]] = {
    # an encoder and a decoder, seed 0
    "training_dynamics": (2, {"ci": 300, "gpu": 2500, "paper": 200000}),
    # seeds 0-2, standard and symmetric start
    "symmetric_init": (6, {"ci": 150, "gpu": 800, "paper": 200000}),
}


def live_plan(chapter: str, size: str | None = None) -> LivePlan:
    """The live training of ``chapter`` at run size ``size`` (default: :func:`run_size`)."""
    if not isinstance(chapter, str) or chapter not in LIVE_RUNS:
        raise ValueError(f"{chapter!r} trains nothing live; the chapters that do are "
                         f"{sorted(LIVE_RUNS)}")
    if size is not None and not isinstance(size, str):
        raise ValueError(f"the run size {size!r} is no name of a size; choose one of {RUN_SIZES}")
    size = run_size(size)
    runs, steps = LIVE_RUNS[chapter]
    if size not in steps:  # pragma: no cover - RUN_SIZES and the table are kept equal by a test
        raise ValueError(f"{chapter!r} has no live steps for size {size!r}; sizes: {RUN_SIZES}")
    return LivePlan(chapter=chapter, size=size, runs=runs, steps=steps[size])
