"""The ``grapher`` command: a dispatcher (:mod:`~grapher_core.cli.main`), shared argument
types, and one module per subcommand (``demo``, ``rerank``, ``enrich``)."""

from grapher_core.cli.main import SUBCOMMANDS, build_parser, main, run

__all__ = ["SUBCOMMANDS", "build_parser", "main", "run"]
