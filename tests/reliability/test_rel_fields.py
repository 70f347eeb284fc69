"""Wrapper fields are strict: a boolean is not a number and a string is not a boolean, at every
door (constructor, assignment, ``from_config``), so ``expand_hops=True`` can no longer become
one hop and ``explain="no"`` can no longer mean yes. The core's own validators then check the
range, the same functions whatever the door."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from langchain_grapher import GraphERReranker, GraphERRetriever
from langchain_grapher.transformers import (
    ChunkLinkTransformer,
    EntityTransformer,
    LinkTransformer,
    MentionTransformer,
)
from llama_index_grapher import GraphERPostprocessor
from llama_index_grapher.extractors import GraphERMentionExtractor

MODELS: list[type] = [
    GraphERReranker,
    GraphERPostprocessor,
    ChunkLinkTransformer,
    EntityTransformer,
    LinkTransformer,
    MentionTransformer,
    GraphERMentionExtractor,
]


def _scalar_fields(model: type) -> list[tuple[str, type]]:
    """(field, type) for each field typed int, float or bool (optionally ``| None``)."""
    ours = {
        name
        for cls in model.__mro__
        if cls.__module__.split(".")[0] in ("langchain_grapher", "llama_index_grapher")
        for name in getattr(cls, "__annotations__", {})
    }
    found = []
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        if name not in ours:
            continue  # the framework's own fields follow the framework's rules
        annotation = info.annotation
        args = (
            set(typing.get_args(annotation))
            if isinstance(annotation, types.UnionType)
            or typing.get_origin(annotation) is typing.Union
            else {annotation}
        ) - {type(None)}
        if len(args) == 1 and next(iter(args)) in (int, float, bool):
            found.append((name, next(iter(args))))
    return found


CASES = [(m, name, kind) for m in MODELS for name, kind in _scalar_fields(m)]
WRONG: dict[type, list[Any]] = {
    int: [True, False, "3", 2.0],
    float: [True, "0.5"],
    bool: ["yes", "no", 1, 0],
}


def test_the_scan_finds_the_fields_that_were_lax() -> None:
    names = {(m.__name__, n) for m, n, _ in CASES}
    for expected in [
        ("GraphERReranker", "expand_hops"),
        ("GraphERReranker", "alpha"),
        ("GraphERReranker", "explain"),
        ("GraphERPostprocessor", "expand_hops"),
        ("GraphERPostprocessor", "relationship_weight"),
        ("GraphERPostprocessor", "keep_retrieval_score"),
    ]:
        assert expected in names


@pytest.mark.parametrize(
    ("model", "name", "kind"), CASES, ids=[f"{m.__name__}.{n}" for m, n, _ in CASES]
)
def test_a_mistyped_scalar_is_refused_at_construction_and_assignment(
    model: type, name: str, kind: type
) -> None:
    instance = model()
    before = getattr(instance, name)
    for value in WRONG[kind]:
        with pytest.raises(ValueError):  # pydantic's ValidationError names the field
            model(**{name: value})
        with pytest.raises(ValueError):
            setattr(instance, name, value)
        assert getattr(instance, name) == before  # a refused assignment changes nothing


def test_expand_hops_true_is_refused_by_the_retriever_and_from_config(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expand_hops"):
        GraphERRetriever(retriever=None, reranker=GraphERReranker(expand_hops=True))  # type: ignore[arg-type]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"grapher_config": 1, "ranker": "gcs"}), encoding="utf-8")
    for loader in (GraphERReranker.from_config, GraphERPostprocessor.from_config):
        with pytest.raises(ValueError, match="expand_hops"):
            loader(path, expand_hops=True)


@pytest.mark.parametrize("weight", [float("nan"), -1.0, 0.0, float("inf"), True])
def test_a_bad_proximity_weight_is_refused_at_every_door(weight: Any, tmp_path: Path) -> None:
    """One validator (edges/checks.check_weight) behind the constructor, a config file and a
    ``to_dict`` payload: no door builds ``ForeignKeys(weight=nan)``."""
    from grapher_core import ForeignKeys, GraphReranker
    from grapher_core.errors import ConfigError, GraphERError

    with pytest.raises(GraphERError, match="weight"):
        ForeignKeys(weight=weight)
    path = tmp_path / "c.json"
    item = {"class": "ForeignKeys", "weight": weight}
    path.write_text(
        json.dumps({"grapher_config": 1, "proximities": [item]}, allow_nan=True), encoding="utf-8"
    )
    for loader in (GraphReranker.from_config, GraphERReranker.from_config):
        with pytest.raises(ConfigError, match=r"proximities\[0\]"):
            loader(path)
    with pytest.raises(ConfigError, match=r"proximities\[0\]"):
        GraphERPostprocessor.from_dict({"proximities": [item]})
