"""The stateful step's keyings on the real stack: keyed by group and by buckets of groups, the same
events give the same recommendations and rejected rows; Spark's bucket of a group is
:func:`buckets.bucket_of`'s; and a checkpoint refuses, with what to do, a configuration with another
state layout."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.errors import JobError
from streaming.job import buckets, query

from .test_job import STEP, T0, job_config, lag_poll, member, produce, rows

GROUPS = ["skewed-a", "skewed-b", "grüppe-ü", "calm"]


def events() -> list[dict]:
    out = []
    for g in GROUPS:
        out.append(ev.members_event(T0, g, 1, "range", [member("C0", [("t0", 0), ("t0", 1)]),
                                                         member("C1", [("t0", 2), ("t0", 3)])]))
        hot = g != "calm"
        for i in range(6):
            out += lag_poll(T0 + i * STEP, g,
                            {0: 9000 if hot else 100, 1: 8000 if hot else 100, 2: 100, 3: 100})
    # a members event whose member has no id: validation stops it; its row rides along to
    # rejected_events
    out.append({"type": "members", "ts": T0, "group": "calm", "generation": 2,
                "members": [{"topics": ["t0"], "assigned": []}]})
    return out


def run(spark, cfg, tag: str, state_buckets: int, checkpoint: str | None = None):
    jc = job_config(cfg, tag)
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, state_buckets=state_buckets,
                                                         max_offsets_per_trigger=20))
    return jc, query.run(spark, jc, available_now=True,
                         checkpoint=checkpoint or jc.checkpoint_path("layout"))


def outputs(spark, jc) -> tuple[list[str], list[str]]:
    """Both tables' rows, without what differs between runs by design: batch ids (a batch's size in
    bytes decides them), Kafka timestamps, and the run's own topic names."""
    def text(r) -> str:
        row = {k: v for k, v in r.asDict(recursive=True).items()
               if k not in ("batch_id", "kafka_timestamp")}
        return json.dumps(row, sort_keys=True, default=str) \
            .replace(jc.kafka.lag_topic, "LAG").replace(jc.kafka.metadata_topic, "META")
    return (sorted(text(r) for r in rows(spark, jc, RECOMMENDATIONS)),
            sorted(text(r) for r in rows(spark, jc, REJECTED)))


@pytest.fixture(scope="module")
def runs(spark, cfg):
    """The same events run keyed by group and by 8 buckets (each its own topics, tables and
    checkpoint)."""
    out = {}
    for n in (0, 8):
        tag = f"{uuid.uuid4().hex[:6]}"
        produce(job_config(cfg, tag), events())
        jc, batches = run(spark, cfg, tag, n)
        out[n] = (jc, batches)
    return out


def test_the_same_recommendations_and_rejections_whatever_the_keying(spark, runs):
    by_group, bucketed = (outputs(spark, runs[n][0]) for n in (0, 8))
    assert len(by_group[0]) >= 3 and len(by_group[1]) == 1
    assert bucketed == by_group
    assert len(runs[8][1]) > 3  # several batches: state carried across them in both layouts


def test_spark_places_each_group_in_bucket_of_and_keeps_them_apart(spark, runs):
    jc, _ = runs[8]
    checkpoint = jc.checkpoint_path("layout")
    keys = {r["key"]["bucket"] for r in spark.read.format("statestore").load(checkpoint).collect()}
    assert keys == {buckets.bucket_of(g, 8) for g in GROUPS}
    assert buckets.groups_in_state(spark, checkpoint, 8) == set(GROUPS)
    assert buckets.groups_in_state(spark, runs[0][0].checkpoint_path("layout"), 0) == set(GROUPS)


def test_a_checkpoint_refuses_another_layout_with_what_to_do(spark, cfg, runs):
    jc, _ = runs[8]
    checkpoint, tag = jc.checkpoint_path("layout"), jc.kafka.lag_topic.removeprefix("lag.")
    with pytest.raises(JobError) as err:
        run(spark, cfg, tag, 16, checkpoint)
    message = str(err.value)
    assert message.startswith(f"checkpoint {checkpoint} keeps its group state in 8 buckets of "
                              "groups")
    assert "set job.state_buckets = 8 to go on" in message and "start a new checkpoint" in message
    assert "Traceback" not in message and "StateSchema" not in message
    run(spark, cfg, tag, 8, checkpoint)  # the recorded layout goes on


def test_a_checkpoint_from_before_buckets_goes_on_keyed_by_group_only(spark, cfg, runs):
    from streaming.operations import hfs

    jc, _ = runs[0]
    checkpoint = jc.checkpoint_path("layout")
    # as a checkpoint made before job.state_buckets
    hfs.delete(spark, checkpoint, buckets.LAYOUT_FILE)
    tag = jc.kafka.lag_topic.removeprefix("lag.")
    with pytest.raises(JobError, match="keeps its group state by consumer group .* set "
                                       "job.state_buckets = 0"):
        run(spark, cfg, tag, 64, checkpoint)
    run(spark, cfg, tag, 0, checkpoint)
