"""A stand-in for ``python -m llama_cpp.server`` in the reader tests: the same command-line
options, the scripted chat server of :mod:`enrich_fault_server` behind them.

``grapher-bench reader start --server-module fake_llama_server`` runs it instead of llama.cpp,
so starting, answering, the bounded lifetime and stopping are tested without building
llama-cpp-python or loading a model. It checks that ``--model`` names a file, as the real one
does.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from enrich_fault_server import FaultConfig, FaultServer, qa_reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--model_alias", default="fake")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, default=2048)
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--n_threads_batch", type=int, default=1)
    args = parser.parse_args()
    if not args.model.is_file():
        print(f"no model file {args.model}", file=sys.stderr)
        return 1
    server = FaultServer(FaultConfig(responder=qa_reply), port=args.port, lifetime=600).start()
    print(f"fake llama server on {server.base_url} ({args.n_threads} threads)", flush=True)
    try:
        while True:
            time.sleep(0.2)
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
