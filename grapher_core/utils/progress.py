"""The one progress bar helper: a tqdm bar when asked for and installed, else a silent stand-in,
so callers never test for ``None``."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ProgressBar", "progress_bar"]


class ProgressBar(Protocol):
    def update(self, n: float = 1) -> Any: ...

    def close(self) -> None: ...


class _Silent:
    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(
    total: int,
    description: str,
    *,
    unit: str = "it",
    enabled: bool = True,
    min_total: int = 0,
    leave: bool = True,
) -> ProgressBar:
    """A bar on stderr (a widget in notebooks) when ``enabled``, ``total >= min_total`` and tqdm
    is installed (it is optional); otherwise one that does nothing."""
    if not enabled or total < min_total:
        return _Silent()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Silent()
    bar: ProgressBar = tqdm(
        total=total, desc=description, unit=unit, leave=leave, dynamic_ncols=True, smoothing=0.1
    )
    return bar
