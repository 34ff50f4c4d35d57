"""Compute the build's shared verdict tables before the chapters ask for them.

    python -m companion.judge.warm_cache

Every chapter that states a status reads one table of verdicts (and the training and swap
test tables behind it) from the verdict cache (``COMPANION_VERDICT_CACHE``, by default the
build's, as in the book's kernels), computed once by whichever process asks first while the
others wait for its lock.  ``make test`` starts this beside the test run, so the table is
computed while the unit tests run instead of while a chapter's kernel stands waiting for it.
Nothing here changes a number: it calls the functions the chapters call, under the same key.
"""

from __future__ import annotations

import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    from ..base.paths import VERDICT_CACHE

    os.environ.setdefault("COMPANION_VERDICT_CACHE", str(VERDICT_CACHE))
    from . import claims

    t0 = time.perf_counter()
    n = len(claims.all_verdicts())
    for key in ("training_symmetry", "training_directionality", "symmetric_init_structure", "table_1"):
        claims.training_tests_table(key)
    claims.swap_tests_table()
    print(f"warm_cache: {n} verdicts and their test tables in {os.environ['COMPANION_VERDICT_CACHE']} "
          f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
