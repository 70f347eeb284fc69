"""The LangChain reranker's fields: every setting, as the pydantic model LangChain expects.

They are validated as values here (types, strictly) and as a request in the core, which builds
:class:`~grapher_core.request.settings.RerankSettings` from them in one place
(:class:`~langchain_grapher.reranker.GraphERReranker` holds the behaviour).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.documents import BaseDocumentCompressor
from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ConfigDict, Field, model_validator

from grapher_core.expand import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    DEFAULT_SEEDS,
)
from grapher_core.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_CHARS_PER_DOC
from grapher_core.utils.schema import check_field_names, library_errors

__all__ = ["KnownFields", "RerankerFields"]


class KnownFields(BaseModel):
    """What every GraphER LangChain component does with its keywords: one it does not have
    is refused naming the closest one it does (``top_k`` -> ``top_n``), and a refused value is
    the library's error (a ``GraphERError`` naming the field), not pydantic's wrapper around
    it. :meth:`accepted_names`: the keywords a class takes (its fields, by default)."""

    def __init__(self, **data: Any) -> None:
        with library_errors():
            super().__init__(**data)

    @classmethod
    def accepted_names(cls) -> list[str]:
        return list(cls.model_fields)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_field_names(cls.__name__, data, cls.accepted_names())
        return data


class RerankerFields(KnownFields, BaseDocumentCompressor):
    """The fields of :class:`~langchain_grapher.reranker.GraphERReranker` (documented there)."""

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    proximities: list[Any] = Field(default_factory=list)
    """Edge builders of :mod:`grapher_core.edges`: ``ForeignKeys()``, ``SharedEntities()``..."""
    ranker: Any = "gcs"
    """``"gcs"`` (default), ``"ppr"``, ``"baseline"``, ``"gat"``, ``"mlp"`` or a core ``Ranker``."""
    alpha: float | None = Field(default=None, strict=True)
    """The ranker's seed weight; ``None`` keeps the core's tuned default for the named ranker."""
    top_n: int | None = Field(default=3, ge=0, strict=True)
    """How many documents to return (LangChain rerankers' default, 3); ``None`` returns all."""
    score_key: str | None = None
    """Metadata key of the base score: the retriever's, or an upstream reranker's (Cohere and
    FlashRank write ``"relevance_score"``). It seeds the graph when the seed policy reads scores
    (``seed_transform="raw"``, ``"auto"`` or ``"minmax"``, or a ranker that reads them; the
    default GCS seeds from rank). The output keeps it under its own key (the metadata is
    copied); an upstream ``relevance_score``, which GraphER's replaces, becomes
    ``retrieval_score``. Unset, or absent from every document: seeds from rank."""
    seed_transform: Literal["rank", "auto", "raw", "minmax"] | None = None
    """How base scores become seeds; ``None``: the core's one rule, the retriever's order (its
    scores for a ranker that reads them), see :func:`grapher_core.ranking.seeds.seed_policy`."""
    embeddings: Embeddings | None = None
    """For rankers/proximities that need vectors (GAT, ``SemanticKNN``, expansion): the query is
    embedded once per call and the documents in one batch -- only when the core needs them
    (:attr:`needs_embeddings`), in the compressor and in :class:`GraphERRetriever` alike."""
    explain: bool = Field(default=False, strict=True)
    """Write the top contributing neighbours into ``metadata["grapher_explanation"]``."""
    score_threshold: float | None = Field(strict=True, default=None, allow_inf_nan=False)
    """Drop outputs whose ``relevance_score`` is below it, after ranking (so fewer than
    ``top_n`` may come back); ``None`` (default): keep them all."""
    max_candidates: int | None = Field(default=DEFAULT_MAX_CANDIDATES, ge=1, strict=True)
    """Rerank at most this many documents: the first ones in the retriever's order, the rest
    dropped with a warning said once (default 1000; ``None``: no bound)."""
    max_chars_per_doc: int | None = Field(default=DEFAULT_MAX_CHARS_PER_DOC, ge=1, strict=True)
    """Texts longer than this are cut before they are embedded or read by the ranker; the
    output keeps the full text (default 10 000; ``None``: no cut)."""
    strict: bool = Field(default=False, strict=True)
    """Raise instead of warning once on silent no-ops (no field, no edges, no vectors, a pool
    smaller than ``top_n * 2``, a ``score_key`` no document has)."""
    vector_store: Any = None
    """The vector store the documents come from (``InMemoryVectorStore``, Chroma): the vectors
    a ranker or proximity reads are taken from it, not embedded again per query; it must hold
    ``embeddings``' vectors (or, without ``embeddings``, the learned ranker's model's:
    ``GraphEREmbeddings``). ``None``: documents without vectors are embedded (and cached)."""
    neighbour_source: Any = None
    """Optional: a vector store (or any ``fetch(keys)`` neighbour source) to expand from --
    link neighbours of the top ``expand_seeds`` documents that the retriever missed are fetched
    (one batched call per hop), scored and ranked with the rest; they come back with
    ``metadata["grapher_expanded"] = True``. ``None`` (default): rerank the documents only."""
    ego_index: Any = None
    """Optional: an :class:`~grapher_core.expand.egograph.EgoGraphIndex` of the corpus; with a
    ``neighbour_source``, the members of the query's nearest ego-graphs join the documents
    (GRAG's retrieval) instead of link expansion."""
    expand_seeds: int = Field(default=DEFAULT_SEEDS, strict=True)
    """Expansion: how many top documents to follow links from (validated by the core's
    :class:`~grapher_core.expand.Expansion`, like the other ``expand_*`` fields and
    ``prune_threshold``)."""
    expand_hops: int = Field(default=DEFAULT_HOPS, strict=True)
    """Expansion: how many link steps."""
    expand_budget: int = Field(default=DEFAULT_BUDGET, strict=True)
    """Expansion: the most documents added per query (the most query-similar are kept)."""
    prune_threshold: float | None = Field(default=None, strict=True)
    """Expansion: drop fetched documents whose query cosine is below this (needs vectors)."""
    expand_max_fetched: int | None = Field(default=DEFAULT_MAX_FETCHED, strict=True)
    """Expansion: the most documents fetched from the store per query, over all hops (the
    store is asked for no more; default 200; ``None``: no bound). Said once when reached."""
    expand_max_seconds: float | None = Field(default=DEFAULT_MAX_SECONDS, strict=True)
    """Expansion: no hop starts this many seconds after the query's first fetch (a running
    fetch is not interrupted; default 0.2; ``None``: no bound). Said once when reached."""
    expand_max_per_key: int | None = Field(default=DEFAULT_MAX_PER_KEY, strict=True)
    """Expansion: a link key matching more documents than this in one fetch is a hub (a
    category page) and skipped, now and in later queries (default 50; ``None``: no cap)."""
