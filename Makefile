# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP_INSTALL := $(PY) -m pip install --quiet -c constraints.txt
export GRAPHER_BENCHMARKS ?= $(abspath ../shared/benchmarks)

.PHONY: demo test test-fast test-min test-gat-only lint format bench bench-latency tune clean reliability

# One list of paths for every check, so `make lint` and `make test` agree.
CODE := grapher_core grapher_bench langchain_grapher llama_index_grapher tests

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) torch==2.13.0
	$(PIP_INSTALL) -e ".[all]" --group dev
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/grapher demo

test: lint
	$(VENV)/bin/pytest -q -rs

# The unit tests on the lowest versions pyproject.toml declares (constraints-min.txt), without
# torch and with only the sql, langchain and llamaindex extras: the floor of the version matrix
# (`make test` is its top: today's releases, every extra, Python 3.11). Python 3.10 is
# requires-python's lower bound, and numpy 1.24 has no wheels past 3.11. MIN_PYTHON overrides.
MIN_PYTHON ?= $(shell for p in python3.10 /root/.pyenv/versions/3.10*/bin/python; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null && { echo $$p; exit; }; \
	done; echo python3)
VENV_MIN := .venv-min
MIN_STAMP := $(VENV_MIN)/.installed

$(MIN_STAMP): pyproject.toml constraints.txt constraints-min.txt
	@$(MIN_PYTHON) -c 'import sys; v = sys.version_info[:2]; print(f"test-min: Python {v[0]}.{v[1]} ($(MIN_PYTHON))" + ("" if v == (3, 10) else ": no Python 3.10 found, the floor is not tested on 3.10"))'
	rm -rf $(VENV_MIN)
	$(MIN_PYTHON) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_MIN)/bin/python -m pip install --quiet -c constraints-min.txt -c constraints.txt \
		-e ".[sql,langchain,llamaindex]" pytest pytest-asyncio hypothesis
	@! $(VENV_MIN)/bin/python -c "import torch" 2>/dev/null || { echo "test-min: torch got installed"; exit 1; }
	touch $(MIN_STAMP)

test-min: $(MIN_STAMP)
	@$(VENV_MIN)/bin/python -c 'from importlib.metadata import version as v; print("test-min:", *(f"{p}=={v(p)}" for p in ("numpy", "scipy", "sqlalchemy", "langchain-core", "llama-index-core", "pydantic")))'
	$(VENV_MIN)/bin/pytest -q -rfEs -m "not integration"

# The unit tests with torch and only the gat extra (no sql, embed, ner, langchain, llamaindex):
# every test that needs another extra must skip, naming it. pip's cache is reused (no
# --no-cache-dir), torch comes from constraints.txt like everywhere else.
VENV_GAT := .venv-gat
GAT_STAMP := $(VENV_GAT)/.installed

$(GAT_STAMP): pyproject.toml constraints.txt
	rm -rf $(VENV_GAT)
	$(PYTHON) -m venv $(VENV_GAT)
	$(VENV_GAT)/bin/python -m pip install --quiet -c constraints.txt \
		-e ".[gat]" pytest pytest-asyncio hypothesis
	echo '*' > $(VENV_GAT)/.gitignore
	@$(VENV_GAT)/bin/python -c 'import importlib.util as u; bad = [m for m in ("sqlalchemy", "spacy", "langchain_core", "llama_index") if u.find_spec(m)]; assert not bad, f"test-gat-only: {bad} got installed"'
	touch $(GAT_STAMP)

test-gat-only: $(GAT_STAMP)
	@$(VENV_GAT)/bin/python -c 'from importlib.metadata import version as v; print("test-gat-only:", *(f"{p}=={v(p)}" for p in ("torch", "torch-geometric", "safetensors", "numpy", "scipy")))'
	$(VENV_GAT)/bin/pytest -q -rfEs -m "not integration"

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
# expansion and the peers, then one doc section from every bench_out/<set>/<retriever> run.
# The graph-retriever peers walk sets of edges: a fixed hash seed makes their rows repeatable.
bench: export PYTHONHASHSEED = 0
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
	rm -rf $(VENV) $(VENV_MIN) $(VENV_GAT) .pytest_cache .mypy_cache .ruff_cache
