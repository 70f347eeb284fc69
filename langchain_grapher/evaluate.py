"""Evaluate GraphER on the LangChain pipeline you deployed: your retriever, your questions.

>>> from langchain_grapher import evaluate_retriever
>>> result = evaluate_retriever(store.as_retriever(search_kwargs={"k": 20}),
...                             "questions.jsonl", gold_key="source")
>>> print(result)                      # the table and the choice `grapher eval` prints
>>> result.write_config("grapher.json")  # GraphERReranker.from_config("grapher.json")

Each question is asked of *your* retriever (any ``BaseRetriever``: a vector store's
``as_retriever()``, BM25, an ensemble); the documents it returns, with their ids and metadata,
are converted as :class:`~langchain_grapher.GraphERReranker` converts them, and the core's one
evaluation (:mod:`grapher_core.evaluation.pipeline`) reranks them with each configuration as
the compressor would, measures, chooses and reports. Gold may name document ids or, with
``gold_key``, values of a metadata key: LangChain's loaders write ``metadata["source"]`` (the
file or URL), which every chunk a text splitter makes keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.retrievers import BaseRetriever

from grapher_core.errors import InputTypeError
from grapher_core.evaluation.door import Door
from grapher_core.evaluation.outcome import Evaluation
from grapher_core.evaluation.pipeline import DEFAULT_RANKERS, check_options, evaluate_pipeline
from grapher_core.evaluation.questions import as_questions
from grapher_core.request import DoorIO
from grapher_core.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_CHARS_PER_DOC
from grapher_core.utils.progress import Progress
from langchain_grapher.convert import candidates_from_documents
from langchain_grapher.stores import vectors_by_id

__all__ = ["evaluate_retriever"]


def evaluate_retriever(
    retriever: BaseRetriever,
    questions: Any,
    *,
    gold_key: str | None = None,
    k: int | Sequence[int] = (5, 10),
    for_k: int | None = None,
    rankers: Sequence[str] = DEFAULT_RANKERS,
    score_key: str | None = None,
    embeddings: Any = None,
    vector_store: Any = None,
    cost_budget: str | float | None = "5x",
    repeats: int = 3,
    progress: bool = False,
) -> Evaluation:
    """Measure GraphER's configurations on what ``retriever`` returns for ``questions``.

    ``questions``: a questions JSONL path (``{"id", "text", "gold"}`` per line, the file
    ``grapher eval`` reads) or a list of such dicts / :class:`~grapher_core.evaluation.
    questions.Question`. ``gold_key``: gold names values of this metadata key (``"source"``
    for a loader's file or URL) instead of ``Document.id``; a document counts for its value.
    ``k``: the cut-offs of gold@K and PR@K; ``for_k``: the K you feed downstream, the one
    the choice reads (default the smallest). ``score_key``: the metadata key holding the
    retriever's score (score seeds are tried only with it). ``embeddings`` and
    ``vector_store``: what the deployed ``GraphERReranker`` would get (they answer the GAT's
    vectors). ``cost_budget``: the most a chosen configuration may cost per query (``"5x"``
    the default's cost, ``"200ms"``, a number of ms, or ``None``). ``repeats``: timing
    passes, each latency their median.

    Returns the :class:`~grapher_core.evaluation.outcome.Evaluation` ``grapher eval``
    prints: ``print(result)``, ``result.records()`` (rows for a DataFrame),
    ``result.to_dict()``, ``result.write_config(path)``.
    """
    if not isinstance(retriever, BaseRetriever):
        raise InputTypeError(
            "evaluate_retriever needs a LangChain BaseRetriever (e.g. "
            f"store.as_retriever(search_kwargs={{'k': 20}})), got {type(retriever).__name__}"
        )
    options = check_options(k, for_k, rankers, cost_budget, repeats, gold_key)
    asked = as_questions(questions)
    counter = Progress(len(asked), "retrieving", enabled=progress)
    pools = []
    for question in asked:
        documents = retriever.invoke(question.text)
        pools.append(candidates_from_documents(documents, score_key=score_key))
        counter.update()
    counter.close()
    reader = None if vector_store is None else partial(vectors_by_id, vector_store)
    door = Door(
        "GraphERReranker",
        answer=DoorIO.of(embeddings, reader).answer,
        max_candidates=DEFAULT_MAX_CANDIDATES,
        max_chars_per_doc=DEFAULT_MAX_CHARS_PER_DOC,
    )
    return evaluate_pipeline(
        asked,
        pools,
        options,
        door=door,
        retriever=_described(retriever),
        questions_from=str(questions) if isinstance(questions, str) else "questions",
        progress=progress,
    )


def _described(retriever: BaseRetriever) -> str:
    """The retriever as the report names it: its class, its store and its ``k``."""
    text = type(retriever).__name__
    store = getattr(retriever, "vectorstore", None)
    if store is not None:
        text += f" over {type(store).__name__}"
    k = (getattr(retriever, "search_kwargs", None) or {}).get("k")
    return text if k is None else f"{text} (k={k})"
