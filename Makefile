# Every target sets up what it needs: a fresh clone needs only `make book` or `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
SETUP_STAMP := $(VENV)/.setup-done
WEB_STAMP := webassets/.web-done
HTML := _build/html
PORT ?= 8000
# One BLAS thread per process keeps the 2-core timings steady and the results repeatable.
export OMP_NUM_THREADS ?= 2
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup web book book-instructor serve test test-unit test-book lint bench clean

help:
	@echo "make book   set up, then build the HTML book into $(HTML) (executes every notebook)"
	@echo "make test   set up, then run the whole suite (unit, book build, built HTML, browser)"
	@echo "make book-instructor  the same book with every solution shown, in $(INSTRUCTOR)"
	@echo "make serve  serve $(HTML) on http://127.0.0.1:$(PORT)"
	@echo "make bench  build and explorer timings (see benchmarks/README.md)"

setup: $(SETUP_STAMP)

$(SETUP_STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
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
	@echo "Built. Open $(HTML)/index.html, or run 'make serve' and visit http://127.0.0.1:$(PORT)"

# Solutions shown, in its own folder; notebooks come from the same execution cache.
INSTRUCTOR := _build/instructor
book-instructor: setup web
	BOOK_EDITION=instructor $(BIN)/jupyter-book build . -n -W --keep-going --path-output $(INSTRUCTOR)
	@echo "Instructor edition built. Open $(INSTRUCTOR)/_build/html/index.html"

serve:
	@test -f $(HTML)/index.html || { echo "No book yet: run 'make book' first."; exit 1; }
	$(PY) -m http.server $(PORT) --bind 127.0.0.1 --directory $(HTML)

lint: setup
	$(BIN)/ruff check tutorial_lib tests benchmarks book
	$(BIN)/ruff format --check tutorial_lib tests benchmarks book

test-unit: setup
	$(BIN)/pytest -q tests --ignore=tests/built

# `make test` always builds the offline way: no npm is an error here, not a fallback.
test-book: setup web
	$(BIN)/jupyter-book build . -n -W --keep-going

test: lint test-unit test-book
	BOOK_EDITION=instructor $(BIN)/jupyter-book build . -n -W --keep-going --path-output $(INSTRUCTOR)
	$(BIN)/pytest -q tests/built

bench: setup web
	$(PY) benchmarks/run.py

clean:
	rm -rf _build webassets
