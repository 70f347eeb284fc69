"""``python -m grapher_core.cli``: the ``grapher`` command."""

from grapher_core.cli.main import main

raise SystemExit(main())
