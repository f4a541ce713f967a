# Every target sets up what it needs: a fresh clone needs only `make book` or `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
SETUP_STAMP := $(VENV)/.setup-done
GRADING_STAMP := $(VENV)/.grading-done
WEB_STAMP := webassets/.web-done
HTML := _build/html
PORT ?= 8000
# One BLAS thread per process: the chapters execute two at a time on two cores and `make test`
# runs several builds side by side, so a second thread only waits for a core (three clean builds
# each way, interleaved: 180-196 s with one, 190-206 s with two, 4-7 % less CPU with one).
export OMP_NUM_THREADS ?= 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup grading web pot book book-zh book-instructor notebooks notebooks-instructor \
	serve test test-unit test-book test-seeds test-learner test-grading test-grading-corpora \
	assignments grade lint dist bench clean

help:
	@echo "make book   set up, then build the HTML book into $(HTML) (executes every notebook)"
	@echo "make test   set up, then run the whole suite (unit, book build, built HTML, browser)"
	@echo "make book-instructor  the same book with every solution shown, in $(INSTRUCTOR)"
	@echo "make notebooks  after make book: refresh the learner notebooks in notebooks/ (commit them)"
	@echo "make notebooks-instructor  after make book: notebooks with solutions, in $(INSTRUCTOR)/notebooks"
	@echo "make assignments  graded assignments from the chapters, in _build/assignments (BOOK_SEED=<yours>)"
	@echo "make grade SUBMISSIONS=<folder>  grade every submission in a folder (grades.csv, feedback/)"
	@echo "make pot    after an English edit: new and changed messages into locales/ for translators"
	@echo "make serve  serve $(HTML) on http://127.0.0.1:$(PORT)"
	@echo "make bench  build and explorer timings (see benchmarks/README.md)"

setup: $(SETUP_STAMP)

$(SETUP_STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# otter-grader, for assignments and grading only: requirements-grading.txt says why it is apart.
grading: $(GRADING_STAMP)

$(GRADING_STAMP): $(SETUP_STAMP) requirements-grading.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-grading.txt
	$(PY) -m pip check
	touch $@

# MathJax, require.js and the ipywidgets HTML manager, from the npm registry, served by the book itself.
web: $(WEB_STAMP)

$(WEB_STAMP): package.json package-lock.json book/_ext/widgets-offline.js book/_ext/offline_web.py
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	rm -rf webassets && mkdir -p webassets/mathjax webassets/html-manager/dist
	cp -r node_modules/mathjax/es5/{startup.js,core.js,a11y,adaptors,input,output,ui} webassets/mathjax/
	cp node_modules/requirejs/require.js webassets/require.min.js
	cp node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js webassets/html-manager/
	cp node_modules/@jupyter-widgets/html-manager/dist/*.{woff,woff2,ttf,eot,svg} webassets/html-manager/dist/
	cp book/_ext/widgets-offline.js webassets/
	# Noto Sans SC is read from node_modules when the build ends, cut to the book's characters.
	touch $@

# Offline when npm is here; otherwise say so once and build with the CDN defaults.
book: setup
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	else echo "npm not found: building with MathJax and widget scripts from CDNs (the book will need the network)."; fi
	$(BIN)/jupyter-book build . -n -W --keep-going
	$(MAKE) --no-print-directory book-zh
	@echo "Built. Open $(HTML)/index.html, or run 'make serve' and visit http://127.0.0.1:$(PORT)"

# The Chinese edition, from the same sources and execution cache (nothing executes again), with
# the catalogs of locales/ and a configuration made from _config.yml; its site is the folder zh/
# of the English one. ZH_OUT: where Sphinx builds it; ZH_SITE: where the site serves it.
ZH_OUT ?= _build/zh
ZH_SITE ?= $(HTML)/zh
book-zh: setup
	$(PY) book/_ext/translations.py config
	$(BIN)/jupyter-book build . -n -W --keep-going --config _config.zh.yml --toc _toc.zh.yml \
	  --path-output $(ZH_OUT)
	rm -rf $(ZH_SITE) && cp -r $(ZH_OUT)/_build/html $(ZH_SITE)

# Solutions shown, in its own folder; notebooks come from the same execution cache.
INSTRUCTOR := _build/instructor
INSTRUCTOR_EN = BOOK_EDITION=instructor $(BIN)/jupyter-book build . -n -W --keep-going \
  --path-output $(INSTRUCTOR)
INSTRUCTOR_ZH = BOOK_EDITION=instructor $(MAKE) --no-print-directory book-zh \
  ZH_OUT=$(INSTRUCTOR)-zh ZH_SITE=$(INSTRUCTOR)/_build/html/zh
book-instructor: setup web
	$(INSTRUCTOR_EN)
	$(INSTRUCTOR_ZH)
	@echo "Instructor edition built. Open $(INSTRUCTOR)/_build/html/index.html"

# The Chinese edition's catalogs after an English edit: every message of the instructor edition
# (solutions too), plus the book's title, part captions and figure text, merged into
# locales/zh_CN/LC_MESSAGES/ (one .po per page; new and changed messages await a translator).
POT := _build/pot
pot: setup
	rm -rf $(POT)/_build/gettext
	BOOK_EDITION=instructor $(BIN)/jupyter-book build . -n -W --keep-going \
	  --builder custom --custom-builder gettext --path-output $(POT)
	$(PY) book/_ext/translations.py pot

# Learner notebooks (what Colab, Binder, a hub and downloads open) from the last `make book`:
# its execution cache gives the glued numbers, so nothing runs twice. Commit notebooks/.
notebooks: setup
	$(PY) book/_ext/learner_notebooks.py

# With solutions, for instructors only: never committed (the repository is public).
notebooks-instructor: setup
	$(PY) book/_ext/learner_notebooks.py --edition instructor --out $(INSTRUCTOR)/notebooks

serve:
	@test -f $(HTML)/index.html || { echo "No book yet: run 'make book' first."; exit 1; }
	$(PY) -m http.server $(PORT) --bind 127.0.0.1 --directory $(HTML)

# Graded assignments from the chapters' marked exercises (book/_ext/assignments.py): student
# notebooks, autograder zips and solutions in _build/assignments. Numeric answers follow BOOK_SEED:
# give your course its own, `BOOK_SEED=<private number> make assignments`.
assignments: grading
	$(PY) book/_ext/assignments.py

# Every file in SUBMISSIONS against its assignment's autograder, one per core, TIMEOUT seconds
# each (default 300); ASSIGNMENT=<chapter> when the notebooks do not name theirs.
grade: grading
	@test -n "$(SUBMISSIONS)" || { echo "make grade SUBMISSIONS=<folder of submissions>"; exit 2; }
	@test -d _build/assignments/autograder || { echo "No assignments yet: run 'make assignments' first."; exit 1; }
	$(PY) book/_ext/grade.py "$(SUBMISSIONS)" $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) \
		$(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(GRADES),--out $(GRADES))

# Code and notebooks; the GitHub workflows against GitHub's schema and zizmor's security audits
# (both offline); the wheel and sdist as the package index will read them.
lint: setup
	$(BIN)/ruff check tutorial_lib tests benchmarks book
	$(BIN)/ruff format --check tutorial_lib tests benchmarks book
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/zizmor --offline --quiet .github/workflows
	$(MAKE) --no-print-directory dist

# What the release workflow builds and checks on a v* tag.
dist: setup
	rm -rf _build/dist && mkdir -p _build
	$(PY) -m build --no-isolation --outdir _build/dist . > _build/dist.log 2>&1 || { cat _build/dist.log; exit 1; }
	$(BIN)/twine check --strict _build/dist/*

test-unit: setup
	$(BIN)/pytest -q -n 2 tests --ignore=tests/built --ignore=tests/learner --ignore=tests/assignments

# Assignments built and a folder of generated submissions graded: a sample of the self-checks'
# corpora of wrong implementations (at most two minutes); test-grading-corpora grades them all.
test-grading: grading
	$(BIN)/pytest -q -p no:xdist tests/assignments

test-grading-corpora: grading
	GRADING_CORPORA=all $(BIN)/pytest -q -p no:xdist tests/assignments

# Every learner notebook and every assignment's student notebook, top to bottom, in a Colab-like
# kernel (minutes; its environment is cached). The student notebooks are built without otter's run
# of the solutions (50 of 80 s here): test-grading grades those solutions with the autograder
# itself and requires full marks.
test-learner: grading
	$(PY) book/_ext/assignments.py --no-run-tests
	$(BIN)/pytest -q tests/learner

# `make test` always builds the offline way: no npm is an error here, not a fallback. Both
# editions, both languages: the instructor edition reads the cache the first build filled, so it
# comes here, side by side with the other slow parts, not after them (a minute and a half less).
# The Chinese student edition and the English instructor edition share no output, so they build
# side by side: one after the other, the last two builds left a core idle for two minutes.
test-book: setup web
	$(BIN)/jupyter-book build . -n -W --keep-going
	@$(INSTRUCTOR_EN) > _build/instructor.log 2>&1 & en=$$!; \
	$(MAKE) --no-print-directory book-zh; zh=$$?; wait $$en; en=$$?; cat _build/instructor.log; \
	test $$zh = 0 && test $$en = 0
	$(INSTRUCTOR_ZH)

# A claim that holds for one seed on one machine is an anecdote: rebuild the whole book with
# other seeds and one thread, side by side, each into its own folder and execution cache
# (book/_ext/seeded_cache.py); zero warnings and every assert must hold there too. The Chinese
# edition is built from each seed's cache too (nothing executes again): its glued numbers are
# the seed's, and a translation must read true for them and build without a warning.
SEEDS_CHECKED := 1 2
test-seeds: setup web
	@mkdir -p _build; $(PY) book/_ext/translations.py config; pids=""; \
	for s in $(SEEDS_CHECKED); do \
	  rm -rf _build/seed$$s/_build/html _build/seed$$s/_build/.doctrees _build/seed$$s-zh; \
	  ( BOOK_SEED=$$s OMP_NUM_THREADS=1 $(BIN)/jupyter-book build . -n -W --keep-going \
	      --path-output _build/seed$$s > _build/seed$$s.log 2>&1 && \
	    BOOK_SEED=$$s OMP_NUM_THREADS=1 $(BIN)/jupyter-book build . -n -W --keep-going \
	      --config _config.zh.yml --toc _toc.zh.yml --path-output _build/seed$$s-zh \
	      >> _build/seed$$s.log 2>&1; echo $$? > _build/seed$$s.status ) & \
	  pids="$$pids $$!"; \
	done; wait $$pids; status=0; \
	for s in $(SEEDS_CHECKED); do \
	  if [ "$$(cat _build/seed$$s.status)" = 0 ]; then \
	    echo "BOOK_SEED=$$s, one thread: built with zero warnings, in English and in Chinese"; \
	  else status=1; echo "BOOK_SEED=$$s, one thread: FAILED (see _build/seed$$s.log):"; \
	    grep -E "WARNING|rror" _build/seed$$s.log | grep -v "over TCP" | head -40; fi; \
	done; exit $$status

# The built-book tests that load English pages in Chromium (one process; the rest in another).
BROWSED_EN := tests/built/test_browser.py tests/built/test_readability.py

# The slow parts share nothing, and each keeps about one core busy (the chapters train
# tiny models on one thread), so they run side by side; each one's output comes when it ends.
# Grading stays out of them: side by side with the builds, right submissions ran past the test's
# 40 s limit (about 6 s alone) and lost their points (`make grade` allows 300 s). The Python
# packages and the web assets install side by side (npm ci took 13 s of the builds' phase).
test:
	$(MAKE) --no-print-directory -j2 setup web
	$(MAKE) --no-print-directory lint test-unit test-grading
	$(MAKE) --no-print-directory -j3 --output-sync=target test-book test-seeds test-learner
	# Two processes: the English pages in Chromium, and the rest (the Chinese pages in Chromium,
	# and the English checks that read files only). Each page is loaded once per view and shared
	# by every test that reads it (tests/built/conftest.py), and the two share no page. Workers
	# within one would load pages again.
	@$(BIN)/pytest -q -p no:xdist tests/built $(BROWSED_EN:%=--ignore=%) \
	  > _build/test-built-rest.log 2>&1 & rest=$$!; \
	$(BIN)/pytest -q -p no:xdist $(BROWSED_EN); en=$$?; \
	wait $$rest; rest=$$?; echo "tests/built, the rest:"; cat _build/test-built-rest.log; \
	test $$en = 0 && test $$rest = 0

bench: setup web
	$(PY) benchmarks/run.py

clean:
	rm -rf _build webassets
