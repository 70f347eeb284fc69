# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP_INSTALL := $(PY) -m pip install --quiet -c constraints.txt
export GRAPHER_BENCHMARKS ?= $(abspath ../shared/benchmarks)

.PHONY: demo test test-fast lint format bench bench-latency tune clean reliability

# One list of paths for every check, so `make lint` and `make test` agree.
CODE := grapher_core grapher_bench langchain_grapher llama_index_grapher tests

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) torch==2.13.0
	$(PIP_INSTALL) -e ".[all,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/grapher demo

test: lint
	$(VENV)/bin/pytest -q -rs

# Every case of the hardening issue, with the count printed (docs/reliability.md).
reliability: $(STAMP)
	$(VENV)/bin/pytest -q tests/reliability

# Unit tests only (no benchmark data, notebooks, packaged models or stores): for development.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check $(CODE)
	$(VENV)/bin/pytest -q -rs -m "not integration"

lint: $(STAMP)
	$(VENV)/bin/ruff check $(CODE)
	$(VENV)/bin/ruff format --check $(CODE)
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix $(CODE)
	$(VENV)/bin/ruff format $(CODE)

bench-latency: $(STAMP)
	$(VENV)/bin/grapher-bench bench-latency --write docs/benchmarks.md

# Retrieval benchmarks on ../shared/benchmarks (docs/benchmarks.md, bench section).
TUNE_JSON := bench_out/tune/tune.json

tune: $(STAMP)
	$(VENV)/bin/grapher-bench tune --data $(GRAPHER_BENCHMARKS)/spider_train --limit 1000 --out bench_out/tune

TABLE_SETS := spider_dev spider_train bird_dev beaver_dev
TEXT_SETS := hotpotqa 2wikimultihopqa musique squad_chunks hotpotqa_sentences 2wikimultihopqa_sentences
PEERS := expand-gcs,graph-retriever,graph-retriever-tuned

# All retrievers with the graph rankers, then the hybrid block again with the learned rankers,
# expansion and the peers, then one doc section from every results.json.
bench: $(STAMP)
	@test -f $(TUNE_JSON) || $(VENV)/bin/grapher-bench tune --data $(GRAPHER_BENCHMARKS)/spider_train --limit 1000 --out bench_out/tune
	start=$$(date +%s) && \
	$(VENV)/bin/grapher-bench bench --data $(GRAPHER_BENCHMARKS) --retriever all --out bench_out --no-progress && \
	$(VENV)/bin/grapher-bench bench $(foreach d,$(TABLE_SETS),--data $(GRAPHER_BENCHMARKS)/$(d)) --retriever hybrid \
		--rankers baseline,db-first,ppr,gcs,gat,mlp,$(PEERS) --out bench_out --no-progress && \
	$(VENV)/bin/grapher-bench bench $(foreach d,$(TEXT_SETS),--data $(GRAPHER_BENCHMARKS)/$(d)) --retriever hybrid \
		--rankers baseline,ppr,gcs,gat,mlp,$(PEERS),prev-next --out bench_out --no-progress && \
	echo "{\"seconds\": $$(( $$(date +%s) - start ))}" > bench_out/bench_meta.json && \
	$(VENV)/bin/grapher-bench bench --from-results bench_out --tune-results $(TUNE_JSON) --write-doc docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
