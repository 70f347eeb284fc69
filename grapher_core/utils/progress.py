"""Progress on long work, in one place: :func:`progress_bar` (a tqdm bar when asked for and
installed, else a silent stand-in, so callers never test for ``None``) and :class:`Progress` (a
one-line counter on stderr for the command line, which cannot count on tqdm)."""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO

__all__ = ["Progress", "ProgressBar", "progress_bar"]


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


class Progress:
    """A one-line counter on stderr for long work, without tqdm (an extra the core lacks).

    Nothing is shown for work done within ``delay`` seconds; then at most one update per
    ``every`` seconds: redrawn in place on a terminal, a new line (every 10 s) in a log."""

    def __init__(
        self,
        total: int,
        label: str,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        delay: float = 1.0,
    ) -> None:
        self.total = total
        self.label = label
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.started = time.monotonic()
        self.delay = delay
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = 0.5 if self._tty else 10.0
        self._last = self.started + delay - self.every
        self._shown = False

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last >= self.every and now - self.started >= self.delay:
            self._last = now
            self._write(now)

    def _write(self, now: float) -> None:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        line = f"{self.label}: {self.done:,}/{self.total:,} ({elapsed:.0f} s, ~{left:.0f} s left)"
        self.stream.write(("\r" + line + "\x1b[K") if self._tty else line + "\n")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """End the line (a terminal) once something was shown."""
        if self._shown and self._tty:
            self.stream.write("\n")
            self.stream.flush()
