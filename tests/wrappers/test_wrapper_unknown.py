"""Doors refuse what they do not know: a field a wrapper does not have is refused naming the
closest one, and importing a wrapper without its framework says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers_extras import needs


@pytest.mark.parametrize(
    ("module", "cls", "extra"),
    [
        ("langchain_grapher", "GraphERReranker", "langchain"),
        ("llama_index_grapher", "GraphERPostprocessor", "llamaindex"),
    ],
)
def test_a_typo_names_the_closest_field(module: str, cls: str, extra: str) -> None:
    wrapper = getattr(needs(extra, module), cls)
    for typo, meant in (("top_k", "top_n"), ("ranekr", "ranker"), ("expand_hop", "expand_hops")):
        with pytest.raises(ValueError, match=f"no field '{typo}' \\(did you mean '{meant}'\\?\\)"):
            wrapper(**{typo: 5})
    with pytest.raises(ValueError, match="no field 'colour'; its fields: "):
        wrapper(colour="red")


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("langchain_grapher", "langchain_core", "langchain"),
        ("llama_index_grapher", "llama_index.core", "llamaindex"),
    ],
)
def test_importing_a_wrapper_without_its_framework_names_the_extra(
    module: str, framework: str, extra: str
) -> None:
    script = (
        "import sys\n"
        f"sys.modules[{framework!r}] = None  # as if it were not installed\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as error:\n"
        "    from grapher_core.errors import GraphERError\n"
        "    print(type(error).__name__, isinstance(error, GraphERError), error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingDependencyError True "), done.stdout
    assert f"pip install 'grapher-rerank[{extra}]'" in done.stdout
