"""The query's progress: one line per batch (:class:`ProgressPrinter`), its figures kept for the
run's summary and the metrics.

Spark hands each batch's progress to a listener. PySpark's own bridge reads the event's Java object
field by field: every Java map in it (the durations, the event time, each source's and state
operator's metrics) ends its iteration with a Java exception, and PySpark converts each such
exception by asking the JVM whether it is one of 14 classes, each question a name lookup that
misses and so scans every jar on the class path. On the job's small batches that was ~15% of the
driver JVM's CPU (JFR), competing with the batches for the cores. :class:`_JsonEvents` is this
listener's bridge instead: the progress as one JSON text, one py4j call, parsed by PySpark's own
``fromJson`` (as ``StreamingQuery.lastProgress`` reads it): x0.94 the CPU of a run of ~95 small
batches with production's JIT, no difference under C1 (``benchmarks/results/start.txt``).
"""

from __future__ import annotations

import json
from collections import deque
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StreamingQueryListener
from pyspark.sql.streaming.listener import QueryProgressEvent, StreamingQueryProgress

from streaming.operations.stopping import Totals

if TYPE_CHECKING:
    from streaming.job.sinks import BatchWriter

# Progress lines kept in memory (the last ones; totals are counted apart): a job that runs for
# months must not keep one per batch.
RECENT_LINES = 1000
LISTENER_INTERFACE = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
"""The Java interface PySpark's listener wrapper calls back through py4j."""


class _JsonEvents:
    """The py4j side of a listener: the events :class:`ProgressPrinter` reads, as JSON; the others
    ignored, as the printer ignores them."""

    def __init__(self, listener: StreamingQueryListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        progress = StreamingQueryProgress.fromJson(json.loads(jevent.progress().json()))
        self.listener.onQueryProgress(QueryProgressEvent(progress))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:
        implements = (LISTENER_INTERFACE,)


class ProgressPrinter(StreamingQueryListener):
    """One line per batch: input rows, keys in state, recommendations, rejected (the step rejects
    late rows itself, reason ``late``), rows Spark's watermark dropped (none by design), batch time.

    ``groups`` of a line is the state operator's row count: groups when keyed by group, buckets of
    groups otherwise (``state_keys`` names them in the printed line). ``batches`` holds the last
    :data:`RECENT_LINES` lines, ``totals`` counts them all."""

    def __init__(self, writer: BatchWriter, query_name: str, out=print, metrics=None,
                 state_keys: str = "groups") -> None:
        self.writer = writer
        self.query_name = query_name
        self.state_keys = state_keys
        self.out = out
        self.metrics = metrics
        self.batches: deque[dict] = deque(maxlen=RECENT_LINES)
        self.totals = Totals()
        self._jlistener_made: Any = None

    @property
    def _jlistener(self) -> Any:
        """The JVM's listener, bridged through :class:`_JsonEvents` (PySpark's ``addListener`` and
        ``removeListener`` read this property; its own bridge is what this module avoids)."""
        if self._jlistener_made is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            if jvm is None:
                raise RuntimeError("a listener is made for a running SparkContext")
            self._jlistener_made = jvm.PythonStreamingQueryListenerWrapper(_JsonEvents(self))
        return self._jlistener_made

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        if p.name != self.query_name:
            return
        state = p.stateOperators[0] if p.stateOperators else None
        recs, rejected = self.writer.counts.pop(p.batchId, (0, 0))
        line = {
            "batch": p.batchId, "started": p.timestamp, "input_rows": p.numInputRows,
            "groups": state.numRowsTotal if state else 0,
            "recommendations": recs, "rejected": rejected,
            "late": state.numRowsDroppedByWatermark if state else 0,
            "batch_ms": p.batchDuration,
            # where the batch's time went: the stateful step (its input read, Arrow both ways, the
            # Python function) and its state store commit, beside the whole batch
            "state_update_ms": state.allUpdatesTimeMs if state else 0,
            "state_commit_ms": state.commitTimeMs if state else 0,
            # Spark's own phases (addBatch holds the write, i.e. everything the writer spent)
            "durations": dict(p.durationMs or {}),
            "writer_ms": self.writer.spent.pop(p.batchId, {}),
        }
        self.batches.append(line)
        self.totals.add(line)
        if self.metrics is not None:
            self.metrics.observe_batch(p.batchId, p.numInputRows, p.batchDuration / 1000.0,
                                       line["groups"])
        self.out(
            f"batch {line['batch']}: {line['input_rows']} input rows, "
            f"{line['groups']} {self.state_keys} in state, {recs} recommendations, "
            f"{rejected} rejected (late ones included), {line['late']} dropped by Spark's "
            f"watermark, {line['batch_ms']} ms"
        )

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
