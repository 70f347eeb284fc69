"""What a qa-eval run records about itself in ``qa_meta.json``: which model file, which server,
which prompt versions, which command, when.

Answers from a local model are only reproducible from the same weights, server build and
prompt texts, so each run writes them next to its per-query rows: the sha256 of the GGUF when
``--model-file`` names it (``null`` otherwise: a hosted model has no file to hash), what the
endpoint says about itself (``GET <base>/models``, its ``Server`` header, and the version
routes of llama.cpp's server, vLLM and Ollama when they answer), every prompt's version, the
command line and the UTC start and end times. Probing never fails a run: a server that does
not answer is recorded as such.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import threading
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["command_line", "file_sha256", "probe_server", "utc_now"]

_READ_LIMIT = 256 * 1024  # a /models listing of a hosted provider is far below this
_MAX_IDS = 20
_VERSION_KEYS = ("version", "build_info", "build", "system_fingerprint", "llama_cpp_version")


def utc_now() -> str:
    """The current time, ISO 8601 in UTC, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file, read in chunks (a 1 GB GGUF never sits in memory)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def command_line(argv: list[str] | None = None) -> str:
    """The command as given (``grapher-bench ...``, else ``sys.argv``), quoted so it can be
    pasted back into a shell."""
    if argv is None:
        from grapher_bench.cli import INVOKED

        argv = INVOKED or sys.argv
    shown: list[str] = []
    for arg in argv:  # a key never lands in a file
        if shown and shown[-1] == "--api-key":
            arg = "***"
        elif arg.startswith("--api-key="):
            arg = "--api-key=***"
        shown.append(arg)
    return shlex.join(shown)


def _get(url: str, timeout: float, api_key: str | None) -> dict[str, Any]:
    """One GET: status, ``Server`` header and JSON body (or the error), never raising."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    out: dict[str, Any] = {"url": url, "status": None, "server_header": None, "body": None}
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            out["status"] = response.status
            out["server_header"] = (response.headers.get("Server") or "").strip() or None
            raw = response.read(_READ_LIMIT)
    except urllib.error.HTTPError as error:
        out["status"] = error.code
        out["server_header"] = error.headers.get("Server") if error.headers else None
        return out
    except (OSError, ValueError) as error:
        out["error"] = f"{type(error).__name__}: {error}"
        return out
    try:
        out["body"] = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        out["error"] = "the answer is not JSON"
    return out


def _versions(body: Any) -> dict[str, Any]:
    """Version-like fields of a JSON answer (top level and each listed model's)."""
    found: dict[str, Any] = {}
    items = [body] if isinstance(body, dict) else []
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        items += [item for item in body["data"] if isinstance(item, dict)]
    for item in items:
        for key in _VERSION_KEYS:
            value = item.get(key)
            if isinstance(value, (str, int, float)) and key not in found:
                found[key] = value
        meta = item.get("meta")
        if isinstance(meta, dict) and "meta" not in found:
            found["meta"] = {k: v for k, v in meta.items() if isinstance(v, (str, int, float))}
    return found


def _probe(base_url: str, timeout: float, api_key: str | None) -> dict[str, Any]:
    models = _get(base_url.rstrip("/") + "/models", timeout, api_key)
    body = models.pop("body")
    record: dict[str, Any] = {
        "base_url": base_url,
        "models_status": models["status"],
        "server_header": models["server_header"],
    }
    if "error" in models:
        record["error"] = models["error"]
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        ids = [str(m.get("id")) for m in body["data"] if isinstance(m, dict)]
        record["models"] = ids[:_MAX_IDS]
        record["n_models"] = len(ids)
        owners = {str(m.get("owned_by")) for m in body["data"] if isinstance(m, dict)}
        record["owned_by"] = sorted(owners)[:_MAX_IDS]
    versions = _versions(body)
    parts = urlsplit(base_url)
    root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    for path in ("/props", "/version", "/api/version"):  # llama.cpp server, vLLM, Ollama
        answer = _get(root + path, timeout, api_key)
        if answer["status"] == 200:
            for key, value in _versions(answer["body"]).items():
                versions.setdefault(key, value)
            record.setdefault("server_header", answer["server_header"])
    record["versions"] = versions
    return record


def probe_server(
    base_url: str, *, timeout: float = 5.0, api_key: str | None = None
) -> dict[str, Any]:
    """What the endpoint says about itself; bounded by ``4 * timeout`` whatever the server does
    (the probe runs in a daemon thread that is abandoned past the bound)."""
    result: dict[str, Any] = {"base_url": base_url, "error": "no answer in time"}

    def run() -> None:
        nonlocal result
        result = _probe(base_url, timeout, api_key)

    worker = threading.Thread(target=run, name="qa-eval-probe", daemon=True)
    worker.start()
    worker.join(4 * timeout + 1)
    return dict(result)
