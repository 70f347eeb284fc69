"""The LlamaIndex postprocessor's fields: every setting, as the pydantic model LlamaIndex
expects, with their serialisation (``to_dict`` / ``from_dict`` / ``from_json``).

They are validated as values here (types, strictly; every class a payload names resolves
through the allow-list of :mod:`grapher_core.allowed`) and as a request in the core, which
builds :class:`~grapher_core.request.settings.RerankSettings` from them in one place
(:class:`~llama_index_grapher.postprocessor.GraphERPostprocessor` holds the behaviour).

A payload (``from_dict`` / ``from_json``) is data, never live objects: the fields that hold
one (:data:`LIVE_FIELDS`: stores, an ego-graph index, a callback manager) are refused from it
and never written by ``to_dict``; they are passed in code (``from_dict(data, vector_store=...)``).
A ranker object is written as its registered name and fields, an embedding model as the fields
a payload may set on its class; ``to_dict`` checks what it writes as ``from_dict`` will read it,
so a payload it writes is one it can read back, and what it cannot write is refused naming the
field.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import (
    BaseModel,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from typing_extensions import Self

from grapher_core.conventions import EXPANDED_KEY, EXPLANATION_KEY
from grapher_core.edges.serialise import proximities_from_dicts, proximity_to_dict
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.expand import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    DEFAULT_SEEDS,
)
from grapher_core.ranking.registry import ranker_from_payload, ranker_to_payload
from grapher_core.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_CHARS_PER_DOC
from grapher_core.utils.schema import (
    Spec,
    check_field_names,
    check_values,
    grapher_error_in,
    library_errors,
    shown,
)
from llama_index_grapher.embeddings import embed_model_payload, load_embed_model

__all__ = ["LIVE_FIELDS", "KnownFields", "PostprocessorFields", "built", "refuse_live"]

LIVE_FIELDS: tuple[str, ...] = ("callback_manager", "neighbour_source", "ego_index", "vector_store")
"""Fields that hold live objects: never read from a payload, never written by ``to_dict``."""


def refuse_live(where: str, data: dict[str, Any], live: tuple[str, ...]) -> None:
    """Refuse a payload that sets a field holding a live object (to anything but null), naming
    the field and the fix: pass it in code."""
    specs = {
        name: Spec("none", fix=f"pass it in code: from_dict(data, {name}=...)") for name in live
    }
    check_values(where, {k: data[k] for k in live if k in data}, specs)


def built(cls: type[Any], where: str, data: dict[str, Any]) -> Any:
    """``cls(**data)``, a pydantic ``ValidationError`` raised as the library's error: the
    ``GraphERError`` a validator raised, or a ``ConfigError`` naming ``where`` and the field."""
    try:
        return cls(**data)
    except ValueError as error:
        if isinstance(error, GraphERError):
            raise
        inner = grapher_error_in(error)
        if inner is not None:
            raise inner from None
        details: list[Any] = getattr(error, "errors", list)()
        first = details[0] if details else {}
        key = ".".join(str(part) for part in first.get("loc", ())) or "?"
        raise ConfigError(
            f"{where}: key {key!r}: {first.get('msg', error)}, got {shown(first.get('input'))}"
        ) from None


class KnownFields(BaseModel):
    """What every GraphER LlamaIndex component does with its keywords: one it does not have
    is refused naming the closest one it does (``feild`` -> ``field``; LlamaIndex's models
    ignore unknown keywords, so a typo would run the default), and a refused value is the
    library's error (a ``GraphERError`` naming the field), not pydantic's wrapper around it.
    ``FORMER_NAMES``: deprecated keywords a subclass still accepts (and renames);
    ``PAYLOAD_LIVE``: fields holding live objects, which a ``from_dict`` / ``from_json`` payload
    may not set (they are passed in code)."""

    FORMER_NAMES: ClassVar[tuple[str, ...]] = ()
    PAYLOAD_LIVE: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> Self:
        """A payload's component: fields holding live objects are refused from it, the rest
        validated as at construction."""
        if isinstance(data, dict):
            given = {k: v for k, v in data.items() if k not in kwargs}
            refuse_live(f"{cls.__name__}.from_dict payload", given, cls.PAYLOAD_LIVE)
        # the component base beside this mixin (BaseComponent) has from_dict
        return cast(Self, super().from_dict(data, **kwargs))  # type: ignore[misc]

    def __init__(self, **data: Any) -> None:
        with library_errors():
            super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_field_names(cls.__name__, data, [*cls.model_fields, *cls.FORMER_NAMES])
        return data


class PostprocessorFields(KnownFields, BaseNodePostprocessor):
    """The fields of :class:`~llama_index_grapher.postprocessor.GraphERPostprocessor`
    (documented there) and their serialisation."""

    proximities: list[Any] = Field(
        default_factory=list,
        description="Extra grapher_core proximities over node metadata (e.g. SharedEntities()).",
    )
    ranker: Any = Field(default="gcs", description='"gcs", "ppr", "gat", "mlp" or a Ranker.')
    alpha: float | None = Field(
        strict=True, default=None, description="Ranker alpha; None = its default."
    )
    top_n: int | None = Field(
        default=None, strict=True, ge=0, description="Nodes to return; None = all."
    )
    use_relationships: bool = Field(
        strict=True,
        default=True,
        description="Add contextual edges from PREVIOUS/NEXT node relationships.",
    )
    relationship_weight: float = Field(
        strict=True, default=1.0, description="Weight of those edges."
    )
    seed_transform: str | None = Field(
        default=None,
        description="How node scores become seeds; None: the core's one rule, as in the "
        "LangChain wrapper: the input order, or the scores for a ranker that reads them "
        "(see grapher_core.ranking.seeds.seed_policy).",
    )
    keep_retrieval_score: bool = Field(
        strict=True,
        default=False,
        description="Keep the retriever's score in metadata['retrieval_score'].",
    )
    explain: bool = Field(
        strict=True,
        default=False,
        description=f"Write the neighbours that lifted a node (id, edge kinds, weight, share) "
        f"to metadata['{EXPLANATION_KEY}'].",
    )
    embed_model: BaseEmbedding | None = Field(
        default=None,
        description="Embeds the query (and nodes without embeddings) when the ranker needs "
        "vectors and the query bundle has none; without it the ranker gets the query text and "
        "uses its own embedder (the GAT/MLP rankers do) or raises.",
    )

    neighbour_source: Any = Field(
        default=None,
        description="Optional docstore / vector store (or any fetch(keys) source) to expand "
        "from: link neighbours (PREVIOUS/NEXT, foreign keys...) of the top expand_seeds nodes "
        "that were not retrieved are fetched, one batched call per hop, and ranked with the "
        f"rest (metadata['{EXPANDED_KEY}'] = True). None: rerank the retrieved nodes only.",
    )
    ego_index: Any = Field(
        default=None,
        description="Optional EgoGraphIndex of the corpus: with a neighbour_source, the members "
        "of the query's nearest ego-graphs join the nodes (GRAG's retrieval) instead of link "
        "expansion.",
    )
    expand_seeds: int = Field(
        strict=True,
        default=DEFAULT_SEEDS,
        description="Expansion: seed nodes (this, the other expand_* fields and "
        "prune_threshold are validated by the core's Expansion).",
    )
    expand_hops: int = Field(
        strict=True, default=DEFAULT_HOPS, description="Expansion: link steps."
    )
    expand_budget: int = Field(
        strict=True, default=DEFAULT_BUDGET, description="Expansion: most nodes added per query."
    )
    prune_threshold: float | None = Field(
        strict=True, default=None, description="Expansion: minimum query cosine of a fetched node."
    )
    expand_max_fetched: int | None = Field(
        strict=True,
        default=DEFAULT_MAX_FETCHED,
        description="Expansion: most nodes fetched from the store per query, over all hops "
        "(the store is asked for no more); None: no bound. Said once when reached.",
    )
    expand_max_seconds: float | None = Field(
        strict=True,
        default=DEFAULT_MAX_SECONDS,
        description="Expansion: no hop starts this many seconds after the query's first fetch "
        "(a running fetch is not interrupted); None: no bound. Said once when reached.",
    )
    expand_max_per_key: int | None = Field(
        strict=True,
        default=DEFAULT_MAX_PER_KEY,
        description="Expansion: a link key matching more nodes than this in one fetch is a hub "
        "(a category page) and skipped, now and in later queries; None: no cap.",
    )

    vector_store: Any = Field(
        default=None,
        description="The index's vector store (index.vector_store): the vectors "
        "of nodes retrieved without their embedding are read from it (SimpleVectorStore, "
        "Chroma) instead of embedded again; it must hold the embed_model's (or the learned "
        "ranker's) vectors.",
    )
    auto_proximities: bool = Field(
        strict=True,
        default=True,
        description="With no proximities given, detect metadata ones (foreign "
        "keys, links, mentions, entities, doc_id + chunk_index) beside the relationships.",
    )
    strict: bool = Field(
        strict=True,
        default=False,
        description="Raise instead of warning once on silent no-ops (no "
        "field, no edges, no vectors, fewer nodes than top_n * 2).",
    )
    score_threshold: float | None = Field(
        strict=True,
        default=None,
        allow_inf_nan=False,
        description="Drop output nodes whose score (the relevance score) is below it, after "
        "ranking; None: keep them all.",
    )
    max_candidates: int | None = Field(
        default=DEFAULT_MAX_CANDIDATES,
        ge=1,
        strict=True,
        description="Rerank at most this many nodes: the first ones in the retriever's order, "
        "the rest dropped with a warning said once; None: no bound.",
    )
    max_chars_per_doc: int | None = Field(
        default=DEFAULT_MAX_CHARS_PER_DOC,
        ge=1,
        strict=True,
        description="Texts longer than this are cut before they are embedded or read by the "
        "ranker; output nodes keep their full text. None: no cut.",
    )

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The fields as a payload: live objects left out, the ranker by its registered name
        and fields, the embedding model as the fields a payload may set on it -- each checked
        as :meth:`from_dict` reads it (what cannot be read back is refused, naming the field)."""
        data = super().to_dict(**kwargs)
        for name in LIVE_FIELDS:
            data.pop(name, None)
        where = f"{type(self).__name__}.to_dict"
        data["ranker"] = ranker_to_payload(self.ranker, where)
        model = self.embed_model
        data["embed_model"] = None if model is None else embed_model_payload(model, where)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> Self:
        """The postprocessor a ``to_dict()`` payload describes. Every class it names resolves
        through the allow-list (:mod:`grapher_core.allowed`) before pydantic sees it: an
        unregistered name is a ``ConfigError`` naming the payload and key, nothing imported."""
        return cls._from_payload(data, "from_dict payload", kwargs)

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> Self:
        try:
            data = json.loads(data_str)
        except (TypeError, ValueError, RecursionError) as error:
            raise ConfigError(f"from_json payload: not a JSON object ({error})") from None
        return cls._from_payload(data, "from_json payload", kwargs)

    @classmethod
    def _from_payload(cls, data: Any, where: str, kwargs: dict[str, Any]) -> Self:
        """The payload checked field by field before anything is built (unknown keys, live
        objects, the classes it names and their fields), then ``kwargs`` (objects given in
        code) added; a key given in ``kwargs`` is not read from the payload at all."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected an object, got {type(data).__name__}")
        data = {k: v for k, v in data.items() if k not in kwargs}  # given in code: not read
        data.pop("class_name", None)
        try:
            check_field_names(cls.__name__, data, cls.model_fields)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
        refuse_live(where, data, LIVE_FIELDS)
        if "ranker" in data:
            data["ranker"] = ranker_from_payload(data["ranker"], where)
        if "proximities" in data and data["proximities"] is not None:
            data["proximities"] = proximities_from_dicts(data["proximities"], where)
        if data.get("embed_model") is not None:
            data["embed_model"] = load_embed_model(data["embed_model"], where)
        return cast(Self, built(cls, where, {**data, **kwargs}))

    @field_serializer("proximities")
    def _serialise_proximities(self, proximities: list[Any]) -> list[Any]:
        """Each proximity with its class, so ``from_dict(to_dict())`` rebuilds it."""
        return [proximity_to_dict(p) for p in proximities]

    @field_validator("proximities", mode="before")
    @classmethod
    def _load_proximities(cls, value: Any) -> Any:
        if isinstance(value, list):
            return proximities_from_dicts(value, cls.__name__)
        return value

    @field_serializer("embed_model")
    def _serialise_embed_model(self, model: BaseEmbedding | None) -> dict[str, Any] | None:
        """The model's own ``to_dict()`` (all its fields and its ``class_name``), not the
        ``BaseEmbedding`` fields alone, so ``from_dict(to_dict())`` rebuilds the same model."""
        return None if model is None else model.to_dict()

    @field_validator("embed_model", mode="before")
    @classmethod
    def _load_embed_model(cls, value: Any) -> Any:
        return load_embed_model(value, cls.__name__) if isinstance(value, dict) else value
