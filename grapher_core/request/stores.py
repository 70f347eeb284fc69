"""What a vector store keeps and gives back, and the registry that finds a store's adapter.

Each wrapper has one adapter per store (read vectors by id in one batched call; declare what the
store keeps). This module holds the framework-free part both wrappers share: the declaration
(:class:`StoreCapabilities`), the check of a metadata dict against it (:func:`unkept_fields`),
and :class:`StoreRegistry`, which picks an adapter by the *names* of the store's classes (its
``__mro__``), so no store package is imported to ask -- a user without Qdrant never imports it.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from grapher_core.diagnostics import Diagnostics
from grapher_core.errors import InputTypeError
from grapher_core.metadata import encode_list

__all__ = [
    "StoreCapabilities",
    "StoreRegistry",
    "kept_metadata",
    "pgvector_from_send",
    "qdrant_dense",
    "qdrant_point_id",
    "type_names",
    "unkept_fields",
]

A = TypeVar("A")


@dataclass(frozen=True)
class StoreCapabilities:
    """What one store keeps of GraphER's metadata and gives back.

    ``vectors``: reads stored vectors by id in one call; ``lists``: keeps non-empty flat lists
    of scalars as lists; ``empty_lists``: keeps ``[]``; ``nested``: keeps dicts and lists of
    lists; ``filters``: its search takes a metadata filter; ``uuid_ids``: accepts only UUIDs
    (or integers) as ids, so GraphER's ids (``"shop.orders"``) must be UUIDs there too."""

    store: str
    vectors: bool
    lists: bool = True
    empty_lists: bool = True
    nested: bool = True
    filters: bool = True
    uuid_ids: bool = False

    @property
    def list_format(self) -> str:
        """The ``list_format`` GraphER's writers use for this store: ``"list"`` where lists
        are kept (empty ones are left out and nested ones JSON-encoded where they are not),
        ``"json"`` otherwise."""
        return "list" if self.lists else "json"


def unkept_fields(capabilities: StoreCapabilities, metadata: Mapping[str, Any]) -> dict[str, str]:
    """The fields of ``metadata`` the store would refuse or change, each with the reason."""
    out: dict[str, str] = {}
    for key, value in metadata.items():
        if isinstance(value, Mapping):
            if not capabilities.nested:
                out[key] = "a dict (the store keeps only flat values)"
        elif isinstance(value, (list, tuple)):
            if not capabilities.lists:
                out[key] = "a list (the store keeps only str, int, float, None)"
            elif not value and not capabilities.empty_lists:
                out[key] = "an empty list (the store refuses empty lists)"
            elif not capabilities.nested and any(
                isinstance(v, (list, tuple, Mapping)) for v in value
            ):
                out[key] = "a list of lists or dicts (the store keeps flat lists only)"
    return out


def type_names(store: Any) -> list[str]:
    """``module.qualname`` of the store's class and of each base, most specific first."""
    return [f"{k.__module__}.{k.__qualname__}" for k in type(store).__mro__]


class StoreRegistry(Generic[A]):
    """Adapters by store class name; a subclass of a known store gets its base's adapter.

    ``framework`` and ``how`` go into the one warning said per unknown store type: the
    vectors are not read back from it, and how to register an adapter."""

    def __init__(
        self, framework: str, known: Mapping[str, Callable[[Any], A | None]], how: str
    ) -> None:
        self.framework = framework
        self.how = how
        self._factories: dict[str, Callable[[Any], A | None]] = dict(known)
        self._lock = threading.Lock()
        self._held: dict[int, tuple[Any, A | None]] = {}
        self.diagnostics = Diagnostics(owner=f"GraphER ({framework} stores)")

    def register(self, store_type: str | type, factory: Callable[[Any], A | None]) -> None:
        """Use ``factory(store)`` (``None``: no vectors from it) as the adapter of
        ``store_type`` (a class, or its ``"module.QualName"``, so the store's package need not
        be imported) and of its subclasses."""
        if isinstance(store_type, type):
            store_type = f"{store_type.__module__}.{store_type.__qualname__}"
        if not isinstance(store_type, str) or "." not in store_type:
            raise InputTypeError(
                f"register_store_adapter: store_type must be a class or its 'module.QualName', "
                f"got {store_type!r}"
            )
        if not callable(factory):
            raise InputTypeError(
                f"register_store_adapter: factory must be callable (store -> adapter), "
                f"got {factory!r}"
            )
        with self._lock:
            self._factories[store_type] = factory

    def factory(self, store: Any) -> Callable[[Any], A | None] | None:
        """The factory registered for the store's class or its nearest base, else ``None``."""
        with self._lock:
            factories = dict(self._factories)
        for name in type_names(store):
            if name in factories:
                return factories[name]
        return None

    def held_adapter(self, store: Any) -> A | None:
        """:meth:`adapter`, made once per store object and kept (for the last 64 stores): an
        adapter may keep a map between calls (FAISS rows, an index's node ids)."""
        with self._lock:
            held = self._held.get(id(store))
        if held is not None and held[0] is store:
            return held[1]
        adapter = self.adapter(store)
        with self._lock:
            if len(self._held) >= 64:
                self._held.clear()
            self._held[id(store)] = (store, adapter)
        return adapter

    def kept(
        self, store: Any, capabilities: StoreCapabilities, metadata: Mapping[str, Any]
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """:func:`kept_metadata`, each field written in another shape said once per store,
        naming the field and the store (what both wrappers' ``store_ready`` write)."""
        kept, changed = kept_metadata(capabilities, metadata)
        for field in changed:
            self.diagnostics.bound(
                ("rewritten", id(store), field),
                f"{capabilities.store} cannot keep metadata field {field!r} as given "
                f"(e.g. {metadata[field]!r:.80}): it is written as "
                f"{kept.get(field, '(left out: empty)')!r:.80}, which GraphER reads back "
                "the same",
            )
        return kept, changed

    def adapter(self, store: Any) -> A | None:
        """The store's adapter, or ``None`` for an unknown store (said once per type)."""
        factory = self.factory(store)
        if factory is not None:
            return factory(store)
        name = type_names(store)[0]
        self.diagnostics.bound(
            ("unknown-store", name),
            f"no store adapter for {name}: the vectors it holds are not read back, so each "
            f"new pool's texts are embedded again (seconds per query on a CPU). {self.how}",
        )
        return None


def kept_metadata(
    capabilities: StoreCapabilities, metadata: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``metadata`` in shapes the store keeps, and the fields written in another shape.

    Lists go through :func:`~grapher_core.metadata.encode_list` in the store's
    :attr:`~StoreCapabilities.list_format` (an empty one left out where the store refuses it, a
    nested one as JSON where it keeps flat lists only); a dict the store cannot keep becomes a
    JSON string. The readers (:func:`~grapher_core.metadata.read_list`) accept every shape
    written here. The given mapping is not modified."""
    out: dict[str, Any] = {}
    changed: list[str] = []
    for key, value in metadata.items():
        kept = value
        if key in unkept_fields(capabilities, {key: value}):
            if isinstance(value, Mapping):
                kept = json.dumps(value, ensure_ascii=False)
            else:
                kept = encode_list(value, capabilities.list_format)
            changed.append(key)
        if kept is not None:
            out[key] = kept
    return out, tuple(changed)


def pgvector_from_send(data: Any, half: bool = False) -> np.ndarray | None:
    """A pgvector value from its binary form (``vector_send`` / ``halfvec_send``: int16 size,
    int16 unused, then big-endian floats). Reading vectors this way skips the text form, which
    the drivers parse float by float (about ten times slower for 200 vectors of 384)."""
    if data is None:
        return None
    raw = bytes(data)
    return np.frombuffer(raw, dtype=">f2" if half else ">f4", offset=4).astype(np.float32)


def qdrant_point_id(value: str) -> bool:
    """Whether ``value`` can be a Qdrant point id (a UUID or an unsigned integer): Qdrant
    answers another id with an error, not a miss, so the adapters ask only for these."""
    if value.isdigit():
        return True
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def qdrant_dense(vector: Any, name: str | None) -> Any:
    """A Qdrant point's dense vector: the vector itself, or the one named ``name`` of several."""
    if isinstance(vector, dict):
        return vector.get(name or "")
    return vector
