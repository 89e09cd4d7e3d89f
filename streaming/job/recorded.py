"""A DataFrame's projections, built once per JVM and replayed on each new source.

Validation's plan (:func:`streaming.job.validate.parse`) is ~1,400 Columns, and building a Column
costs py4j round trips: about 11,000 of them, 3 s of a warm start and more of a cold one
(``python -m benchmarks.start``). A Column is an unresolved expression that names its inputs, not a
DataFrame's, so the same Columns serve any source with the same columns. :class:`Recording` stands
in for the DataFrame while the plan is built, keeping each ``select``, ``withColumn`` and
``withColumns`` call with its Columns; :meth:`Recording.replay` makes those calls on a real
DataFrame. A process that starts the query more than once (the supervisor's restarts, the test
suite) then builds it once: the recording is kept per py4j gateway (a new JVM needs new Columns).

Only those three calls and ``transform`` are recorded; a builder that read the schema or ran an
action would fail on a Recording (``AttributeError``), not silently differ.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, cast

from pyspark.sql import Column, DataFrame

_Op = tuple[str, tuple[Any, ...]]


class Recording:
    """The calls a plan builder made on its DataFrame, in order."""

    def __init__(self, ops: tuple[_Op, ...] = ()) -> None:
        self.ops = ops

    def select(self, *cols: Column | str) -> Recording:
        return Recording((*self.ops, ("select", cols)))

    def withColumn(self, name: str, col: Column) -> Recording:
        return Recording((*self.ops, ("withColumn", (name, col))))

    def withColumns(self, cols: Mapping[str, Column]) -> Recording:
        return Recording((*self.ops, ("withColumns", (dict(cols),))))

    def transform(self, f: Callable[[Any], Any]) -> Any:
        return f(self)

    def replay(self, df: DataFrame) -> DataFrame:
        for name, args in self.ops:
            df = getattr(df, name)(*args)
        return df


_recordings: dict[Hashable, tuple[object, Recording]] = {}
"""key -> (the py4j gateway its Columns live in, the recording)."""
_lock = threading.Lock()


def replayed(key: Hashable, build: Callable[[DataFrame], DataFrame], df: DataFrame) -> DataFrame:
    """``build(df)``, with ``build``'s calls recorded the first time for this ``key`` in this JVM
    and replayed after. ``key`` must name everything ``build`` depends on."""
    gateway = df.sparkSession.sparkContext._gateway
    with _lock:
        kept = _recordings.get(key)
        if kept is None or kept[0] is not gateway:
            kept = gateway, cast(Recording, build(cast(DataFrame, Recording())))
            _recordings[key] = kept
    return kept[1].replay(df)
