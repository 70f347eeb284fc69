"""Evaluate GraphER on the LlamaIndex pipeline you deployed: your index or retriever, your
questions.

>>> from llama_index_grapher import evaluate_retriever
>>> result = evaluate_retriever(index, "questions.jsonl", gold_key="file_path")
>>> print(result)                        # the table and the choice `grapher eval` prints
>>> result.write_config("grapher.json")  # GraphERPostprocessor.from_config("grapher.json")

Each question is asked of *your* retriever (a ``VectorStoreIndex`` is asked through
``index.as_retriever(similarity_top_k=...)``; any ``BaseRetriever`` as it is); the nodes it
returns -- their ids, scores, metadata and ``PREVIOUS`` / ``NEXT`` / ``SOURCE`` relationships
-- are converted as :class:`~llama_index_grapher.GraphERPostprocessor` converts them, and the
core's one evaluation (:mod:`grapher_core.evaluation.pipeline`) reranks them with each
configuration as the postprocessor would (the relationships' chunk order included), measures,
chooses and reports. Gold may name node ids or, with ``gold_key``, values of a metadata key:
``SimpleDirectoryReader`` writes ``file_path`` / ``file_name`` on every node; ``"ref_doc_id"``
names the source document of the node's ``SOURCE`` relationship.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.schema import QueryBundle

from grapher_core.edges.detect import SOURCE_FIELD
from grapher_core.errors import InputTypeError
from grapher_core.evaluation.door import Door
from grapher_core.evaluation.outcome import Evaluation
from grapher_core.evaluation.pipeline import DEFAULT_RANKERS, check_options, evaluate_pipeline
from grapher_core.evaluation.questions import as_questions
from grapher_core.request import DoorIO
from grapher_core.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_CHARS_PER_DOC
from grapher_core.utils.progress import Progress
from llama_index_grapher.convert import candidates_from_nodes, relationship_proximity
from llama_index_grapher.stores import node_vectors

__all__ = ["REF_DOC_ID", "evaluate_retriever"]

REF_DOC_ID = "ref_doc_id"
"""The ``gold_key`` naming a node's source document (its ``SOURCE`` relationship)."""


def evaluate_retriever(
    retriever_or_index: BaseRetriever | VectorStoreIndex,
    questions: Any,
    *,
    gold_key: str | None = None,
    similarity_top_k: int = 20,
    k: int | Sequence[int] = (5, 10),
    for_k: int | None = None,
    rankers: Sequence[str] = DEFAULT_RANKERS,
    embed_model: Any = None,
    vector_store: Any = None,
    cost_budget: str | float | None = "5x",
    repeats: int = 3,
    progress: bool = False,
) -> Evaluation:
    """Measure GraphER's configurations on what your retriever returns for ``questions``.

    ``retriever_or_index``: a LlamaIndex ``BaseRetriever``, or a ``VectorStoreIndex`` asked
    through ``as_retriever(similarity_top_k=similarity_top_k)``. ``questions``: a questions
    JSONL path (``{"id", "text", "gold"}`` per line, the file ``grapher eval`` reads) or a
    list of such dicts / :class:`~grapher_core.evaluation.questions.Question`. ``gold_key``:
    gold names values of this metadata key (``"file_path"``, ``"file_name"``, a URL key), or
    ``"ref_doc_id"`` the source document, instead of node ids; a node counts for its value.
    ``k`` / ``for_k``: the cut-offs and the one the choice reads (default the smallest).
    ``embed_model`` and ``vector_store``: what the deployed ``GraphERPostprocessor`` would get.
    ``cost_budget``: the most a chosen configuration may cost per query (``"5x"`` the
    default's cost, ``"200ms"``, a number of ms, or ``None``). ``repeats``: timing passes.

    Returns the :class:`~grapher_core.evaluation.outcome.Evaluation` ``grapher eval``
    prints: ``print(result)``, ``result.records()``, ``result.to_dict()``,
    ``result.write_config(path)``.
    """
    retriever = _retriever(retriever_or_index, similarity_top_k)
    key = SOURCE_FIELD if gold_key == REF_DOC_ID else gold_key
    options = check_options(k, for_k, rankers, cost_budget, repeats, key)
    asked = as_questions(questions)
    counter = Progress(len(asked), "retrieving", enabled=progress)
    pools, vectors = [], []
    for question in asked:
        bundle = QueryBundle(question.text)
        pools.append(candidates_from_nodes(retriever.retrieve(bundle)))
        vectors.append(bundle.embedding)  # the query vector the retriever computed, if any
        counter.update()
    counter.close()
    door = Door(
        "GraphERPostprocessor",
        fixed=(relationship_proximity(),),
        fixed_label="PREVIOUS/NEXT relationships",
        answer=_io(embed_model, vector_store).answer,
        max_candidates=DEFAULT_MAX_CANDIDATES,
        max_chars_per_doc=DEFAULT_MAX_CHARS_PER_DOC,
    )
    queries = None
    if vectors and all(v is not None for v in vectors):
        queries = np.asarray(vectors, dtype=np.float32)
    return evaluate_pipeline(
        asked,
        pools,
        options,
        door=door,
        query_vectors=queries,
        retriever=_described(retriever),
        questions_from=str(questions) if isinstance(questions, str) else "questions",
        progress=progress,
    )


def _retriever(given: Any, similarity_top_k: int) -> BaseRetriever:
    if isinstance(given, VectorStoreIndex):
        return given.as_retriever(similarity_top_k=similarity_top_k)
    if isinstance(given, BaseRetriever):
        return given
    raise InputTypeError(
        "evaluate_retriever needs a LlamaIndex BaseRetriever or a VectorStoreIndex, got "
        f"{type(given).__name__}"
    )


def _io(model: Any, store: Any) -> DoorIO:
    """The postprocessor's IO for ``model`` and ``store``: its embedding calls and the
    vectors the store holds by node id."""
    stored = None if store is None else partial(node_vectors, store)
    if model is None:
        return DoorIO(read_stored=stored)
    return DoorIO(
        embed_documents=model.get_text_embedding_batch,
        embed_query=model.get_query_embedding,
        read_stored=stored,
    )


def _described(retriever: BaseRetriever) -> str:
    text = type(retriever).__name__
    top_k = getattr(retriever, "similarity_top_k", None)
    return text if top_k is None else f"{text} (similarity_top_k={top_k})"
