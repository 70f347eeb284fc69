"""What a configuration costs per query, the budget the choice keeps to, and the load the
timings were taken under.

The budget is relative by default: at most :data:`DEFAULT_FACTOR` times the default's measured
cost per query (its median rerank call, plus re-embedding the pool where a configuration reads
vectors a store does not hand back). Five times, because the graph rankers a grid holds are
measured within about 1-3.5 times GCS's cost with their vectors at hand (Spider dev, 2 cores:
GCS 0.25 ms, PPR 0.37-0.63 ms, the GAT 0.79 ms; ``docs/first_pipeline.md``), so 5x keeps every
one of them with room for timing noise, while a configuration that re-embeds the pool on every
query (hundreds of times GCS's cost: 174 ms there) is set aside unless the user raises the
budget -- a cost a table column alone does not stop anyone from deploying. An absolute budget
in milliseconds, or none, can be given instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from grapher_core.errors import InputError

__all__ = ["DEFAULT_FACTOR", "CostBudget", "Load", "load_now"]

DEFAULT_FACTOR = 5.0
"""The default budget: this many times the default configuration's cost per query."""


@dataclass(frozen=True)
class CostBudget:
    """At most ``factor`` times the default's cost per query, or at most ``ms`` milliseconds,
    or (both ``None``) no budget."""

    factor: float | None = DEFAULT_FACTOR
    ms: float | None = None

    @classmethod
    def parse(cls, value: object) -> CostBudget:
        """``"5x"`` (times the default's cost), ``"200ms"`` or a number (milliseconds),
        ``"none"`` / ``None`` (no budget), or a :class:`CostBudget` as is."""
        if isinstance(value, CostBudget):
            return value
        if value is None:
            return cls(None, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls._checked(None, float(value), value)
        text = str(value).strip().lower()
        if text in ("none", "off", "inf"):
            return cls(None, None)
        try:
            if text.endswith("x"):
                return cls._checked(float(text[:-1]), None, value)
            return cls._checked(None, float(text.removesuffix("ms")), value)
        except ValueError:
            raise InputError(
                f"cost budget {value!r}: give a multiple of the default's cost ('5x'), "
                "milliseconds per query ('200ms'), or 'none'"
            ) from None

    @classmethod
    def _checked(cls, factor: float | None, ms: float | None, given: object) -> CostBudget:
        number = factor if factor is not None else ms
        if number is None or not number > 0 or number == float("inf"):
            raise InputError(f"cost budget {given!r} must be a positive finite number")
        return cls(factor, ms)

    def limit(self, default_ms: float | None) -> float | None:
        """The most a configuration may cost per query, in ms (``None``: no limit, or a
        relative budget with no measured default)."""
        if self.ms is not None:
            return self.ms
        if self.factor is None or default_ms is None:
            return None
        return self.factor * default_ms

    def describe(self, default_ms: float | None) -> str:
        """The budget in words, as the report states it."""
        limit = self.limit(default_ms)
        if limit is None:
            return "no cost budget"
        if self.ms is not None:
            return f"cost budget {_ms(limit)} per query"
        return (
            f"cost budget {self.factor:g}x the default's {_ms(default_ms)} = {_ms(limit)} per query"
        )


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} ms" if value < 100 else f"{value:,.0f} ms"


def load_now() -> tuple[float, float, float] | None:
    """The system's 1-, 5- and 15-minute load averages (``None`` where the OS has none)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class Load:
    """The conditions the timings were taken under: the 1-minute load average before and
    after measuring, the CPUs, and how many passes each timing is the median of."""

    before: float | None
    after: float | None
    cpus: int
    repeats: int

    @classmethod
    def around(cls, before: tuple[float, float, float] | None, repeats: int) -> Load:
        """The load from ``before`` (taken when measuring started) to now."""
        after = load_now()
        return cls(
            None if before is None else round(before[0], 2),
            None if after is None else round(after[0], 2),
            os.cpu_count() or 1,
            repeats,
        )

    def text(self) -> str:
        passes = f"each latency the median of {self.repeats} pass{'es' if self.repeats > 1 else ''}"
        if self.before is None or self.after is None:
            return f"{passes}; load average not available on {self.cpus} CPUs"
        return (
            f"{passes}, at load {self.before:.2f} -> {self.after:.2f} (1-min) on {self.cpus} CPUs"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "load_1min_before": self.before,
            "load_1min_after": self.after,
            "cpus": self.cpus,
            "repeats": self.repeats,
        }
