"""The public face, pinned: each package's ``__all__`` (a change here is an API change, made on
purpose), the notebooks import only from package faces, and the README layout names every
module of the tree."""

from __future__ import annotations

import importlib
import json
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FACES: dict[str, set[str]] = {
    "grapher_core": {
        "AdjacentChunks",
        "BaselineRanker",
        "Candidate",
        "CandidateGraph",
        "Contribution",
        "CorpusObject",
        "ForeignKeys",
        "GCSRanker",
        "GraphERError",
        "GraphReranker",
        "PPRRanker",
        "Proximity",
        "RankContext",
        "RankedCandidate",
        "Ranker",
        "SemanticKNN",
        "SharedEntities",
        "build_graph",
        "cache_root",
        "default_model_path",
        "encode_list",
        "gcs_scores",
        "make_ranker",
        "ppr_scores",
        "read_list",
        "register_embedding",
        "register_proximity",
        "register_ranker",
    },
    "grapher_core.learned": {"GATRanker", "MLPRanker"},
    "grapher_core.conventions": {
        "EDGES_KEY",
        "EXPANDED_KEY",
        "EXPLANATION_KEY",
        "GRAPHER_SCORE_KEY",
        "LIST_FORMATS",
        "OUTPUT_KEYS",
        "RELEVANCE_SCORE_KEY",
        "RETRIEVAL_SCORE_KEY",
        "ListFormat",
        "assign_validated",
        "explanation_to_metadata",
        "validated_copy",
    },
    "grapher_core.testing": {
        "ContractError",
        "check_neighbour_source",
        "check_proximity",
        "check_ranker",
        "sample_candidates",
    },
    "grapher_core.learned.loop": {
        "LOSSES",
        "Adapter",
        "FitResult",
        "GraphExample",
        "Log",
        "LoopConfig",
        "LossFn",
        "Metric",
        "Targets",
        "fit",
        "pr_at_k",
        "predict",
        "ranking_loss",
        "resolve_device",
        "seed_everything",
        "set_threads",
        "split_examples",
        "targets_for",
    },
    "langchain_grapher": {
        "EXPANDED_KEY",
        "EXPLANATION_KEY",
        "RELEVANCE_SCORE_KEY",
        "RETRIEVAL_SCORE_KEY",
        "ChunkLinkTransformer",
        "EntityTransformer",
        "GraphEREmbeddings",
        "GraphERReranker",
        "GraphERRetriever",
        "LinkTransformer",
        "MentionTransformer",
        "SQLSchemaLoader",
        "VectorStoreSource",
        "candidates_from_documents",
        "evaluate_retriever",
        "graph_context_formatter",
        "register_store_adapter",
        "store_capabilities",
    },
    "llama_index_grapher": {
        "ADJACENT_FIELD",
        "EXPLANATION_KEY",
        "RETRIEVAL_SCORE_KEY",
        "SOURCE_FIELD",
        "TABLE_ID_FIELD",
        "GraphEREntityExtractor",
        "GraphERLinkExtractor",
        "GraphERLlamaEmbedding",
        "GraphERMentionExtractor",
        "GraphERPostprocessor",
        "GraphERSchemaReader",
        "candidate_from_node",
        "candidates_from_nodes",
        "evaluate_retriever",
        "format_nodes_as_graph",
        "register_store_adapter",
        "relationship_proximity",
        "store_capabilities",
    },
}


@pytest.mark.parametrize("module", sorted(FACES))
def test_all_is_pinned_and_importable(module: str) -> None:
    if module.split(".")[0] in ("langchain_grapher", "llama_index_grapher"):
        pytest.importorskip("langchain_core" if module.startswith("lang") else "llama_index.core")
    mod = importlib.import_module(module)
    exported = set(mod.__all__)
    assert exported == FACES[module], (
        f"{module}.__all__ changed: added {sorted(exported - FACES[module])}, removed "
        f"{sorted(FACES[module] - exported)}; update FACES here if that is intended"
    )
    assert not [n for n in exported if n.startswith("_")]
    if module == "grapher_core.learned" and find_spec("torch") is None:
        pytest.skip("__all__ checked; loading its names needs torch (the 'gat' extra)")
    for name in exported:
        assert getattr(mod, name) is not None


def test_notebooks_import_from_package_faces() -> None:
    reached = []
    for notebook in sorted((ROOT / "cookbook").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for match in re.finditer(
            r"from ((?:grapher_core|langchain_grapher|llama_index_grapher)"
            r"\.[\w.]+) import",
            source,
        ):
            reached.append(f"{notebook.name}: {match.group(1)}")
    assert not reached, f"notebooks reach into submodules: {reached}"


def _modules(package: Path) -> set[str]:
    return {p.stem for p in package.glob("*.py") if p.stem != "__init__"}


def _package_folders() -> list[Path]:
    """Every folder of the four packages that holds modules."""
    return sorted(
        {
            p.parent
            for package in (
                "grapher_core",
                "langchain_grapher",
                "llama_index_grapher",
                "grapher_bench",
            )
            for p in (ROOT / package).rglob("*.py")
        }
    )


def test_readme_layout_names_every_module() -> None:
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    words = set(re.findall(r"[\w]+", layout))
    missing = []
    for folder in _package_folders():
        name = str(folder.relative_to(ROOT))
        if folder.name not in words:
            missing.append(f"{name}/")
        missing += [f"{name}/{m}.py" for m in sorted(_modules(folder) - words)]
    assert not missing, f"README's Layout section does not mention: {missing}"


def test_the_tree_keeps_its_shape() -> None:
    """Few modules at each package's top (the rest live in role folders), and every learned
    family has the same file names inside its folder."""
    assert len(_modules(ROOT / "grapher_core")) + 1 <= 12
    assert len(_modules(ROOT / "grapher_bench")) + 1 <= 15
    learned = ROOT / "grapher_core" / "learned"
    families = {name: _modules(learned / name) for name in ("gat", "grag", "qa_gnn")}
    expected = {"model", "features", "checkpoint", "ranker", "train"}
    assert families == {name: expected for name in families}
