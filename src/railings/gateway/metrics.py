"""The gateway's metrics, in the Prometheus text exposition format (version 0.0.4).

A few fixed families, so a small writer is enough: no global registry, no process
state (each :class:`Metrics` belongs to one app), nothing to configure. Label
values are escaped as the format requires (backslash, double quote, newline).
Never a header, a key or a body in a label: only provider names, outcomes and reasons.
Token counts are counted by their source (:func:`count_usage`): a turn that reported no
usage is counted as estimated tokens or as unknown, never as nothing.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from typing import ClassVar

from railings.turn.model import Usage, UsageSource

__all__ = ["BUCKETS", "Metrics", "count_usage"]

# Seconds: from a millisecond (a cached or tiny answer) to ten minutes (a long turn).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Labels, extra: str = "") -> str:
    parts = [f'{k}="{_escape(v)}"' for k, v in labels]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last one is +Inf
        self.sum = 0.0


class Metrics:
    """Counters and histograms of one gateway; :meth:`render` is the exposition text."""

    COUNTERS: ClassVar[dict[str, str]] = {
        "railings_gateway_streams_total": "Streamed answers by provider and outcome "
        "(complete|partial|empty|refused).",
        "railings_gateway_upstream_attempts_total": "Requests sent upstream, retries included.",
        "railings_gateway_answers_total": "Non-streamed answers on the model paths, by outcome.",
        "railings_gateway_client_disconnects_total": "Model calls the client left before "
        "the end (the upstream read is stopped).",
        "railings_gateway_rejected_requests_total": "Requests refused before anything went "
        "upstream, by reason (too_large|body_timeout|overloaded|bad_path).",
        "railings_gateway_tokens_total": "Tokens of the turns judged, by provider, direction "
        "(input|output) and source (reported: the provider's count; estimated: railings' "
        "estimate of a count the provider never sent).",
        "railings_gateway_usage_unknown_total": "Turns judged whose count in a direction "
        "(input|output) is unknown: neither reported nor estimated.",
        "railings_gateway_refused_answers_total": "Upstream answers refused with a 502, by "
        "provider and reason (too_large|unreadable).",
        "railings_gateway_resumes_total": "Kept responses read again after their stream broke, "
        "by provider and outcome (streamed|refused|failed).",
    }
    HISTOGRAMS: ClassVar[dict[str, str]] = {
        "railings_gateway_time_to_first_byte_seconds": "From the request to the first body "
        "byte sent to the client.",
        "railings_gateway_stream_duration_seconds": "From the request to the end of the "
        "response sent to the client.",
    }

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = {name: {} for name in self.COUNTERS}
        self._histograms: dict[str, dict[Labels, _Histogram]] = {
            name: {} for name in self.HISTOGRAMS
        }

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        """Add ``amount`` to the counter ``name`` with these labels."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._counters[name]
            series[key] = series.get(key, 0) + amount

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """Count ``seconds`` in the histogram ``name`` with these labels."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            histogram = self._histograms[name].setdefault(key, _Histogram())
            histogram.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            histogram.sum += seconds

    def value(self, name: str, **labels: str) -> float:
        """A counter's current value summed over its series that carry ``labels`` (as a
        Prometheus ``sum`` without the other labels would): 0 when none does."""
        wanted = set(labels.items())
        with self._lock:
            return sum(v for key, v in self._counters[name].items() if wanted <= set(key))

    def render(self) -> str:
        """Every series in the Prometheus text exposition format."""
        with self._lock:
            return "".join(self._render_counters()) + "".join(self._render_histograms())

    def _render_counters(self) -> Iterable[str]:
        for name, help_text in self.COUNTERS.items():
            yield f"# HELP {name} {help_text}\n# TYPE {name} counter\n"
            for labels, value in sorted(self._counters[name].items()):
                yield f"{name}{_labels(labels)} {_number(value)}\n"

    def _render_histograms(self) -> Iterable[str]:
        for name, help_text in self.HISTOGRAMS.items():
            yield f"# HELP {name} {help_text}\n# TYPE {name} histogram\n"
            for labels, h in sorted(self._histograms[name].items()):
                cumulative = 0
                for bound, count in zip((*BUCKETS, float("inf")), h.counts, strict=True):
                    cumulative += count
                    le = "+Inf" if bound == float("inf") else _number(bound)
                    bucket = _labels(labels, 'le="' + le + '"')
                    yield f"{name}_bucket{bucket} {cumulative}\n"
                yield f"{name}_sum{_labels(labels)} {_number(h.sum)}\n"
                yield f"{name}_count{_labels(labels)} {cumulative}\n"


def count_usage(metrics: Metrics, provider: str, usage: Usage) -> None:
    """Count one judged turn's usage: each count under its direction and source, and a
    count that is unknown as one turn of ``railings_gateway_usage_unknown_total``. The
    labels are bounded: a provider name, two directions, two sources."""
    for direction, tokens, source in (
        ("input", usage.input_tokens, usage.input_source),
        ("output", usage.output_tokens, usage.output_source),
    ):
        if tokens is None or source is UsageSource.UNKNOWN:
            unknown = "railings_gateway_usage_unknown_total"
            metrics.inc(unknown, provider=provider, direction=direction)
        else:
            metrics.inc(
                "railings_gateway_tokens_total",
                tokens,
                provider=provider,
                direction=direction,
                source=source.value,
            )
