"""A reranker configuration as a JSON file: written by ``grapher eval --write-config``, loaded by
the core and both wrappers (``GraphReranker.from_config``, ``GraphERReranker.from_config``,
``GraphERPostprocessor.from_config``), so what was measured on a user's questions is what runs.

It lives here, not in the CLI, so the wrappers load it without importing the command line. The
file is validated in full on load: an unknown key (a typo would otherwise be ignored and a
default run silently), a wrong type or a value out of range is a :class:`ConfigError` naming the
file and the key.

``{"grapher_config": 1, "keep_retriever_order": false, "ranker": "gcs", "alpha": 0.1,
"seed_transform": "rank", "top_n": 10, "fetch_k": 20, "proximities": null, ...}``

``proximities``: ``null`` detects them from the metadata on every call (zero config), a list
holds :func:`~grapher_core.edges.serialise.proximity_to_dict` dicts. ``keep_retriever_order:
true`` says no configuration beat the retriever's own order; it loads as the ``"baseline"``
ranker over rank seeds, which returns the input order unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grapher_core.errors import ConfigError, GraphERError, InputError
from grapher_core.ranking.seeds import SEED_TRANSFORMS
from grapher_core.utils.small_files import read_json_file

if TYPE_CHECKING:
    pass

__all__ = [
    "CONFIG_VERSION",
    "DOOR_DEFAULT_KEYS",
    "KEYS",
    "core_options",
    "load_config",
    "refuse_unexpanded",
    "retriever_order_config",
    "write_config",
]

CONFIG_VERSION = 1
"""The ``grapher_config`` value this library writes and reads."""

MAX_CONFIG_BYTES = 1 << 20
"""A config is a few hundred bytes; a larger file than this (1 MiB) is refused unread."""

KEYS: dict[str, str] = {
    "grapher_config": f"format version (always {CONFIG_VERSION})",
    "keep_retriever_order": "true: no configuration beat the retriever's order; keep it",
    "ranker": "registry name of the ranker (gcs, ppr, gat, baseline, ...)",
    "alpha": "the ranker's alpha in (0, 1), or null for its tuned default",
    "ranker_options": "keyword options of the named ranker beyond alpha (absent or {}: its "
    'defaults), e.g. {"alone_weights": {}} for GCS with chunk order at full share; a relative '
    '"checkpoint" path is read from the config\'s own folder',
    "seed_transform": f"how retriever scores become seeds: one of {', '.join(SEED_TRANSFORMS)} "
    "(absent or null: the reranker's default)",
    "top_n": "results returned per query (the wrappers' top_n), or null for all",
    "fetch_k": "candidates the retriever should hand over (the pool it was measured on)",
    "proximities": "null: detected from the metadata on every call; or a list of proximities",
    "explain": "neighbours named per result (0: none; null: the door's default)",
    "strict": "true: raise instead of warning on silent no-ops (null: the door's default)",
    "max_candidates": "rerank at most this many candidates per call (null: the door's bound)",
    "max_chars_per_doc": "texts cut to this many characters before they are read (null: the "
    "door's cut)",
    "score_threshold": "results whose relevance is below it are dropped (null: none)",
    "expansion": "null: no expansion; or the fields of an Expansion (seeds, hops, budget...), "
    "used where the door has a neighbour source",
    "note": "a sentence for people: why this configuration",
    "evaluation": "what it was measured on (free-form, not read back)",
    "verdict": 'what the run that wrote it concluded, {"wins": true|false, "reason": "..."}; '
    "a config kept without a win (grapher train --keep) warns whenever it is loaded",
}
"""Every key a config may hold, with what it means (an unknown key is refused)."""

_BASELINE: dict[str, Any] = {
    "ranker": "baseline",
    "seed_transform": "rank",
    "alpha": None,
    "proximities": [],
}


def retriever_order_config(**extra: Any) -> dict[str, Any]:
    """The config that keeps the retriever's order (``keep_retriever_order: true``)."""
    return {"grapher_config": CONFIG_VERSION, "keep_retriever_order": True, **_BASELINE, **extra}


def write_config(path: str | Path, config: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``config`` (as :func:`load_config` would) and write it as indented JSON."""
    path = Path(path)
    checked = check_config(dict(config), str(path), folder=path.parent)
    try:
        path.write_text(json.dumps(dict(config), indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise InputError(f"{path}: cannot write the config ({error.strerror or error})") from None
    return checked


def load_config(path: str | Path) -> dict[str, Any]:
    """The validated config of ``path`` with every key present (defaults filled in).

    Raises :class:`InputFileNotFoundError` when the file is missing and :class:`ConfigError`,
    naming the file and the key, for anything else that is wrong."""
    path = Path(path)
    data = read_json_file(path, limit=MAX_CONFIG_BYTES, what="GraphER config", error=ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    config = check_config(data, str(path), folder=path.parent)
    _say_verdict(config, path)
    return config


def check_config(
    data: dict[str, Any], where: str = "config", *, folder: Path | None = None
) -> dict[str, Any]:
    """``data`` checked key by key, with defaults filled in; errors name ``where`` and the key.
    ``folder``: the config file's own folder, which a relative checkpoint path is read from
    (so a folder holding a config and its checkpoint can be moved whole)."""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{where}: key {key!r}: {message}")

    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise fail(unknown[0], f"unknown key (known: {', '.join(KEYS)})")
    if data.get("grapher_config") != CONFIG_VERSION or isinstance(data.get("grapher_config"), bool):
        raise fail(
            "grapher_config",
            f"must be {CONFIG_VERSION} (a config written by `grapher eval --write-config`), "
            f"got {data.get('grapher_config')!r}",
        )
    keep = data.get("keep_retriever_order", False)
    if not isinstance(keep, bool):
        raise fail("keep_retriever_order", f"must be true or false, got {keep!r}")
    out: dict[str, Any] = {"grapher_config": CONFIG_VERSION, "keep_retriever_order": keep}
    out.update(_baseline(data, fail) if keep else _ranking(data, where, fail, folder))
    for key, check in _REQUEST_KEYS.items():
        out[key] = check(key, data.get(key, _REQUEST_DEFAULTS.get(key)), fail)
    out["expansion"] = _expansion(data.get("expansion"), fail)
    note = data.get("note", "")
    if not isinstance(note, str):
        raise fail("note", f"must be a string, got {type(note).__name__}")
    evaluation = data.get("evaluation", {})
    if not isinstance(evaluation, dict):
        raise fail("evaluation", f"must be an object, got {type(evaluation).__name__}")
    out["note"] = note
    out["evaluation"] = evaluation
    out["verdict"] = _verdict(data.get("verdict"), fail)
    return out


def _verdict(value: Any, fail: Callable[[str, str], ConfigError]) -> dict[str, Any] | None:
    """``null`` or ``{"wins": bool, "reason": str}``."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or set(value) != {"wins", "reason"}
        or not isinstance(value["wins"], bool)
        or not isinstance(value["reason"], str)
    ):
        raise fail(
            "verdict", f'must be null or {{"wins": true|false, "reason": "..."}}, got {value!r}'
        )
    return dict(value)


def _say_verdict(config: Mapping[str, Any], path: Path) -> None:
    """A config kept although its run found it does not win (``grapher train --keep``) warns
    on every load -- once per file and process -- naming why: what runs was not chosen."""
    verdict = config.get("verdict")
    if verdict is None or verdict["wins"]:
        return
    from grapher_core.diagnostics import GraphERWarning
    from grapher_core.utils.callsite import warn_once

    warn_once(
        f"{path}: this configuration was kept although it does not win ({verdict['reason']}); "
        "it runs as written, for trying it out -- the evaluation that wrote it recommends "
        "something else",
        GraphERWarning,
    )


def _baseline(data: Mapping[str, Any], fail: Callable[[str, str], ConfigError]) -> dict[str, Any]:
    """``keep_retriever_order: true``: the baseline keys, and nothing that contradicts them."""
    for key, value in _BASELINE.items():
        if key in data and data[key] != value and not (key == "proximities" and not data[key]):
            raise fail(
                key,
                f"{data[key]!r} contradicts keep_retriever_order: true (which loads the "
                f"'baseline' ranker over rank seeds); remove it or set it to {value!r}",
            )
    if data.get("ranker_options"):
        raise fail("ranker_options", "contradicts keep_retriever_order: true; remove it")
    return {**_BASELINE, "ranker_options": {}}


def _ranking(
    data: Mapping[str, Any],
    where: str,
    fail: Callable[[str, str], ConfigError],
    folder: Path | None = None,
) -> dict[str, Any]:
    """The ranker, its alpha and options, the seed rule and the proximities."""
    ranker = data.get("ranker", "gcs")
    if not isinstance(ranker, str) or not ranker:
        raise fail("ranker", f"must be a ranker name such as 'gcs', got {ranker!r}")
    from grapher_core.allowed import is_allowed
    from grapher_core.ranking.registry import available_rankers

    if not is_allowed("ranker", ranker.lower()):
        raise fail(
            "ranker", f"unknown ranker {ranker!r}; choose one of {', '.join(available_rankers())}"
        )
    alpha = _alpha(data.get("alpha"), fail)
    seed = data.get("seed_transform")  # absent: the reranker's own default policy
    if seed is not None and seed not in SEED_TRANSFORMS:
        raise fail("seed_transform", f"must be one of {SEED_TRANSFORMS}, got {seed!r}")
    return {
        "ranker": ranker,
        "alpha": alpha,
        "seed_transform": seed,
        "ranker_options": _ranker_options(ranker, alpha, data, fail, folder, where),
        "proximities": _proximities(data.get("proximities"), where),
    }


def _positive_or_null(key: str, value: Any, fail: Callable[[str, str], ConfigError]) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise fail(key, f"must be an integer >= 1 or null, got {value!r}")
    return value


def _count(key: str, value: Any, fail: Callable[[str, str], ConfigError]) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise fail(key, f"must be an integer >= 0 or null, got {value!r}")
    return value


def _flag(key: str, value: Any, fail: Callable[[str, str], ConfigError]) -> Any:
    if value is not None and not isinstance(value, bool):
        raise fail(key, f"must be true, false or null, got {value!r}")
    return value


def _threshold(key: str, value: Any, fail: Callable[[str, str], ConfigError]) -> Any:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    ):
        raise fail(key, f"must be a finite number or null, got {value!r}")
    return value


_REQUEST_KEYS: dict[str, Callable[[str, Any, Callable[[str, str], ConfigError]], Any]] = {
    "top_n": _positive_or_null,
    "fetch_k": _positive_or_null,
    "explain": _count,
    "strict": _flag,
    "max_candidates": _positive_or_null,
    "max_chars_per_doc": _positive_or_null,
    "score_threshold": _threshold,
}
"""The request's own keys beside the ranking, each with its check; absent or null: the
loading door's own default (the wrappers bound a call at 1000 candidates, the core does not)."""
_REQUEST_DEFAULTS: dict[str, Any] = {}
DOOR_DEFAULT_KEYS = ("explain", "strict", "max_candidates", "max_chars_per_doc", "score_threshold")
"""Keys whose null means "the door's own default"."""


def refuse_unexpanded(
    config: Mapping[str, Any], *, has_source: bool, door: str, fix: str, where: str
) -> None:
    """Refuse, naming the key and ``fix``, a loaded ``config`` that expands in a ``door`` with
    no neighbour source: it would rerank the candidates only -- what was evaluated would not be
    what runs. Every door's ``from_config`` asks this."""
    expansion = config.get("expansion")
    if expansion is not None and not has_source:
        shown = ", ".join(f"{k}={v!r}" for k, v in expansion.items()) or "its defaults"
        raise ConfigError(
            f"{where}: key 'expansion': this configuration expands ({shown}), but {door} has "
            f"no neighbour source to fetch from: {fix}, or remove 'expansion' from the config "
            "(what ran instead would not be what was evaluated)"
        )


def _expansion(value: Any, fail: Callable[[str, str], ConfigError]) -> Any:
    """``null`` (no expansion) or the fields of an :class:`~grapher_core.expand.Expansion`
    (their values are checked by the request settings that build it)."""
    if value is not None and not isinstance(value, dict):
        raise fail("expansion", f"must be null or an object, got {type(value).__name__}")
    return value


def _alpha(value: Any, fail: Callable[[str, str], ConfigError]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail("alpha", f"must be a number in (0, 1) or null, got {value!r}")
    if not (math.isfinite(value) and 0 < value < 1):
        raise fail("alpha", f"must be in (0, 1), got {value!r}")
    return float(value)


def _ranker_options(
    ranker: str,
    alpha: float | None,
    data: Mapping[str, Any],
    fail: Callable[[str, str], ConfigError],
    folder: Path | None = None,
    where: str = "config",
) -> dict[str, Any]:
    """The ``ranker_options`` object, checked against the ranker's declared ``FIELDS``
    (:mod:`grapher_core.utils.schema`: a typo, a wrong type or an unbounded iteration fails here,
    naming the key) and by building the ranker with them once; a relative ``checkpoint`` is
    read from ``folder``."""
    value = data.get("ranker_options") or {}
    if not isinstance(value, dict):
        raise fail("ranker_options", f"must be an object, got {type(value).__name__}")
    from grapher_core.ranking.registry import declared_options
    from grapher_core.utils.schema import check_values

    schema = declared_options(ranker) if value else None
    if schema is not None:
        check_values(where, value, schema, key="ranker_options", owner=ranker)
    checkpoint = value.get("checkpoint")
    if (
        folder is not None
        and isinstance(checkpoint, str)
        and checkpoint
        and not Path(checkpoint).is_absolute()
    ):
        value = {**value, "checkpoint": str(folder / checkpoint)}
    if value:
        from grapher_core.ranking.registry import make_ranker

        try:
            make_ranker(ranker, alpha, **value)
        except (GraphERError, TypeError, ValueError) as error:
            raise fail("ranker_options", f"{ranker!r} refuses {value!r}: {error}") from None
    return dict(value)


def _proximities(value: Any, where: str) -> list[Any] | None:
    """``None`` (detect) or the proximity objects the list describes, each class resolved
    through the allow-list (:mod:`grapher_core.allowed`): nothing a file names is imported."""
    if value is None:
        return None
    from grapher_core.edges.serialise import proximity_from_dict

    if not isinstance(value, list):
        raise ConfigError(
            f"{where}: key 'proximities': must be null or a list, got {type(value).__name__}"
        )
    return [
        proximity_from_dict(item, where, f"proximities[{position}]")
        for position, item in enumerate(value)
    ]


def core_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of :class:`~grapher_core.GraphReranker` for a loaded ``config``
    (``proximities=None``: detected per call)."""
    options: dict[str, Any] = {
        "proximities": config["proximities"],
        "ranker": config["ranker"],
        "alpha": config["alpha"],
        **{k: config[k] for k in DOOR_DEFAULT_KEYS if config.get(k) is not None},
        **dict(config.get("ranker_options") or {}),
    }
    if config.get("seed_transform") is not None:
        options["seed_transform"] = config["seed_transform"]
    return options
