"""What a file or payload may *set* is declared per class and checked before anything is built
(docs/reliability.md, "Trust boundaries"): a proximity field of the wrong type, an unbounded
iteration, an embedding payload that would run code, a live object in a payload, a misspelt
keyword and a name registered over a built-in are each a ``GraphERError`` naming the file (or
payload), the key and the fix, through every door they reach.

Doors: the class's constructor, a config file through the core's ``GraphReranker.from_config``
and both wrappers' ``from_config``, and the LlamaIndex postprocessor's ``from_dict`` /
``from_json``. (The CLI reads no config: ``grapher eval --write-config`` writes one, checked by
the same loader.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_extras import needs

import grapher_core.edges as edges
from grapher_core import GCSRanker, GraphReranker, PPRRanker, register_proximity, register_ranker
from grapher_core.allowed import _unregister, register_embedding, resolve
from grapher_core.edges import ForeignKeys
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.ranking.registry import make_ranker

# -- proximity fields: types and bounds ----------------------------------------------------------
PROXIMITY_CASES: list[tuple[str, str, str, Any]] = [
    ("fk-field-list", "ForeignKeys", "field", ["x"]),
    ("fk-target-ints", "ForeignKeys", "target_field", [1, 2]),
    ("fk-field-dict", "ForeignKeys", "field", {"a": 1}),
    ("fk-symmetric-no", "ForeignKeys", "symmetric", "no"),
    ("knn-weighted-false", "SemanticKNN", "weighted", "false"),
    ("fk-kind-evil", "ForeignKeys", "kind", "evil"),
    ("fk-kind-7", "ForeignKeys", "kind", 7),
    ("knn-scope-3", "SemanticKNN", "scope_field", 3),
    ("chunks-doc-5", "AdjacentChunks", "doc_field", 5),
    ("fk-weight-401-digits", "ForeignKeys", "weight", 10**400),
    ("knn-k-401-digits", "SemanticKNN", "k", 10**400),
    ("links-heading-ints", "ChunkLinks", "heading_fields", [1]),
    ("entities-holders-str", "SharedEntities", "max_holders", "3"),
    ("chunks-gap-bool", "AdjacentChunks", "max_gap", True),
]


def _config(tmp_path: Path, **keys: Any) -> Path:
    path = tmp_path / "untrusted.json"
    path.write_text(json.dumps({"grapher_config": 1, **keys}), encoding="utf-8")
    return path


def _core_from_config(path: Path) -> Any:
    return GraphReranker.from_config(path)


def _langchain_from_config(path: Path) -> Any:
    needs("langchain")
    from langchain_grapher import GraphERReranker

    return GraphERReranker.from_config(path)


def _llamaindex_from_config(path: Path) -> Any:
    needs("llamaindex")
    from llama_index_grapher import GraphERPostprocessor

    return GraphERPostprocessor.from_config(path)


def _from_dict(payload: dict[str, Any]) -> Any:
    needs("llamaindex")
    from llama_index_grapher import GraphERPostprocessor

    return GraphERPostprocessor.from_dict(payload)


def _from_json(payload: dict[str, Any]) -> Any:
    needs("llamaindex")
    from llama_index_grapher import GraphERPostprocessor

    return GraphERPostprocessor.from_json(json.dumps(payload))


FILE_DOORS: dict[str, Callable[[Path], Any]] = {
    "core from_config": _core_from_config,
    "langchain from_config": _langchain_from_config,
    "llamaindex from_config": _llamaindex_from_config,
}
PAYLOAD_DOORS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "llamaindex from_dict": _from_dict,
    "llamaindex from_json": _from_json,
}


def _refused(call: Callable[[], Any]) -> GraphERError:
    with pytest.raises(GraphERError) as caught:
        call()
    message = str(caught.value)
    assert "OverflowError" not in message and "unhashable" not in message, message
    return caught.value


CASE_IDS = [case[0] for case in PROXIMITY_CASES]


@pytest.mark.parametrize(("case", "cls", "field", "value"), PROXIMITY_CASES, ids=CASE_IDS)
def test_a_proximity_constructor_refuses_the_field(
    case: str, cls: str, field: str, value: Any
) -> None:
    error = _refused(lambda: getattr(edges, cls)(**{field: value}))
    assert f"{cls}.{field}" in str(error)


@pytest.mark.parametrize("door", sorted(FILE_DOORS))
@pytest.mark.parametrize(("case", "cls", "field", "value"), PROXIMITY_CASES, ids=CASE_IDS)
def test_a_config_file_setting_a_bad_proximity_field_is_refused(
    door: str, case: str, cls: str, field: str, value: Any, tmp_path: Path
) -> None:
    path = _config(tmp_path, proximities=[{"class": cls, field: value}])
    error = _refused(lambda: FILE_DOORS[door](path))
    assert isinstance(error, ConfigError)
    assert str(path) in str(error) and f"proximities[0].{field}" in str(error), str(error)


@pytest.mark.parametrize("door", sorted(PAYLOAD_DOORS))
@pytest.mark.parametrize(("case", "cls", "field", "value"), PROXIMITY_CASES, ids=CASE_IDS)
def test_a_payload_setting_a_bad_proximity_field_is_refused(
    door: str, case: str, cls: str, field: str, value: Any
) -> None:
    error = _refused(lambda: PAYLOAD_DOORS[door]({"proximities": [{"class": cls, field: value}]}))
    assert "payload" in str(error) and f"proximities[0].{field}" in str(error), str(error)


# -- ranker options: bounded iteration -----------------------------------------------------------
RUNAWAY = {"method": "iterate", "max_iter": 1_000_000_000, "tol": 1e-300}
RANKER_CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("gcs-runaway", "gcs", RUNAWAY, "max_iter|tol"),
    ("gcs-tiny-tol", "gcs", {"tol": 1e-300}, "tol"),
    ("ppr-runaway", "ppr", {"max_iter": 10**9}, "max_iter"),
    ("gcs-bool-iter", "gcs", {"max_iter": True}, "max_iter"),
    ("gcs-typo", "gcs", {"max_itr": 50}, "max_itr"),
    ("gcs-huge-kind-weight", "gcs", {"kind_weights": {"structural": 10**400}}, "kind_weights"),
    ("adjust-kind-evil", "qa-adjust", {"kind": "evil"}, "kind"),
]
RANKER_IDS = [case[0] for case in RANKER_CASES]


def _names_one_of(keys: str, message: str, prefix: str = "") -> bool:
    """Whether ``message`` names one of the ``|``-separated keys (a runaway config has two
    faults; whichever is checked first is named)."""
    return any(f"{prefix}{key}" in message for key in keys.split("|"))


@pytest.mark.parametrize(("case", "name", "options", "key"), RANKER_CASES, ids=RANKER_IDS)
def test_a_ranker_built_in_code_refuses_the_option(
    case: str, name: str, options: dict[str, Any], key: str
) -> None:
    assert _names_one_of(key, str(_refused(lambda: make_ranker(name, **options))))
    assert _names_one_of(key, str(_refused(lambda: GraphReranker(ranker=name, **options))))


@pytest.mark.parametrize("door", sorted(FILE_DOORS))
@pytest.mark.parametrize(("case", "name", "options", "key"), RANKER_CASES, ids=RANKER_IDS)
def test_a_config_file_with_unbounded_ranker_options_is_refused_at_load(
    door: str, case: str, name: str, options: dict[str, Any], key: str, tmp_path: Path
) -> None:
    path = _config(tmp_path, ranker=name, ranker_options=options)
    error = _refused(lambda: FILE_DOORS[door](path))
    assert str(path) in str(error), str(error)
    assert _names_one_of(key, str(error), "ranker_options."), str(error)


@pytest.mark.parametrize("door", sorted(PAYLOAD_DOORS))
@pytest.mark.parametrize(("case", "name", "options", "key"), RANKER_CASES, ids=RANKER_IDS)
def test_a_payload_ranker_object_is_checked_against_its_fields(
    door: str, case: str, name: str, options: dict[str, Any], key: str
) -> None:
    error = _refused(lambda: PAYLOAD_DOORS[door]({"ranker": {"class": name, **options}}))
    assert _names_one_of(key, str(error), "ranker."), str(error)


def test_the_ranker_classes_refuse_runaway_iteration_directly() -> None:
    for make in (GCSRanker, PPRRanker):
        assert "max_iter" in str(_refused(lambda make=make: make(max_iter=10**9)))
        assert "tol" in str(_refused(lambda make=make: make(tol=1e-300)))


# -- embedding payloads: only the listed fields, never code ---------------------------------------
def _planted_model(tmp_path: Path) -> tuple[Path, Path]:
    """A folder that runs code when loaded with trust_remote_code (its modules.json names a
    module there), and the marker file that code would write."""
    folder = tmp_path / "model"
    folder.mkdir()
    marker = tmp_path / "ran"
    (folder / "modules.json").write_text(
        json.dumps([{"idx": 0, "name": "0", "path": "", "type": "planted_module.Planted"}])
    )
    (folder / "planted_module.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nclass Planted: pass\n"
    )
    return folder, marker


EMBED_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("hf-trust-remote-code", {"trust_remote_code": True}, "trust_remote_code"),
    ("hf-local-folder", {}, "model_name"),
    ("hf-model-kwargs", {"model_kwargs": {"trust_remote_code": True}}, "model_kwargs"),
    ("hf-device", {"device": "cuda"}, "device"),
    ("hf-cache-folder", {"cache_folder": "/tmp"}, "cache_folder"),
    ("hf-batch-401-digits", {"embed_batch_size": 10**400}, "embed_batch_size"),
    (
        "hf-embeddings-cache",
        {"embeddings_cache": {"class_name": "SimpleKVStore"}},
        "embeddings_cache",
    ),
]


def _embed_payload(folder: Path, extra: dict[str, Any], key: str) -> dict[str, Any]:
    """The planted folder as ``model_name`` where that (or code) is the case; a hub id where
    another field is, so that field is the one refused."""
    model = str(folder) if key in ("model_name", "trust_remote_code") else "org/model"
    return {"class_name": "HuggingFaceEmbedding", "model_name": model, **extra}


EMBED_DOORS = ["from_dict", "from_json", "constructor"]


@pytest.mark.parametrize("door", EMBED_DOORS)
@pytest.mark.parametrize(("case", "extra", "key"), EMBED_CASES, ids=[c[0] for c in EMBED_CASES])
def test_an_embedding_payload_sets_only_listed_fields_and_runs_no_code(
    door: str, case: str, extra: dict[str, Any], key: str, tmp_path: Path
) -> None:
    needs("llamaindex")
    from llama_index_grapher import GraphERPostprocessor

    folder, marker = _planted_model(tmp_path)
    embed = _embed_payload(folder, extra, key)
    calls: dict[str, Callable[[], Any]] = {
        "from_dict": lambda: GraphERPostprocessor.from_dict({"embed_model": embed}),
        "from_json": lambda: GraphERPostprocessor.from_json(json.dumps({"embed_model": embed})),
        "constructor": lambda: GraphERPostprocessor(embed_model=embed),
    }
    error = _refused(calls[door])
    assert isinstance(error, ConfigError)
    assert f"embed_model.{key}" in str(error), str(error)
    assert "build the model in code" in str(error)
    assert not marker.exists(), "the payload ran code"


def test_an_embedding_payload_naming_a_hub_id_passes_the_check() -> None:
    needs("llamaindex")
    from llama_index_grapher.embeddings import check_embed_payload

    name, fields = check_embed_payload(
        {"class_name": "HuggingFaceEmbedding", "model_name": "BAAI/bge-small-en", "normalize": True}
    )
    assert name == "HuggingFaceEmbedding" and fields["model_name"] == "BAAI/bge-small-en"


# -- live objects in payloads; to_dict writes only what from_dict reads ---------------------------
LIVE_CASES: list[tuple[str, str, Any]] = [
    ("callback-manager-dict", "callback_manager", {"handlers": []}),
    ("vector-store-name", "vector_store", "os:system"),
    ("vector-store-dict", "vector_store", {"class_name": "SimpleVectorStore"}),
    ("neighbour-source-name", "neighbour_source", "os:system"),
    ("ego-index-dict", "ego_index", {}),
    ("ranker-list", "ranker", ["gcs"]),
]


@pytest.mark.parametrize("door", sorted(PAYLOAD_DOORS))
@pytest.mark.parametrize(("case", "key", "value"), LIVE_CASES, ids=[c[0] for c in LIVE_CASES])
def test_a_payload_cannot_hand_over_a_live_object(
    door: str, case: str, key: str, value: Any
) -> None:
    error = _refused(lambda: PAYLOAD_DOORS[door]({key: value}))
    assert f"'{key}'" in str(error) and "in code" in str(error), str(error)


@pytest.mark.parametrize("value", ["os:system", {"class_name": "OpenAIEntityExtractor"}])
def test_an_extractor_payload_cannot_name_an_extractor(value: Any) -> None:
    needs("llamaindex")
    from llama_index_grapher import GraphEREntityExtractor

    payload = {"extractor": value}
    for call in (
        lambda: GraphEREntityExtractor.from_dict(payload),
        lambda: GraphEREntityExtractor.from_json(json.dumps(payload)),
    ):
        error = _refused(call)
        assert "'extractor'" in str(error) and "in code" in str(error), str(error)


def test_to_dict_leaves_live_objects_out_and_reads_back_what_it_writes() -> None:
    needs("llamaindex")
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.vector_stores import SimpleVectorStore

    from grapher_core import SemanticKNN
    from llama_index_grapher import GraphERPostprocessor

    store = SimpleVectorStore()
    post = GraphERPostprocessor(
        ranker=GCSRanker(max_iter=50, kind_weights={"structural": 2.0}),
        proximities=[SemanticKNN(k=3, scope_field="doc_id")],
        embed_model=MockEmbedding(embed_dim=3),
        vector_store=store,
        top_n=4,
        explain=True,
    )
    data = post.to_dict()
    assert not {"vector_store", "neighbour_source", "ego_index", "callback_manager"} & set(data)
    back = GraphERPostprocessor.from_json(post.to_json())
    assert back.to_dict() == data and back.ranker == post.ranker
    assert GraphERPostprocessor.from_dict(data, vector_store=store).vector_store is store


def test_to_dict_refuses_what_it_could_not_read_back() -> None:
    needs("llamaindex")
    from llama_index_grapher import GraphERPostprocessor

    class Unnamed:
        name = "unnamed"

        def rank(self, graph: Any, seeds: Any, context: Any) -> Any:
            return seeds

    with pytest.raises(ConfigError, match=r"key 'ranker'.*register"):
        GraphERPostprocessor(ranker=Unnamed()).to_dict()


# -- misspelt keywords ---------------------------------------------------------------------------
def _keyword_cases() -> list[tuple[str, str, str, str]]:
    return [
        ("llama_index_grapher", "GraphERLinkExtractor", "feild", "field"),
        ("llama_index_grapher", "GraphEREntityExtractor", "extracter", "extractor"),
        ("llama_index_grapher", "GraphERMentionExtractor", "title_feild", "title_field"),
        ("llama_index_grapher.extractors", "GraphERConceptExtractor", "cach", "cache"),
        ("llama_index_grapher", "GraphERLlamaEmbedding", "embed_batch_sise", "embed_batch_size"),
        ("llama_index_grapher", "GraphERPostprocessor", "top_k", "top_n"),
        ("langchain_grapher", "LinkTransformer", "feild", "field"),
        ("langchain_grapher", "EntityTransformer", "extracter", "extractor"),
        ("langchain_grapher", "MentionTransformer", "title_feild", "title_field"),
        ("langchain_grapher", "ChunkLinkTransformer", "doc_keyz", "doc_keys"),
        ("langchain_grapher", "GraphERReranker", "top_k", "top_n"),
        ("grapher_core", "ForeignKeys", "feild", "field"),
        ("grapher_core", "SemanticKNN", "scope_feild", "scope_field"),
        ("grapher_core", "GCSRanker", "max_itr", "max_iter"),
        ("grapher_core", "GraphReranker", "max_itr", "max_iter"),
    ]


@pytest.mark.parametrize(
    ("module", "name", "typo", "meant"), _keyword_cases(), ids=[c[1] for c in _keyword_cases()]
)
def test_a_misspelt_keyword_is_refused_with_the_closest_name(
    module: str, name: str, typo: str, meant: str
) -> None:
    if module != "grapher_core":
        needs("llamaindex" if module.startswith("llama") else "langchain")
    import importlib

    cls = getattr(importlib.import_module(module), name)
    error = _refused(lambda: cls(**{typo: "refs"}))
    assert isinstance(error, ConfigError)
    assert f"did you mean {meant!r}" in str(error), str(error)


def test_the_retriever_refuses_a_misspelt_keyword() -> None:
    needs("langchain")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphERRetriever

    base = InMemoryVectorStore(DeterministicFakeEmbedding(size=4)).as_retriever()
    error = _refused(lambda: GraphERRetriever(base_retriever=base, fetch_kk=3))
    assert "did you mean 'fetch_k'" in str(error)


# -- register_* over a taken name ----------------------------------------------------------------
@dataclass(frozen=True)
class ImpostorKeys(ForeignKeys):
    """A ForeignKeys look-alike someone registers under the built-in's name."""


def test_register_proximity_does_not_replace_a_built_in() -> None:
    error = _refused(lambda: register_proximity(ImpostorKeys, name="ForeignKeys"))
    assert "replace=True" in str(error)
    assert resolve("proximity", "ForeignKeys") is ForeignKeys


def test_register_ranker_does_not_replace_a_built_in() -> None:
    error = _refused(lambda: register_ranker("gcs", PPRRanker))
    assert "replace=True" in str(error) and "'gcs'" in str(error)
    assert resolve("ranker", "gcs") is GCSRanker
    error = _refused(lambda: register_ranker("GCS", "grapher_core.ranking.base:BaselineRanker"))
    assert resolve("ranker", "gcs") is GCSRanker


def test_register_embedding_does_not_replace_a_built_in() -> None:
    needs("llamaindex")
    from llama_index.core.embeddings import MockEmbedding

    class Impostor(MockEmbedding):
        pass

    _refused(lambda: register_embedding(Impostor, name="MockEmbedding"))
    assert resolve("embedding", "MockEmbedding") is MockEmbedding


def test_replace_true_replaces_and_the_built_in_can_be_put_back() -> None:
    register_ranker("gcs", PPRRanker, replace=True)
    try:
        assert resolve("ranker", "gcs") is PPRRanker
    finally:
        register_ranker("gcs", GCSRanker, replace=True)
    assert resolve("ranker", "gcs") is GCSRanker
    register_proximity(ImpostorKeys, name="ImpostorKeys")
    try:
        register_proximity(ImpostorKeys, name="ImpostorKeys")  # the same class again: no-op
    finally:
        _unregister("proximity", "ImpostorKeys")
