"""The progress lines without a JVM: what a progress event's JSON (as Spark writes it) becomes
through the listener's bridge, and the bounded lines. With real Spark:
tests/integration/test_metrics_endpoint.py reads the lines of a real run."""

from __future__ import annotations

import json
from types import SimpleNamespace

from streaming.job import progress

STATE = {"operatorName": "applyInPandasWithState", "numRowsTotal": 4, "numRowsUpdated": 2,
         "allUpdatesTimeMs": 311, "numRowsRemoved": 0, "allRemovalsTimeMs": 0,
         "commitTimeMs": 7, "memoryUsedBytes": 4096, "numRowsDroppedByWatermark": 0,
         "numShufflePartitions": 2, "numStateStoreInstances": 2,
         "customMetrics": {"loadedMapCacheHitCount": 4}}
SOURCE = {"description": "KafkaV2[Subscribe[lag,meta]]", "startOffset": {"lag": {"0": 10}},
          "endOffset": {"lag": {"0": 30}}, "latestOffset": {"lag": {"0": 30}},
          "numInputRows": 20, "inputRowsPerSecond": 10.0, "processedRowsPerSecond": 13.3,
          "metrics": {"avgOffsetsBehindLatest": "0.0"}}


def event(batch: int, name: str = "q", **fields) -> SimpleNamespace:
    """A Java progress event as py4j shows it: ``progress().json()`` is Spark's text."""
    doc = {"id": "9d0c9c5e-5f2c-4b8e-9a43-1f7f1b9c7a10",
           "runId": "0b4f2a57-36a8-4a0e-8e0f-5d7c2c6b1e21", "name": name,
           "timestamp": "2026-12-01T04:34:08.557Z", "batchId": batch, "batchDuration": 1490,
           "numInputRows": 20, "inputRowsPerSecond": 10.0, "processedRowsPerSecond": 13.4,
           "durationMs": {"addBatch": 1100, "queryPlanning": 359, "triggerExecution": 1490},
           "eventTime": {"watermark": "2025-11-21T04:40:00.000Z"},
           "stateOperators": [STATE], "sources": [SOURCE],
           "sink": {"description": "ForeachBatchSink", "numOutputRows": -1}} | fields
    text = json.dumps(doc)
    return SimpleNamespace(progress=lambda: SimpleNamespace(json=lambda: text))


def printer(out=None) -> tuple[progress.ProgressPrinter, SimpleNamespace]:
    writer = SimpleNamespace(counts={}, spent={})
    return progress.ProgressPrinter(writer, "q", out=out or (lambda _line: None)), writer


def test_a_progress_event_read_as_json_gives_the_batch_line_and_its_figures():
    printed: list[str] = []
    p, writer = printer(printed.append)
    writer.counts[7] = (2, 1)
    writer.spent[7] = {"check": 27, "compute": 763, "delta": 0, "feed": 0}
    bridge = progress._JsonEvents(p)
    bridge.onQueryProgress(event(7))
    bridge.onQueryProgress(event(8, name="another query"))  # not this printer's
    assert printed == ["batch 7: 20 input rows, 4 groups in state, 2 recommendations, 1 rejected "
                       "(late ones included), 0 dropped by Spark's watermark, 1490 ms"]
    (line,) = p.batches
    assert line | {"started": None} == {
        "batch": 7, "started": None, "input_rows": 20, "groups": 4, "recommendations": 2,
        "rejected": 1, "late": 0, "batch_ms": 1490, "state_update_ms": 311,
        "state_commit_ms": 7,
        "durations": {"addBatch": 1100, "queryPlanning": 359, "triggerExecution": 1490},
        "writer_ms": {"check": 27, "compute": 763, "delta": 0, "feed": 0}}
    assert writer.counts == {} and writer.spent == {}
    # a batch without a state operator, and the events the printer does not read
    bridge.onQueryProgress(event(9, stateOperators=[]))
    assert p.batches[-1]["groups"] == p.batches[-1]["late"] == 0
    for ignored in (bridge.onQueryStarted, bridge.onQueryIdle, bridge.onQueryTerminated):
        ignored(None)
    assert p.totals.batches == 2 and p.totals.last_batch == 9


def test_the_bridge_is_what_pyspark_registers():
    assert progress._JsonEvents.Java.implements == (progress.LISTENER_INTERFACE,)
    # PySpark's addListener and removeListener read the listener's _jlistener
    assert isinstance(vars(progress.ProgressPrinter)["_jlistener"], property)


def test_progress_lines_are_bounded_and_totals_count_every_batch():
    p, writer = printer()
    n = progress.RECENT_LINES + 500
    for b in range(n):
        writer.counts[b] = (1, 0)
        prog = SimpleNamespace(name="q", batchId=b, timestamp="t", numInputRows=1,
                               stateOperators=[], batchDuration=5, durationMs={})
        p.onQueryProgress(SimpleNamespace(progress=prog))
    assert len(p.batches) == progress.RECENT_LINES and p.batches[-1]["batch"] == n - 1
    assert (p.totals.batches, p.totals.recommendations, p.totals.last_batch) == (n, n, n - 1)
