# Kernel start-up for the book build (IPYTHONDIR=book/_ipython, set by the Makefile).
# The book's kernels run matplotlib under Agg, so figures appear only where a chapter shows
# or glues them; this makes every displayed or glued Figure an image, whether or not
# pyplot was used to make it.  Each image carries, in its output metadata, a text
# alternative and the figure's source data read from the Figure's artists
# (companion.book.figures.source_data); the book's Sphinx extension turns them into the image's
# alt text and a CSV next to it.  Lines and markers use the book's colour-vision-safe cycle.
from IPython import get_ipython
from IPython.core.pylabtools import select_figure_formats

_shell = get_ipython()
if _shell is not None:
    select_figure_formats(_shell, {"png"}, bbox_inches="tight")
    from companion.book.figures import source_data as _source_data

    _source_data.register(_shell, bbox_inches="tight")

# tables show their cells whole; lines use the book's colour cycle (as in a Colab notebook)
from companion.book.kernel import use_book_defaults as _use_book_defaults

_use_book_defaults()

# Every chapter that states a status reads one table of verdicts, computed once per build
# under the package's content key (companion.judge.claims._disk_cached) instead of once per page.
import os as _os

from companion.base.paths import VERDICT_CACHE as _VERDICT_CACHE

_os.environ.setdefault("COMPANION_VERDICT_CACHE", str(_VERDICT_CACHE))

# A chapter's output never holds a wait or progress line of the package (a line on a kernel's
# stderr is saved with the cell, and the build fails on it): library code is quiet in a kernel
# anyway (companion.base.progress), and so is any command a chapter starts.
_os.environ["COMPANION_PROGRESS"] = "0"
