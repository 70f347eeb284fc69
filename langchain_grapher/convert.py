"""Type translation between LangChain ``Document`` objects and the core's candidates, nothing else.

Ids: a document's ``Document.id`` is its candidate id. A document without one gets an internal
id, ``"content:" + stable_id(page_content)``, used only inside the core (the output keeps
``id=None``); two id-less documents with the same text cannot be told apart and are an error.
Errors never show that internal id: :func:`positions_named` names such a document by its
position in the list the caller passed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from langchain_core.documents import Document

from grapher_core import Candidate, RankedCandidate
from grapher_core.conventions import (
    EDGES_KEY,
    EXPLANATION_KEY,
    GRAPHER_SCORE_KEY,
    RELEVANCE_SCORE_KEY,
    RETRIEVAL_SCORE_KEY,
    explanation_to_metadata,
)
from grapher_core.enrich.chunks import stable_id
from grapher_core.errors import GraphERError, InputError, InputTypeError

__all__ = [
    "EXPLANATION_KEY",
    "RELEVANCE_SCORE_KEY",
    "RETRIEVAL_SCORE_KEY",
    "candidate_id",
    "candidates_from_documents",
    "document_from_ranked",
    "explanation_to_metadata",
    "positions_named",
]


def candidate_id(document: Document) -> str:
    """The id the core sees for ``document``: its own id, or a hash of its text when it has none."""
    if document.id is not None and str(document.id) != "":
        return str(document.id)
    return "content:" + stable_id(document.page_content)


@contextmanager
def positions_named(documents: Sequence[Any]) -> Iterator[None]:
    """A GraphER error raised inside names each id-less document by its position in
    ``documents`` ("the document at position 3 (it has no id)"), never by the internal content
    hash the core ranked it under: every message of the core (scores, vectors, texts) reaches
    the caller in the caller's terms. The error keeps its type and traceback."""
    try:
        yield
    except GraphERError as error:
        message = str(error)
        if "content:" in message:
            for position, document in enumerate(documents):
                if isinstance(document, Document) and (document.id is None or document.id == ""):
                    internal = candidate_id(document)
                    label = f"the document at position {position} (it has no id)"
                    for shown in (f"candidate {internal!r}", repr(internal), internal):
                        message = message.replace(shown, label)
            error.args = (message, *error.args[1:])
        raise


def candidates_from_documents(
    documents: Sequence[Document],
    *,
    score_key: str | None = None,
    scores: Sequence[float | None] | None = None,
    embeddings: np.ndarray | Sequence[np.ndarray | None] | None = None,
) -> list[Candidate]:
    """One :class:`Candidate` per document, in order; the documents are only read.

    The base score comes from ``scores`` when given (a vector store's relevance scores), else
    from ``metadata[score_key]`` when ``score_key`` is set, else it is ``None`` (seeds from rank).
    Score validation (missing for some, not a number) is the core's, with the ids named.
    """
    if isinstance(documents, Document):
        raise InputTypeError("expected a sequence of Documents, got a single Document")
    for position, document in enumerate(documents):
        if not isinstance(document, Document):
            raise InputTypeError(
                f"item at position {position} is a {type(document).__name__}, "
                "not a langchain_core Document"
            )
    if scores is not None and len(scores) != len(documents):
        raise InputError(f"got {len(scores)} scores for {len(documents)} documents")
    if embeddings is not None and len(embeddings) != len(documents):
        raise InputError(f"got {len(embeddings)} embeddings for {len(documents)} documents")
    ids = [candidate_id(document) for document in documents]
    _check_unique(ids, documents)
    out = []
    for position, (document, object_id) in enumerate(zip(documents, ids, strict=True)):
        if scores is not None:
            score: Any = scores[position]
        elif score_key is not None:
            score = document.metadata.get(score_key)
        else:
            score = None
        out.append(
            Candidate(
                id=object_id,
                text=document.page_content,
                score=score,
                metadata=document.metadata,
                embedding=None if embeddings is None else embeddings[position],
            )
        )
    return out


def document_from_ranked(
    ranked: RankedCandidate,
    original: Document,
    *,
    explain: bool = False,
    extra: Mapping[str, Any] | None = None,
    edges: Mapping[str, int] | None = None,
) -> Document:
    """A new Document for a reranked candidate: same id and text, copied metadata plus scores
    (``relevance_score`` on the documented scale, the raw ``grapher_score``) and, when given,
    the graph's edge count per kind (``grapher_edges``).

    A ``relevance_score`` the document came with (an upstream reranker's: Cohere, FlashRank, a
    cross-encoder that keeps its score) is replaced by GraphER's, so it is kept as
    ``retrieval_score`` unless the document has one already -- as LlamaIndex's
    ``keep_retrieval_score`` keeps the score a reranker replaces; ``extra`` (the retriever's
    store score) wins. Any other ``score_key`` stays under its own key in the copy."""
    metadata = dict(original.metadata)
    upstream = metadata.get(RELEVANCE_SCORE_KEY)
    if upstream is not None and RETRIEVAL_SCORE_KEY not in metadata and not ranked.expanded:
        metadata[RETRIEVAL_SCORE_KEY] = upstream
    if extra:
        metadata.update(extra)
    metadata[RELEVANCE_SCORE_KEY] = ranked.score if ranked.relevance is None else ranked.relevance
    metadata[GRAPHER_SCORE_KEY] = ranked.score
    if edges is not None:
        metadata[EDGES_KEY] = dict(edges)
    if explain:
        metadata[EXPLANATION_KEY] = explanation_to_metadata(ranked)
    return Document(id=original.id, page_content=original.page_content, metadata=metadata)


def _check_unique(ids: Sequence[str], documents: Sequence[Document]) -> None:
    repeated = {i for i, count in Counter(ids).items() if count > 1}
    if not repeated:
        return
    named = sorted(i for i in repeated if not i.startswith("content:"))
    if named:
        shown = ", ".join(repr(i) for i in named[:5])
        raise InputError(
            f"duplicate document ids: {shown}"
            + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        )
    positions = [p for p, i in enumerate(ids) if i in repeated]
    raise InputError(
        "documents without an id and with identical text cannot be told apart "
        f"(positions {positions[:10]}): give them ids (Document.id) or deduplicate them"
    )
