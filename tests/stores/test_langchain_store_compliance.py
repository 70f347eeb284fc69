"""Every LangChain store adapter against the same checks, on real stores (no mocks).

Written through the store's own ``add_documents``, read back through a real similarity search:
every metadata shape GraphER writes or reads, in the shape the store keeps
(:func:`grapher_core.request.stores.kept_metadata`), compared field by field as GraphER's
readers see it; the raw shapes each store declares it keeps, compared exactly; the vectors read
back by the adapter, equal to those written; the store's usual filter on a GraphER field.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from helpers_extras import needs
from helpers_stores import (
    LANGCHAIN_STORES,
    LIST_FIELDS,
    N_DOCS,
    NESTED_FIELDS,
    SCALAR_FIELDS,
    doc_id,
    langchain_embeddings,
    langchain_filter,
    langchain_store,
    postgres_or_skip,
    shapes,
    text,
    unit,
    vector_of,
)

needs("langchain")

from langchain_core.documents import Document  # noqa: E402

from grapher_core.diagnostics import GraphERWarning  # noqa: E402
from grapher_core.metadata import read_int, read_list  # noqa: E402
from grapher_core.request.stores import unkept_fields  # noqa: E402
from langchain_grapher.stores import adapter_for, documents_with_ids, store_ready  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(params=LANGCHAIN_STORES)
def store(request: pytest.FixtureRequest) -> Any:
    return langchain_store(request.param, langchain_embeddings(), postgres_or_skip(request))


def _written(store: Any) -> list[Document]:
    """The documents, as GraphER writes them for ``store``, added through ``add_documents``."""
    documents = [
        Document(id=doc_id(i), page_content=text(i), metadata=shapes(i)) for i in range(N_DOCS)
    ]
    store.add_documents(store_ready(store, documents))
    return documents


def _searched(
    store: Any, query: str = "orders of Zürich customers", **kwargs: Any
) -> list[Document]:
    return documents_with_ids(store, store.similarity_search(query, k=N_DOCS, **kwargs))


def _nested(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_every_shape_reads_back_the_same_through_a_search(store: Any) -> None:
    _written(store)
    found = _searched(store)
    assert sorted(d.id for d in found) == sorted(doc_id(i) for i in range(N_DOCS))
    for document in found:
        expected = shapes(int(next(i for i in range(N_DOCS) if doc_id(i) == document.id)))
        got = document.metadata
        for field in LIST_FIELDS:
            assert read_list(got.get(field)) == expected[field], (field, got.get(field))
        assert document.page_content == text(int(expected["table"].split("_")[1]))
        for field in SCALAR_FIELDS:
            assert got[field] == expected[field] or read_int(got[field]) == expected[field], field
        for field in NESTED_FIELDS:
            assert _nested(got[field]) == expected[field], field


def test_a_shape_the_store_cannot_keep_is_said_naming_field_and_store(store: Any) -> None:
    capabilities = adapter_for(store).capabilities
    unkept = unkept_fields(capabilities, shapes(0))
    if not unkept:
        assert store_ready(store, [Document(page_content="x", metadata=shapes(0))])[
            0
        ].metadata == shapes(0)
        return
    with pytest.warns(GraphERWarning) as said:
        store_ready(store, [Document(page_content="x", metadata=shapes(0))])
    messages = " ".join(str(w.message) for w in said)
    assert capabilities.store in messages
    assert all(repr(field) in messages for field in unkept)


def test_declared_shapes_are_kept_raw_and_unkept_ones_are_named(store: Any) -> None:
    """What the adapter declares is what the store does: kept shapes come back as written
    (native lists, empty lists, dicts), the others are named by ``unkept_fields`` -- and the
    store refuses or changes them."""
    capabilities = adapter_for(store).capabilities
    raw = shapes(0)
    unkept = unkept_fields(capabilities, raw)
    kept = {k: v for k, v in raw.items() if k not in unkept}
    store.add_documents([Document(id=doc_id(0), page_content=text(0), metadata=kept)])
    (found,) = _searched(store, text(0))
    assert {k: found.metadata[k] for k in kept} == kept
    for field in unkept:  # refused at ingestion (the store's own error names the field)
        with pytest.raises(Exception):  # noqa: B017 - each store raises its own type
            store.add_documents(
                [Document(id=doc_id(1), page_content=text(1), metadata={field: raw[field]})]
            )


def test_vectors_read_back_in_one_call_equal_those_written(store: Any) -> None:
    documents = _written(store)
    adapter = adapter_for(store)
    ids = [d.id for d in reversed(documents)] + ["not-stored", None]
    vectors = adapter.vectors(ids)
    assert vectors is not None and len(vectors) == len(ids)
    assert vectors[-2] is None and vectors[-1] is None
    for document, vector in zip(reversed(documents), vectors, strict=False):
        assert vector is not None
        np.testing.assert_allclose(unit(vector), unit(vector_of(document.page_content)), atol=1e-5)


def test_the_stores_usual_filter_works_on_a_grapher_field(
    store: Any, request: pytest.FixtureRequest
) -> None:
    _written(store)
    kind = request.node.callspec.params["store"]
    condition, expected = langchain_filter(kind)
    found = _searched(store, filter=condition)
    assert {d.id for d in found} == expected
    assert all(read_list(d.metadata.get("entities"))[0] == "Zürich" for d in found)


def _count_store_calls(store: Any, kind: str) -> list[int]:
    """Counts the store's own read calls (the store stays real: its method is wrapped on
    this instance, or SQLAlchemy's cursor events are counted for Postgres)."""
    calls: list[int] = []
    if kind == "pgvector":
        from sqlalchemy import event

        event.listen(store._engine, "before_cursor_execute", lambda *_a, **_k: calls.append(1))
        return calls
    owner, name = {
        "chroma": lambda: (store, "get"),
        "qdrant": lambda: (store.client, "retrieve"),
        "faiss": lambda: (store.index, "reconstruct_batch"),
    }.get(kind, lambda: (None, ""))()
    if owner is not None:
        method = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return method(*args, **kwargs)

        setattr(owner, name, counted)
    return calls


def test_the_vectors_of_a_pool_are_one_call_to_the_store(
    store: Any, request: pytest.FixtureRequest
) -> None:
    documents = _written(store)
    kind = request.node.callspec.params["store"]
    calls = _count_store_calls(store, kind)
    vectors = adapter_for(store).vectors([d.id for d in documents])
    assert vectors is not None and all(v is not None for v in vectors)
    assert len(calls) == (0 if kind == "in_memory" else 1)  # in memory: a dict, no call
