"""What a LlamaIndex payload may set: per embedding class only the listed fields (never
``trust_remote_code``, a local model folder or client keywords), no live objects, and ``to_dict``
writes only what ``from_dict`` reads back. A field planted outside a class's schema is refused."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from llama_index.core.embeddings import MockEmbedding

from grapher_core.allowed import _unregister, register_embedding
from grapher_core.errors import ConfigError
from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor
from llama_index_grapher.embeddings import (
    EMBEDDING_FIELDS,
    check_embed_payload,
    embed_model_payload,
    load_embed_model,
)
from llama_index_grapher.fields import LIVE_FIELDS

NEVER = ["trust_remote_code", "model_kwargs", "device", "api_key", "api_base", "callback_manager"]


@pytest.mark.parametrize("name", sorted(EMBEDDING_FIELDS))
@pytest.mark.parametrize("field", NEVER)
def test_no_embedding_class_takes_code_or_client_settings_from_a_payload(
    name: str, field: str
) -> None:
    assert field not in EMBEDDING_FIELDS[name]
    with pytest.raises(ConfigError, match=rf"key 'embed_model\.{field}'.*build the model in code"):
        check_embed_payload({"class_name": name, field: True})


@pytest.mark.parametrize("path", ["/tmp", "./model", "../model", "~/model", "a/b/c", "C:\\m"])
def test_a_huggingface_payload_names_a_hub_id_never_a_path(path: str) -> None:
    with pytest.raises(ConfigError, match=r"embed_model\.model_name"):
        check_embed_payload({"class_name": "HuggingFaceEmbedding", "model_name": path})


def test_a_payload_builds_the_listed_fields_only() -> None:
    model = load_embed_model({"class_name": "MockEmbedding", "embed_dim": 4, "model_name": "m"})
    assert isinstance(model, MockEmbedding) and model.embed_dim == 4
    with pytest.raises(ConfigError, match=r"embed_model\.embed_dim"):
        load_embed_model({"class_name": "MockEmbedding", "embed_dim": 10**400})


def test_a_planted_field_outside_the_schema_is_refused() -> None:
    """A user's class registered with a schema that leaves a field out: a payload setting
    that field is refused, though the class itself would take it."""

    class Planted(MockEmbedding):
        @classmethod
        def class_name(cls) -> str:
            return "PlantedEmbedding"

    register_embedding(
        Planted, fields={"embed_dim": EMBEDDING_FIELDS["MockEmbedding"]["embed_dim"]}
    )
    try:
        assert isinstance(
            load_embed_model({"class_name": "PlantedEmbedding", "embed_dim": 2}), Planted
        )
        with pytest.raises(ConfigError, match=r"embed_model\.model_name"):
            load_embed_model({"class_name": "PlantedEmbedding", "embed_dim": 2, "model_name": "x"})
        model = Planted(embed_dim=2, model_name="not in the schema")
        with pytest.raises(ConfigError, match=r"embed_model\.model_name"):
            embed_model_payload(model)  # to_dict refuses what from_dict would refuse
    finally:
        _unregister("embedding", "PlantedEmbedding")


def test_a_class_registered_without_fields_takes_the_common_ones_only() -> None:
    class Bare(MockEmbedding):
        @classmethod
        def class_name(cls) -> str:
            return "BareEmbedding"

    register_embedding(Bare)
    try:
        check_embed_payload({"class_name": "BareEmbedding", "model_name": "x"})
        with pytest.raises(ConfigError, match=r"embed_model\.embed_dim"):
            check_embed_payload({"class_name": "BareEmbedding", "embed_dim": 3})
    finally:
        _unregister("embedding", "BareEmbedding")


@pytest.mark.parametrize(
    "model", [lambda: GraphERLlamaEmbedding(embed_batch_size=8), lambda: MockEmbedding(embed_dim=3)]
)
def test_what_to_dict_writes_for_a_model_reads_back(model: Any) -> None:
    given = model()
    data = embed_model_payload(given)
    assert type(load_embed_model(data)) is type(given)
    assert embed_model_payload(load_embed_model(data)) == data


@pytest.mark.parametrize("field", LIVE_FIELDS)
def test_a_live_field_is_never_written_and_never_read(field: str) -> None:
    assert field not in GraphERPostprocessor().to_dict()
    with pytest.raises(ConfigError, match=rf"key '{field}'.*from_dict\(data, {field}=\.\.\.\)"):
        GraphERPostprocessor.from_dict({field: "os:system"})


def test_a_key_given_in_code_is_not_read_from_the_payload() -> None:
    payload = {"embed_model": {"class_name": "os:system"}, "vector_store": "os:system"}
    model = MockEmbedding(embed_dim=2)
    post = GraphERPostprocessor.from_dict(payload, embed_model=model, vector_store=None)
    assert post.embed_model is model and post.vector_store is None


def test_a_type_error_in_a_payload_names_the_payload_and_key() -> None:
    with pytest.raises(ConfigError, match=r"from_json payload: key 'top_n'"):
        GraphERPostprocessor.from_json('{"top_n": "5"}')


@pytest.mark.parametrize("value", ["os:system", {"class_name": "SpacyEntityExtractor"}, 3])
def test_an_extractor_payload_names_no_extractor_object(value: Any) -> None:
    from llama_index_grapher import GraphEREntityExtractor

    with pytest.raises(ConfigError, match=r"key 'extractor'.*from_dict\(data, extractor=\.\.\.\)"):
        GraphEREntityExtractor.from_dict({"extractor": value})
    again = GraphEREntityExtractor.from_dict(GraphEREntityExtractor(field="ents").to_dict())
    assert again.field == "ents" and again.extractor is None
