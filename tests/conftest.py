"""Shared test set-up: no network, ever; reproducible property tests.

Hypothesis profiles (choose with ``HYPOTHESIS_PROFILE``):

``ci`` (the default, what ``make test`` and CI run)
    derandomized: the examples are a fixed function of each test, so every run draws the
    same ones and a red run is reproduced by running the test again.  No example database.
``dev``
    random draws, 1,000 examples per test, failures stored in ``.hypothesis/``; for hunting
    new counterexamples locally (``HYPOTHESIS_PROFILE=dev make unit``).  A failing example
    is printed with a ``@reproduce_failure`` blob; add it as a regression test.
"""

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                          deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=1000, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
