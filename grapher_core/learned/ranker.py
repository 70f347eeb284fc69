"""The skeleton every learned ranker shares: checkpoint, embedder, device, threads, inputs.

:class:`FamilyRanker` loads a :class:`~grapher_core.learned.family.Family` checkpoint onto its
device, refuses an embedder of another model, embeds what the candidates and the query lack
(the checked vectors of :mod:`grapher_core.learned.inputs`), and runs the network on that one
device with torch's threads limited for the call (:meth:`FamilyRanker.infer`): inputs arrive
as numpy, go to ``device`` in one place, and scores come back as float64 numpy. A family
subclass supplies only its own scoring (:meth:`FamilyRanker.score`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.diagnostics import GraphERWarning
from grapher_core.errors import CheckpointError, ConfigError
from grapher_core.learned.family import Family, FamilyConfig
from grapher_core.learned.inputs import (
    arrays_to_device,
    check_rank_inputs,
    default_embedder_checked,
    object_vectors,
    query_vector,
    to_device,
)
from grapher_core.learned.weights import Kind, check_value
from grapher_core.utils.callsite import warn_once
from grapher_core.utils.threads import torch_threads

if TYPE_CHECKING:
    from grapher_core.edges.graph import CandidateGraph
    from grapher_core.embeddings import Embedder
    from grapher_core.ranking.base import RankContext

__all__ = ["FamilyRanker", "OnDevice", "check_option"]


def _in_event_loop() -> bool:
    """Whether this thread is running an asyncio event loop (the caller is a coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


ModelT = TypeVar("ModelT")
ConfigT = TypeVar("ConfigT", bound=FamilyConfig)
OnDevice = Callable[[np.ndarray], Any]
"""A numpy array as a tensor on the ranker's device."""


def check_option(
    owner: str,
    name: str,
    value: Any,
    kind: Kind = "int",
    low: float | None = None,
    high: float | None = None,
    *,
    open_bounds: bool = False,
    choices: tuple[str, ...] | None = None,
    optional: bool = True,
) -> Any:
    """A constructor option checked like a checkpoint field (an int is never a bool, a float
    is finite and in range, a string one of ``choices``; ``None`` passes when ``optional``),
    refused as a :class:`ConfigError` naming the owner and the option."""
    try:
        return check_value(
            owner, name, value, kind=kind, low=low, high=high, optional=optional,
            open_low=open_bounds, open_high=open_bounds, choices=choices,
        )  # fmt: skip
    except CheckpointError as error:
        raise ConfigError(str(error)) from None


class FamilyRanker(Generic[ModelT, ConfigT]):
    """A trained network of one family as a core ``Ranker``.

    ``checkpoint``: a stem or either file (default: the family's shipped ``variant``).
    ``embedder`` computes vectors the candidates or the query lack (default: the packaged
    MiniLM); it must be the model the checkpoint was trained on. ``device``: "cpu" (default),
    "cuda", ... ``threads``: torch CPU threads for the call (default 1: a few-hundred-node
    forward gains nothing from more, and on a busy CPU OpenMP threads waiting on each other
    made it 20x slower), restored after; ``None`` leaves torch's setting alone.
    """

    name: ClassVar[str]
    needs_embeddings: ClassVar[bool] = True  # query and object vectors are model inputs
    #: said once when the shipped checkpoint is loaded (what it is measured not to do)
    caveat: ClassVar[str | None] = None
    #: its warning's category: RankerUnfitWarning when the caveat says it does not fit (the
    #: evaluation then never chooses it), else GraphERWarning
    caveat_category: ClassVar[type[Warning]] = GraphERWarning

    def __init__(
        self,
        family: Family[ModelT, ConfigT],
        checkpoint: str | Path | None,
        *,
        variant: str | None = None,
        embedder: Embedder | None = None,
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ConfigError(
                f"{type(self).__name__}: threads must be a positive integer or None, "
                f"got {threads!r}"
            )
        self.family = family
        self.shipped = checkpoint is None
        self.path = family.default_path(variant) if checkpoint is None else Path(checkpoint)
        self._embedder = embedder
        self.device = device
        self.threads = threads
        self._checkpoint: tuple[ModelT, ConfigT] | None = None
        self._load_lock = threading.RLock()
        if self.shipped and self.caveat:
            warn_once(self.caveat, self.caveat_category)
        if not _in_event_loop():  # a bad checkpoint is refused at once, as always
            self._load()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a reranker sent to a worker process): the lock stays behind."""
        state = self.__dict__.copy()
        del state["_load_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._load_lock = threading.RLock()

    def _load(self) -> tuple[ModelT, ConfigT]:
        """The network and its config, read on first need. Built inside a coroutine (an async
        app making a wrapper), the ranker reads nothing then: the seconds of file IO and
        torch set-up would stall the event loop, and the async doors rank in a worker
        thread, where this load then happens."""
        with self._load_lock:
            if self._checkpoint is None:
                model, config = self.family.load(self.path, self.device)
                if self._embedder is not None:
                    self.family.check_embeddings(
                        config, config.embedding_dim, getattr(self._embedder, "name", None)
                    )
                self._checkpoint = (model, config)
                try:
                    self._loaded(model, config)
                except BaseException:
                    self._checkpoint = None
                    raise
            return self._checkpoint

    def _loaded(self, model: ModelT, config: ConfigT) -> None:
        """What a family sets up from its checkpoint (runs once, when it is read)."""

    @property
    def model(self) -> ModelT:
        """The trained network (read from the checkpoint on first use)."""
        return self._load()[0]

    @property
    def config(self) -> ConfigT:
        """The checkpoint's config (read with the network)."""
        return self._load()[1]

    @config.setter
    def config(self, value: ConfigT) -> None:
        self._checkpoint = (self._load()[0], value)

    @property
    def embedder(self) -> Embedder:
        """The given embedder, else the packaged one (refused if not the checkpoint's)."""
        if self._embedder is None:
            dim = self.config.embedding_dim
            self._embedder = default_embedder_checked(
                lambda name: self.family.check_embeddings(self.config, dim, name)
            )
        return self._embedder

    def describe(self) -> dict[str, Any]:
        """The checkpoint's config (what it was trained on, its validation metrics)."""
        return self.config.to_json()

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One score per candidate, in their order (none for no candidates)."""
        if check_rank_inputs(graph, seeds, context) == 0:
            return np.zeros(0)
        return self.score(graph, seeds, context)

    def score(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """The family's scores for at least one candidate (inputs already checked)."""
        raise NotImplementedError

    def check_dimension(self, size: int) -> None:
        """Refuse a vector of another size than the checkpoint's, naming both."""
        self.family.check_embeddings(self.config, size)

    def query_vector(self, context: RankContext) -> np.ndarray:
        """The given query vector, else the query text embedded; its size checked."""
        return query_vector(context, lambda: self.embedder, self.check_dimension, self.name)

    def object_vectors(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """One checked float32 row per candidate (missing ones embedded in one batch)."""
        return object_vectors(
            candidates, self.config.embedding_dim, lambda: self.embedder, self.check_dimension
        )

    def on_device(self, array: np.ndarray) -> Any:
        """``array`` as a tensor on the ranker's device (:func:`to_device`, as in training)."""
        return to_device(array, self.device)

    def arrays_on_device(self, *arrays: np.ndarray) -> list[Any]:
        """``arrays`` as tensors on the ranker's device, in one copy on a GPU
        (:func:`arrays_to_device`)."""
        return arrays_to_device(arrays, self.device)

    def infer(self, run: Callable[[OnDevice], Any]) -> np.ndarray:
        """``run(on_device)`` in inference mode with the call's threads; its tensor of scores
        back from the device as float64 numpy."""
        import torch

        with torch_threads(self.threads, self.device), torch.inference_mode():
            scores = run(self.on_device)
        return scores.detach().cpu().numpy().astype(np.float64)
