"""``companion survey``: score every reachable checkpoint of the catalog (see :mod:`companion.survey.scoring`)."""

from __future__ import annotations


def register(subparsers) -> None:
    from ..survey.scoring import add_survey_parser

    add_survey_parser(subparsers)
