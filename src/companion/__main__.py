"""``python -m companion``: the command line (:mod:`companion.cli`), as the ``companion`` script."""

import sys

from .cli import main

sys.exit(main())
