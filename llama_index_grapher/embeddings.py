"""A LlamaIndex embedding model over the core's embedders (default: the packaged MiniLM).

The LlamaIndex twin of ``langchain_grapher.GraphEREmbeddings``: offline, no download, and the
model the shipped GAT/MLP checkpoints were trained with, so a ``VectorStoreIndex`` built with
it holds vectors the learned rankers can reuse (``GraphERPostprocessor(vector_store=...)``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings.loading import RECOGNIZED_EMBEDDINGS

from grapher_core.allowed import Lazy, fields_of, register, register_embedding, resolve
from grapher_core.embeddings import Embedder, default_embedder
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.utils.callsite import off_loop
from grapher_core.utils.schema import Spec, check_field_names, check_values, shown

__all__ = [
    "EMBEDDING_FIELDS",
    "GraphERLlamaEmbedding",
    "check_embed_payload",
    "embed_model_payload",
    "load_embed_model",
]

MAX_BATCH = 10_000
"""The largest ``embed_batch_size`` a payload may set."""
MAX_DIM = 65_536
"""The largest vector size a payload may set."""
MAX_LENGTH = 131_072
"""The largest ``max_length`` (tokens) a payload may set."""


class GraphERLlamaEmbedding(BaseEmbedding):
    """``BaseEmbedding`` backed by a :class:`grapher_core.embeddings.Embedder`.

    >>> index = VectorStoreIndex(nodes, embed_model=GraphERLlamaEmbedding())

    Batches of ``embed_batch_size`` texts (default 64, MiniLM's sweet spot on a CPU) go to the
    model in one call, sync and async alike; the async methods run the model in a worker
    thread, so an event loop is never blocked by it.
    """

    _embedder: Any = PrivateAttr(default=None)

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        check_field_names(type(self).__name__, kwargs, ["embedder", *type(self).model_fields])
        kwargs.setdefault(
            "model_name",
            "grapher-minilm"
            if embedder is None
            else str(getattr(embedder, "name", type(embedder).__name__)),
        )
        kwargs.setdefault("embed_batch_size", 64)
        super().__init__(**kwargs)
        self._embedder = embedder if embedder is not None else default_embedder()

    @classmethod
    def class_name(cls) -> str:
        return "GraphERLlamaEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The core embedder (shared with the learned rankers when it is the default)."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return np.asarray(self._embedder.embed_query(query), dtype=np.float64).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return np.asarray(self._embedder.embed_documents(list(texts)), dtype=np.float64).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await off_loop(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        """One model call per batch (LlamaIndex's default makes one per text), off the loop."""
        return await off_loop(self._get_text_embeddings, list(texts))


# The embedding classes a ``to_dict`` payload may name (the allow-list of grapher_core.allowed)
# and what it may set on each (grapher_core.utils.schema): LlamaIndex's own recognised ones,
# ours, and the common integration packages, imported only when a payload names them. Others:
# ``grapher_core.register_embedding(MyEmbedding, fields={...})``. A payload never sets what
# makes a class run code or reach elsewhere (trust_remote_code, a local model folder, model or
# client keyword arguments, an API base URL or key, a device): build such a model in code.
BUILD_IN_CODE = (
    "build the model in code and pass it: GraphERPostprocessor(embed_model=...) or "
    "GraphERPostprocessor.from_dict(data, embed_model=...)"
)
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def _hub_id_reason(value: str) -> str | None:
    """Why ``value`` is not a model hub id (``org/name``) a payload may name: a path, or a
    name that is a folder here, could hold code or weights nobody vetted."""
    if not _HUB_ID.fullmatch(value) or ".." in value:
        return "a payload may name a model hub id ('org/name'), never a path"
    if Path(value).expanduser().exists():
        return f"{value!r} is a local path; a payload may not load a model from a folder"
    return None


def _default_cache_reason(value: str) -> str | None:
    """``cache_folder`` only as LlamaIndex's own default (what ``to_dict`` writes)."""
    from llama_index.core.utils import get_cache_dir

    if value == get_cache_dir():
        return None
    return "a payload may not point a model at another folder"


COMMON_FIELDS: dict[str, Spec] = {
    "model_name": Spec("str", nonblank=True),
    "embed_batch_size": Spec("int", low=1, high=MAX_BATCH),
    "num_workers": Spec("none"),
    "embeddings_cache": Spec("none"),
}
"""What a payload may set on any embedding class (LlamaIndex's ``BaseEmbedding`` fields a
payload can hold as data); a class registered without ``fields`` accepts these only."""
EMBEDDING_FIELDS: dict[str, dict[str, Spec]] = {
    "GraphERLlamaEmbedding": dict(COMMON_FIELDS),
    "MockEmbedding": {**COMMON_FIELDS, "embed_dim": Spec("int", low=1, high=MAX_DIM)},
    "HuggingFaceEmbedding": {
        **COMMON_FIELDS,
        "model_name": Spec("str", rule=_hub_id_reason),
        "max_length": Spec("int", low=1, high=MAX_LENGTH),
        "normalize": Spec("bool"),
        "query_instruction": Spec("str", optional=True),
        "text_instruction": Spec("str", optional=True),
        "cache_folder": Spec("str", optional=True, rule=_default_cache_reason),
        "show_progress_bar": Spec("bool"),
    },
    "OpenAIEmbedding": {
        **COMMON_FIELDS,
        "model": Spec("str", nonblank=True),
        "mode": Spec("str", nonblank=True),
        "dimensions": Spec("int", optional=True, low=1, high=MAX_DIM),
        "max_retries": Spec("int", low=0, high=10),
        "timeout": Spec("float", low=0.0, high=600.0, open_low=True),
    },
    "OllamaEmbedding": {
        **COMMON_FIELDS,
        "keep_alive": Spec("str", optional=True),
    },
}
"""What a payload may set, per embedding class (docs/reliability.md lists them)."""

register_embedding(GraphERLlamaEmbedding, fields=EMBEDDING_FIELDS["GraphERLlamaEmbedding"])
for _name, _cls in RECOGNIZED_EMBEDDINGS.items():
    register("embedding", _name, _cls, fields=EMBEDDING_FIELDS.get(_name))
for _name, _module in (
    ("HuggingFaceEmbedding", "llama_index.embeddings.huggingface"),
    ("OpenAIEmbedding", "llama_index.embeddings.openai"),
    ("OllamaEmbedding", "llama_index.embeddings.ollama"),
):
    register(
        "embedding",
        _name,
        Lazy(_module, _name, extra="llamaindex"),
        fields=EMBEDDING_FIELDS[_name],
    )


def embed_model_fields(name: str) -> Mapping[str, Spec]:
    """What a payload may set on the embedding class registered as ``name``."""
    return fields_of("embedding", name) or COMMON_FIELDS


def check_embed_payload(data: Any, where: str = "payload") -> tuple[str, dict[str, Any]]:
    """The class name and fields of an ``embed_model`` payload, checked before anything is
    imported or built: the name through the allow-list, every field against what a payload
    may set on that class (:data:`EMBEDDING_FIELDS`); anything else is refused naming the
    field, with the fix (build the model in code and pass it)."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{where}: key 'embed_model': expected an object, got {type(data).__name__}"
        )
    name = data.get("class_name")
    try:
        resolve("embedding", name, where=where, key="embed_model.class_name", load=False)
    except ConfigError as error:
        raise ConfigError(f"{error}; or {BUILD_IN_CODE}") from None
    fields = {k: v for k, v in data.items() if k != "class_name"}
    try:
        checked = check_values(
            where, fields, embed_model_fields(str(name)), key="embed_model", owner=str(name)
        )
    except ConfigError as error:
        raise ConfigError(f"{error}; {BUILD_IN_CODE}") from None
    return str(name), checked


def load_embed_model(data: Mapping[str, Any], where: str = "payload") -> BaseEmbedding:
    """An embedding model from its ``to_dict()``: the class is the one registered under its
    ``class_name`` (nothing else is imported or looked up), given only the fields a payload
    may set on it (:func:`check_embed_payload`), checked before the class is imported."""
    name, fields = check_embed_payload(data, where)
    kind = resolve("embedding", name, where=where, key="embed_model.class_name")
    if not (isinstance(kind, type) and issubclass(kind, BaseEmbedding)):
        raise ConfigError(f"{where}: key 'embed_model.class_name': {kind!r} is not a BaseEmbedding")
    try:
        return kind(**fields)
    except GraphERError:
        raise
    except Exception as error:  # the model's own loading failed: say where it came from
        raise ConfigError(
            f"{where}: key 'embed_model': {name} could not be built from the payload "
            f"({type(error).__name__}: {shown(error, 200)}); {BUILD_IN_CODE}"
        ) from error


def embed_model_payload(model: BaseEmbedding, where: str = "to_dict") -> dict[str, Any]:
    """What ``to_dict`` writes for ``model``: its own ``to_dict()`` with unset (null) fields
    outside the schema left out, checked as :func:`load_embed_model` will read it, so a
    payload that is written can be read back; a field that could not be is refused here,
    naming it."""
    written = model.to_dict()
    schema = embed_model_fields(str(written.get("class_name")))
    data = {
        key: value
        for key, value in written.items()
        if value is not None or key == "class_name" or key in schema
    }
    check_embed_payload(data, where)
    return data
