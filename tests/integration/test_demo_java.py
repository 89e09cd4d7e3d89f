"""``rebalancer demo --consumers java`` in-process (its :class:`JavaDemo`), shortened: the real
streaming job, collector and trigger feed, three Java consumers on the project's
RecommendationAssignor beside three on Kafka's range, one skewed topic. The run ends 20 s after the
member left, itself 40 s after the first recommendation was applied, so no outcome hangs on a fixed
clock:

- the Java group applies the job's recommendation, and its consumers then hold exactly what it says;
- over the 25 s before the member leaves, its max consumer lag averages below half of the range
  group's;
- once the member left, the leader falls back on the recommendation's load model (docs/deciding.md)
  and its log names the member.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from streaming.dev.demo.java import JavaDemo, JavaDemoOptions

from .java_client import build_assignor

pytestmark = pytest.mark.integration


def test_java_demo_applies_the_recommendation_beats_range_and_falls_back_when_a_member_leaves(
        cfg, spark, tmp_path):
    build_assignor()  # make java-assignor: DemoConsumer comes with the module
    tag = uuid.uuid4().hex[:6]
    options = JavaDemoOptions(
        duration_s=360, leave_after_applied_s=40, tail_s=20, window_s=25, collector_interval_s=2.0,
        trigger_interval="2 seconds", cooldown_s=600,
        group=dataclasses.replace(JavaDemoOptions().group, group=f"jdemo-{tag}",
                                  topic=f"jdemo-{tag}"),
        baseline_group=f"jdemo-range-{tag}", out_dir=tmp_path / "demo")
    lines: list[str] = []
    result = JavaDemo(cfg, options, spark, out=lines.append).run()
    s = result.summary
    print("\n".join(result.lines))

    assert s["first_recommendation_applied_at_s"] is not None, lines
    match = s["assignment_matches_recommendation"]
    assert match["matches"] and match["version"] == s["first_applied_version"], lines
    c = s["compared"]
    assert c["java_mean_max_consumer_lag"] < c["range_mean_max_consumer_lag"] / 2, c

    gone = s["member_left"]["client_id"]
    fallbacks = s["member_left"]["fallbacks"]
    assert any(f"recommended member {gone} is no longer in the group" in f["reason"]
               and f["assignor"] == "load-model" for f in fallbacks), lines
    # the leader's own log says it (one of the two members still in the group)
    logs = [p.read_text() for p in (result.out_dir / "java").glob(f"{options.group.group}-*.log")]
    assert any(f"recommended member {gone} is no longer in the group" in text
               and "load-model fallback"
               in text for text in logs)

    assert (result.out_dir / "lag-java.png").stat().st_size > 0
    assert any(ln.startswith("summary: Java consumers") for ln in result.lines)
