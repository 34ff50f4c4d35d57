"""The machinery of the book, used by its build and its readers' tools, never by the science
below it: Colab notebooks, the student edition, slides, the Sphinx extension, the execution
cache, build status, chapter times, the explorer, exercises and their checks, and figures."""
