# Kernel start-up for the book build (IPYTHONDIR=book/_ipython, set by the Makefile).
# The book's kernels run matplotlib under Agg, so figures appear only where a chapter shows
# or glues them; this makes every displayed or glued Figure an image, whether or not
# pyplot was used to make it.
from IPython import get_ipython
from IPython.core.pylabtools import select_figure_formats

_shell = get_ipython()
if _shell is not None:
    select_figure_formats(_shell, {"png"}, bbox_inches="tight")
