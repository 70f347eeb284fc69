"""The declared schema (grapher_core.utils.schema): one field spec and one check for everything
a file or payload may set. Every registered proximity and built-in ranker declares every field
it has, and a field added without a declaration fails the first construction (a planted bypass)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from grapher_core.allowed import allowed_names, resolve
from grapher_core.candidates import Candidate, CorpusObject, RankedCandidate
from grapher_core.edges import ForeignKeys
from grapher_core.edges.checks import EDGE_KINDS, check_proximity
from grapher_core.errors import ConfigError, GraphERError, InputTypeError
from grapher_core.ranking.base import BaselineRanker
from grapher_core.ranking.propagation import GCSRanker, PPRRanker
from grapher_core.ranking.score_adjust import ScoreAdjustRanker
from grapher_core.utils.schema import (
    FieldTypeError,
    Spec,
    check_field_names,
    check_fields,
    check_values,
    declared_schema,
    grapher_error_in,
)


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (Spec("bool"), "no"),
        (Spec("bool"), 0),
        (Spec("str"), 3),
        (Spec("str"), ["x"]),
        (Spec("int"), True),
        (Spec("int"), 2.0),
        (Spec("float"), "1"),
        (Spec("float"), False),
        (Spec("strs"), [1]),
        (Spec("strs"), {"a": 1}),
        (Spec("none"), "os:system"),
        (Spec("none"), {}),
    ],
    ids=repr,
)
def test_a_wrong_type_is_both_a_type_and_a_config_error(spec: Spec, value: Any) -> None:
    with pytest.raises(FieldTypeError, match=r"X\.f must be") as caught:
        spec.check("X.f", value)
    assert isinstance(caught.value, InputTypeError) and isinstance(caught.value, ConfigError)


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (Spec("float"), math.nan),
        (Spec("float"), math.inf),
        (Spec("float"), 10**400),  # fits no float: refused, not an OverflowError
        (Spec("int", high=10), 10**400),
        (Spec("int", low=1), 0),
        (Spec("float", low=0.0, open_low=True), 0.0),
        (Spec("float", high=1.0, open_high=True), 1.0),
        (Spec("str", choices=("a", "b")), "c"),
        (Spec("str", nonblank=True), "  "),
    ],
    ids=repr,
)
def test_a_value_out_of_range_is_a_config_error(spec: Spec, value: Any) -> None:
    with pytest.raises(ConfigError, match=r"X\.f must be"):
        spec.check("X.f", value)


def test_good_values_pass_and_lists_of_names_become_tuples() -> None:
    assert Spec("strs").check("x", ["a", "b"]) == ("a", "b")
    assert Spec("strs").check("x", "a") == ("a",)
    assert Spec("int", low=1, high=3).check("x", 3) == 3
    assert Spec("float", optional=True).check("x", None) is None
    assert Spec("bool").check("x", False) is False


def test_a_rule_says_why_and_the_fix_is_appended() -> None:
    spec = Spec("str", rule=lambda v: None if v.islower() else "lower case only", fix="retype")
    assert spec.check("x", "abc") == "abc"
    with pytest.raises(ConfigError, match="'ABC' is refused: lower case only; retype"):
        spec.check("x", "ABC")


def test_check_values_names_the_payload_the_key_and_the_closest_field() -> None:
    schema = {"field": Spec("str"), "weight": Spec("float")}
    with pytest.raises(ConfigError, match=r"c\.json: key 'p\.feild'.*did you mean 'field'"):
        check_values("c.json", {"feild": "x"}, schema, key="p", owner="ForeignKeys")
    with pytest.raises(ConfigError, match=r"c\.json: key 'p\.weight' must be a finite number"):
        check_values("c.json", {"weight": "heavy"}, schema, key="p")
    assert check_values("c.json", {"field": "x"}, schema) == {"field": "x"}


def test_check_field_names_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"has no field 'top_k' \(did you mean 'top_n'\?\)"):
        check_field_names("R", ["top_k"], ["top_n", "alpha"])
    check_field_names("R", ["top_n"], ["top_n"])


# -- every class a file can name declares every field -------------------------------------------
def _registered_proximities() -> list[type]:
    return sorted(
        {resolve("proximity", name) for name in allowed_names("proximity")},
        key=lambda c: c.__name__,
    )


DATACLASS_RANKERS = [BaselineRanker, GCSRanker, PPRRanker, ScoreAdjustRanker]


@pytest.mark.parametrize(
    "cls", [*_registered_proximities(), *DATACLASS_RANKERS], ids=lambda c: c.__name__
)
def test_every_field_has_a_declared_check(cls: type) -> None:
    schema = declared_schema(cls)
    assert schema is not None, f"{cls.__name__} declares no FIELDS"
    assert set(schema) == {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(
    "cls", [*_registered_proximities(), *DATACLASS_RANKERS], ids=lambda c: c.__name__
)
def test_every_field_refuses_a_value_of_no_declared_type(cls: type) -> None:
    for field in dataclasses.fields(cls):
        with pytest.raises(GraphERError, match=field.name):
            cls(**{field.name: object()})


def test_a_proximity_kind_is_a_known_edge_kind() -> None:
    for kind in EDGE_KINDS:
        assert ForeignKeys(kind=kind).kind == kind
    with pytest.raises(ConfigError, match=r"ForeignKeys\.kind must be one of"):
        ForeignKeys(kind="evil")


# -- planted bypasses: the checks notice them ------------------------------------------------------
def test_a_new_proximity_field_without_a_declared_check_is_refused() -> None:
    @dataclass(frozen=True)
    class Planted(ForeignKeys):
        sneaky: str = "x"  # a new field, not added to FIELDS

        def __post_init__(self) -> None:
            check_proximity(self)

    with pytest.raises(ConfigError, match=r"Planted\.sneaky has no declared check"):
        Planted()


def test_a_new_ranker_field_without_a_declared_check_is_refused() -> None:
    @dataclass(frozen=True)
    class Planted(PPRRanker):
        steps: int = 10**9  # would run unbounded if nothing declared it

    with pytest.raises(ConfigError, match=r"Planted\.steps has no declared check"):
        Planted()


def test_a_declared_check_is_what_refuses_a_value() -> None:
    @dataclass(frozen=True)
    class Loose:
        FIELDS: ClassVar[dict[str, Spec]] = {"field": Spec("str")}
        field: Any = "x"

        def __post_init__(self) -> None:
            check_fields(self)

    assert Loose("y").field == "y"
    with pytest.raises(ConfigError, match=r"Loose\.field must be a string"):
        Loose(["x"])


def test_grapher_error_in_finds_the_error_a_framework_wrapped() -> None:
    inner = ConfigError("the real reason")

    class Wrapped(ValueError):
        def errors(self) -> list[dict[str, Any]]:
            return [{"loc": ("x",), "ctx": {"error": inner}}]

    assert grapher_error_in(Wrapped()) is inner
    assert grapher_error_in(ValueError("plain")) is None


@pytest.mark.parametrize(
    ("build", "wrong", "right"),
    [
        (lambda **kw: Candidate("a", "t", **kw), "scroe", "score"),
        (lambda **kw: CorpusObject("a", "t", **kw), "metdata", "metadata"),
        (lambda **kw: RankedCandidate("a", 0.5, None, 1, **kw), "orignal_rank", "original_rank"),
    ],
)
def test_the_core_value_types_name_a_misspelt_keyword(
    build: Callable[..., object], wrong: str, right: str
) -> None:
    with pytest.raises(ConfigError, match=f"did you mean '{right}'"):
        build(**{wrong: 1})
