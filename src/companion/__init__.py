"""companion: executable companion to Saponati et al., "The underlying structures of
self-attention: symmetry, directionality, and emergent dynamics in Transformer training"
(ICML 2025).

Data flows one way: checkpoint -> adapter -> bilinear form -> scores -> tidy table ->
figure -> chapter, and for training: run -> history -> evidence -> verdict -> page.  The
subpackages are layers, each importing only those below it (ARCHITECTURE.md, checked by
``lint-imports``): ``base`` <- ``core`` | ``rules`` <- ``adapters`` | ``zoo`` <- ``train``
<- ``survey`` <- ``judge`` <- ``book`` <- ``cli``.

The public names below are loaded on first use, so ``import companion`` alone (and every
tool of the book that needs no tensor) does not import PyTorch.
"""

from importlib import import_module

__version__ = "0.2.0.dev0"

_PUBLIC = {
    "bilinear_form": "core.bilinear",
    "head_factors": "core.bilinear",
    "layer_factors": "core.bilinear",
    "per_head_bilinear_forms": "core.bilinear",
    "symmetry_score": "core.scores",
    "symmetry_score_factored": "core.scores",
    "directionality_score": "core.scores",
    "directionality_score_factored": "core.scores",
    "structure_scores": "core.scores",
    "run_size": "base.runtime",
    "default_device": "base.runtime",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'companion' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


#: the release that removes every old name below (and :mod:`companion.rules.verdicts`' old
#: statistics names): each warning names it
REMOVED_IN = "0.4.0"

#: modules that moved into the layered subpackages, old name -> new (CHANGELOG, "Changed");
#: ``companion.survey`` and ``companion.zoo`` are packages now and keep their names
MOVED = {
    "bounded_yaml": "base.bounded_yaml", "cache": "base.cache", "errors": "base.errors",
    "outputs": "base.outputs", "runtime": "base.runtime",
    "book_cache": "book.site.book_cache", "build_status": "book.site.build_status", "changes": "book.site.changes",
    "chapter_times": "book.budgets.chapter_times", "citation": "book.site.citation", "exercise_labels": "book.teaching.exercise_labels",
    "exercises": "book.teaching.exercises", "explorer": "book.explorer", "notebooks": "book.editions.notebooks",
    "slides": "book.editions.slides", "sphinxext": "book.sphinxext", "student": "book.editions.student", "vendor": "book.site.vendor",
    "bilinear": "core.bilinear", "null": "core.null", "rope": "core.rope", "scores": "core.scores",
    "theory": "core.theory", "tiny_attention": "core.tiny_attention",
    "claims": "judge.claims", "empirical": "judge.empirical", "premises": "judge.premises", "prose": "judge.stdlib_corpus",
    "verdicts": "rules.verdicts", "bias_term": "survey.bias_term", "tables": "survey.tables",
    "catalog": "zoo.catalog",
    # 0.2.0: named for what they hold
    "judge.prose": "judge.stdlib_corpus",
    # 0.2.0: companion.train split by concern into text, models, runner and studies
    "train.corpora": "train.text.corpora",
    "train.english_mix": "train.text.english_mix",
    "train.tokens": "train.text.tokens",
    "train.data": "train.text.data",
    "train.model": "train.models.bert",
    "train.llama": "train.models.llama",
    "train.objectives": "train.models.objectives",
    "train.init": "train.models.init",
    "train.window_model": "train.models.window_model",
    "train.pretrained": "train.models.pretrained",
    "train.loop": "train.runner.loop",
    "train.runs": "train.runner.runs",
    "train.pack": "train.runner.pack",
    "train.updates": "train.runner.updates",
    "train.evidence": "train.studies.evidence",
    "train.study": "train.studies.compute_study",
    "train.blind": "train.studies.blind",
    "train.speedup": "train.studies.speedup",
    "train.replicate": "train.studies.replicate",
    "train.compare": "train.studies.compare",
    "train.mechanism": "train.studies.mechanism",
    "train.swap": "train.studies.swap",
    "train.design_v3": "train.studies.design_check",
    "train.v3_bodies": "train.studies.registered_bodies",
}


#: names deprecated where they are, ``module -> {old name: its successor}`` (under ``companion``);
#: using one warns with a DeprecationWarning naming the successor and :data:`REMOVED_IN`.  The
#: survey's relations between checkpoints and its contrast per base model gave way to the
#: registered design (one unit per base family, :mod:`companion.survey.design`)
DEPRECATED = {
    "survey.summaries": {"contrast_per_base_model": "survey.design.registered_contrast",
                         "BASE_MODELS": "survey.design.MEMBERS"},
}


class _MovedFinder:
    """``import companion.scores`` (a name from before the subpackages) gives the module at its
    new place, ``companion.core.scores`` (the same object), with a DeprecationWarning naming
    it, so a reader's older script or notebook keeps working and learns the new name."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        import importlib.util

        head, _, tail = fullname.partition(".")
        if head != __name__ or tail not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedFinder)

    @staticmethod
    def create_module(spec):
        import sys
        import warnings

        new = f"{__name__}.{MOVED[spec.name.split('.', 1)[1]]}"
        warnings.warn(f"{spec.name} moved to {new}; import it from there (the old name goes in release "
                      f"{REMOVED_IN})", DeprecationWarning, stacklevel=3)
        module = import_module(new)
        sys.modules[spec.name] = module
        _MovedFinder._specs[spec.name] = module.__spec__
        return module

    #: the real spec of each module handed out under an old name: the import machinery sets
    #: ``module.__spec__`` to the alias's spec after ``create_module``, and it is put back here
    _specs: dict = {}

    @staticmethod
    def exec_module(module):
        module.__spec__ = _MovedFinder._specs.get(module.__spec__.name, module.__spec__)


def _install_moved_finder():
    import sys

    if not any(isinstance(f, type) and f is _MovedFinder for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder)


_install_moved_finder()
