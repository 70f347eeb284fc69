"""The network itself: shapes, the MLP's independence from other nodes, determinism."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from helpers_gat import graph_of, table_candidates  # noqa: E402

from grapher_core.learned.gat.features import EDGE_DIM, EDGE_KINDS, edge_arrays, graph_arrays  # noqa: E402
from grapher_core.learned.gat.model import GraphERNet, ModelSpec  # noqa: E402
from grapher_core.ranking.seeds import make_seeds  # noqa: E402


def _inputs(n: int = 12, dim: int = 16, seed: int = 0) -> dict[str, torch.Tensor]:
    candidates = table_candidates(n, dim, seed)
    arrays = graph_arrays(graph_of(candidates), make_seeds(candidates), 0.1)
    return {
        "scalars": torch.from_numpy(arrays.scalars),
        "objects": torch.from_numpy(np.stack([c.embedding for c in candidates])),
        "object_index": torch.arange(n),
        "queries": torch.from_numpy(np.asarray(candidates[0].embedding)).reshape(1, -1),
        "query_index": torch.zeros(n, dtype=torch.long),
        "edge_index": torch.from_numpy(arrays.edge_index),
        "edge_attr": torch.from_numpy(arrays.edge_attr),
    }


def _model(architecture: str, dim: int = 16, seed: int = 0) -> GraphERNet:
    torch.manual_seed(seed)
    return GraphERNet(ModelSpec(architecture, embedding_dim=dim, hidden=8, heads=2)).eval()


@pytest.mark.parametrize("architecture", ["gat", "mlp"])
def test_one_finite_score_per_node(architecture: str) -> None:
    model = _model(architecture)
    out = model(**_inputs())
    assert out.shape == (12,)
    assert torch.isfinite(out).all()
    gat_layers = [m for m in model.modules() if type(m).__name__ == "GATv2Conv"]
    assert len(gat_layers) == (5 if architecture == "gat" else 0)


def test_mlp_has_no_message_passing() -> None:
    model = _model("mlp")
    base = _inputs()
    changed = dict(base)
    objects = base["objects"].clone()
    objects[1:] = torch.randn_like(objects[1:])  # every node but node 0 changes
    scalars = base["scalars"].clone()
    scalars[1:] = torch.rand_like(scalars[1:])
    changed.update(
        objects=objects,
        scalars=scalars,
        edge_index=torch.zeros((2, 0), dtype=torch.long),
        edge_attr=torch.zeros((0, EDGE_DIM)),
    )
    with torch.no_grad():
        assert torch.allclose(model(**base)[0], model(**changed)[0])
        assert not torch.allclose(model(**base)[1:], model(**changed)[1:])


def test_gat_does_pass_messages() -> None:
    model = _model("gat")
    base = _inputs()
    changed = dict(base)
    objects = base["objects"].clone()
    objects[1] = torch.randn_like(objects[1])  # node 1 is node 0's FK neighbour
    changed["objects"] = objects
    with torch.no_grad():
        assert not torch.allclose(model(**base)[0], model(**changed)[0])
        # node 5 is in another component (blocks of three tables): nothing reaches it
        assert torch.allclose(model(**base)[5], model(**changed)[5])


def test_same_seed_same_model_and_scores() -> None:
    first, second, other = _model("gat", seed=3), _model("gat", seed=3), _model("gat", seed=4)
    inputs = _inputs()
    with torch.no_grad():
        assert torch.equal(first(**inputs), second(**inputs))
        assert not torch.equal(first(**inputs), other(**inputs))


def test_edge_features_name_kinds_and_self_loops() -> None:
    candidates = table_candidates(6, 8)
    graph = graph_of(candidates)
    edge_index, edge_attr = edge_arrays(graph)
    assert edge_index.shape == (2, graph.n_edges + 6)
    assert edge_attr.shape == (graph.n_edges + 6, EDGE_DIM)
    structural = 1 + EDGE_KINDS.index("structural")
    assert edge_attr[: graph.n_edges, structural].all()
    assert edge_attr[graph.n_edges :, -1].all() and not edge_attr[: graph.n_edges, -1].any()
    # row 0 = source j, row 1 = target i of A[i, j]
    dense = graph.adjacency.toarray()
    for j, i in edge_index[:, : graph.n_edges].T:
        assert dense[i, j] > 0


def test_bad_spec_and_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="architecture"):
        ModelSpec("gcn")
    with pytest.raises(ValueError, match="hidden"):
        ModelSpec(hidden=0)
    model = _model("gat")
    inputs = _inputs(dim=16)
    inputs["objects"] = torch.zeros((12, 10))
    with pytest.raises(ValueError, match="16-d"):
        model(**inputs)
    inputs = _inputs()
    del inputs["edge_index"]
    with pytest.raises(ValueError, match="edge_index"):
        model(**inputs)


@pytest.mark.parametrize("architecture", ["gat", "mlp"])
@pytest.mark.parametrize("seed", range(3))
def test_inference_plan_equals_forward(architecture: str, seed: int) -> None:
    from grapher_core.learned.gat.model import InferencePlan

    model = _model(architecture, seed=seed)
    inputs = _inputs(n=15, seed=seed)
    with torch.no_grad():  # perturb every parameter so biases and the prior matter too
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
        expected = model(**inputs)
        got = InferencePlan(model)(
            inputs["scalars"],
            inputs["objects"],
            inputs["queries"][0],
            inputs["edge_index"],
            inputs["edge_attr"],
        )
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="eval mode"):
        InferencePlan(model.train())


def test_feature_kinds_are_the_checkpoint_layout_and_cover_todays_kinds() -> None:
    """The edge features' kind columns are frozen for the checkpoints; today they name every
    kind the library knows, in the same order (a new kind would go to ``other``)."""
    from grapher_core.edges.checks import EDGE_KINDS as KNOWN_KINDS

    assert EDGE_KINDS == KNOWN_KINDS
    assert 1 + len(EDGE_KINDS) + 2 == EDGE_DIM  # weight, kinds, other, self
