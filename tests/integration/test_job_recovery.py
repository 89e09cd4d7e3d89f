"""State lifetime of the streaming job: a group silent past the timeout leaves the state.

(Kills and restarts are covered by test_chaos.py: every column of both tables and the trigger feed
after SIGKILLs at random moments and between the Delta commit and the feed write. Other faults:
test_faults.py.)
"""

from __future__ import annotations

import dataclasses
import uuid

from streaming.contracts import events as ev
from streaming.job import buckets, query

from .test_job import STEP, T0, job_config, lag_poll, member, produce


def test_group_silent_past_the_timeout_leaves_the_state(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, group_timeout_s=600,
                                                         watermark_delay="1 minute"))
    events = [ev.members_event(T0, "silent", 1, "range", [member("C0", [("t0", 0)])]),
              *lag_poll(T0, "silent", {0: 10})]
    # another group keeps talking for 20 minutes of event time: the watermark passes silent's
    # deadline
    events.append(ev.members_event(T0, "active", 1, "range", [member("C0", [("t0", 0)])]))
    for i in range(0, 20 * 60_000 // STEP, 6):
        events += lag_poll(T0 + i * STEP, "active", {0: 10})
    produce(jc, events)
    checkpoint = jc.checkpoint_path("timeout")
    query.run(spark, jc, available_now=True, checkpoint=checkpoint)

    groups = buckets.groups_in_state(spark, checkpoint, jc.job.state_buckets)
    assert groups == {"active"}
