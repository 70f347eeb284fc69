"""The one request path: settings -> engine -> a sans-IO call -> a reranking.

The call is driven here by hand, need by need, as a door would: what it asks for, in which
order, and that the answers -- not the core -- decide the vectors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker, SemanticKNN
from grapher_core.errors import ConfigError, StateError
from grapher_core.expand import ExpandingReranker, Expansion, InMemorySource
from grapher_core.ranking.config import write_config
from grapher_core.request import (
    Call,
    DoorIO,
    Embed,
    Embedded,
    Fetch,
    ReadStored,
    arun_call,
    run_call,
)
from grapher_core.request.engine import Engine, core_of
from grapher_core.request.settings import RerankSettings, engine_for

DIM = 8


def vec(text: str) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, text)))
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


class Model:
    name = "tests/ord-sum"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.stack([vec(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return vec(text)


def pool() -> list[Candidate]:
    return [
        Candidate("a", "alpha", None, {"foreign_keys": ["b"]}),
        Candidate("b", "beta", None, {"foreign_keys": ["a"]}),
        Candidate("c", "gamma", None, {}),
        Candidate("d", "delta", None, {"foreign_keys": ["x"]}),
    ]


def test_a_ranker_without_vectors_asks_for_nothing() -> None:
    call = GraphReranker([ForeignKeys()]).call(pool(), query="q")
    assert call.start() is None and call.done
    assert [r.id for r in call.result().ranked][:2] == ["a", "b"]


def test_needs_come_in_order_and_the_answers_decide_the_vectors() -> None:
    reranker = GraphReranker([ForeignKeys(), SemanticKNN(k=1, threshold=-1.0)])
    call = reranker.call(pool(), query="q", embedder=Model())
    need = call.start()
    assert need == ReadStored(("a", "b", "c", "d"))
    need = call.send([vec("alpha"), None, None, None])  # the store holds one of them
    assert isinstance(need, Embed) and need.texts == ("beta", "gamma", "delta")
    assert need.query == "q"
    assert call.send(Embedded(np.stack([vec(t) for t in need.texts]), vec("q"))) is None
    ranked = call.result().ranked
    assert {r.id for r in ranked} == {"a", "b", "c", "d"}
    again = reranker.call(pool(), query="q", embedder=Model())
    need = again.start()
    assert need == ReadStored(("a", "b", "c", "d"))
    embed = again.send(None)  # no store this time: what was embedded is cached, not what
    assert isinstance(embed, Embed) and embed.texts == ("alpha",)  # the store held


def test_a_call_is_used_once_and_in_order() -> None:
    call = GraphReranker([SemanticKNN()]).call(pool(), query="q")
    with pytest.raises(StateError):
        call.send(None)
    with pytest.raises(StateError):
        call.result()
    call.start()
    with pytest.raises(StateError):
        call.start()
    with pytest.raises(TypeError, match="Embedded"):
        call.send(None)  # ReadStored answered None; then the Embed need gets a wrong type
        call.send("not vectors")


def test_expansion_hops_are_fetch_steps_answered_by_the_door() -> None:
    corpus = [*pool(), Candidate("x", "xi", None, {"foreign_keys": ["d"]})]
    source = InMemorySource(corpus, embeddings=np.stack([vec(c.text) for c in corpus]))
    engine = ExpandingReranker(GraphReranker([ForeignKeys()]), source, Expansion(max_seconds=None))
    call = engine.call([pool()[3], *pool()[:3]], query="q", embedder=Model())
    seen = []
    need = call.start()
    while need is not None:
        seen.append(type(need).__name__)
        need = call.send(DoorIO.of(Model()).answer(need))
    assert "Fetch" in seen and seen[0] == "ReadStored"
    assert any(r.id == "x" and r.expanded for r in call.result().ranked)


def test_the_async_driver_gives_the_sync_result() -> None:
    reranker = GraphReranker([ForeignKeys(), SemanticKNN(k=1, threshold=-1.0)])
    io = DoorIO.of(Model())
    sync = run_call(reranker.call(pool(), query="q", embedder=Model()), io.answer)
    other = asyncio.run(arun_call(reranker.call(pool(), query="q", embedder=Model()), io.aanswer))
    assert [(r.id, r.score) for r in sync.ranked] == [(r.id, r.score) for r in other.ranked]


def test_a_door_without_a_model_uses_the_core_fallback() -> None:
    fallback = Model()
    answer = DoorIO().answer(Embed(("x", "y"), "q", fallback))
    assert answer.vectors.shape == (2, DIM) and answer.query.shape == (DIM,)
    assert DoorIO().answer(Embed(("x",), None, None)) == Embedded()
    assert DoorIO().answer(ReadStored(("a",))) is None
    source = InMemorySource([Candidate("a", "alpha")])
    assert [c.id for c in DoorIO().answer(Fetch(source, (((None, "a"),),)))] == ["a"]


def test_settings_build_every_engine_and_round_trip_a_config(tmp_path: Path) -> None:
    settings = RerankSettings(
        proximities=(ForeignKeys(),),
        ranker="ppr",
        alpha=0.2,
        seed_transform="rank",
        explain=0,
        max_candidates=50,
        top_n=5,
        expansion=Expansion(seeds=2, hops=2),
    )
    path = tmp_path / "c.json"
    write_config(path, settings.to_config())
    assert RerankSettings.from_config(path) == settings
    assert isinstance(engine_for(settings), GraphReranker)  # no source: no expansion
    source = InMemorySource([Candidate("a", "alpha")])
    expanding = engine_for(settings, source)
    assert isinstance(expanding, ExpandingReranker) and isinstance(expanding, Engine)
    assert core_of(expanding).max_candidates == 50 and expanding.expansion.hops == 2
    defaults = RerankSettings().to_config()
    assert "explain" not in defaults and "expansion" not in defaults  # the door's own defaults


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ranker", "nope"),
        ("ranker", "os:system"),
        ("explain", -1),
        ("explain", True),
        ("seed_transform", "scores"),
        ("max_candidates", 0),
        ("score_threshold", float("nan")),
        ("top_n", True),
        ("strict", "yes"),
        ("expansion", {"hops": 2}),
        ("proximities", ["foreign_keys"]),
    ],
)
def test_settings_validate_every_field(field: str, value: object) -> None:
    with pytest.raises((ConfigError, TypeError)):
        RerankSettings(**{field: value})  # type: ignore[arg-type]


def test_a_score_seed_setting_is_refused_where_no_score_can_come() -> None:
    RerankSettings(seed_transform="rank").refuse_unhonoured(
        has_scores=False, door="d", fix="f", where="w"
    )
    with pytest.raises(ConfigError, match=r"w: key 'seed_transform'.*fix-it"):
        RerankSettings(seed_transform="auto").refuse_unhonoured(
            has_scores=False, door="a door", fix="fix-it", where="w"
        )


def test_a_call_value_is_generic() -> None:
    def steps():  # type: ignore[no-untyped-def]
        answer = yield ReadStored(("a",))
        return answer

    call: Call[str] = Call(steps())
    assert call.start() == ReadStored(("a",))
    assert call.send("done") is None and call.result() == "done"
