"""The zoo (tests/integration/zoo.py) as the project reads and serves it (#29): every group either
gets members, racks, assignments and offsets equal to what Kafka's own ``kafka-consumer-groups``
reports, or a skip with its reason in the collector's log, ``describe`` and ``verify``; ``describe``
says of every group whether its members can take a recommendation, and why not
(streaming.contracts.serving); a deleted topic stops its events and nothing else; the job writes no
recommendation for application to a group that cannot apply it, and ``verify`` and the collector's
``/metrics`` take the whole zoo. One zoo, one run (tests/integration/zoo_run.py), read by every case
here."""

from __future__ import annotations

import json
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming.apply.verification import Verdict
from streaming.contracts import events as ev
from streaming.contracts import serving

from .java_client import parse_assignment
from .zoo import DOOMED, GROUPS, JAVA_GROUPS, OFFSETS_ONLY, RACKS, REGEX, TOPICS, Zoo
from .zoo_members import compile_members
from .zoo_run import CHANGED, MEMBERS, ZooRun, run

pytestmark = pytest.mark.integration

EXPECTED = {"streams": serving.OBSERVE_ONLY, "sink": serving.UNAPPLIED,
            "rdk_classic": serving.UNAPPLIED, "rdk_consumer": serving.UNAPPLIED,
            "regex_classic": serving.UNAPPLIED, "regex_consumer": serving.UNAPPLIED,
            "doomed": serving.UNAPPLIED, "crowd": serving.UNAPPLIED,
            "offsets": serving.OBSERVE_ONLY, "share": serving.LAG_ONLY}
SKIPPED = {"connect": "protocol type connect", "kip1071": "KIP-1071"}
"""The groups the collector does not read, and words of the reason it gives."""


@pytest.fixture(scope="module")
def zoo_run(cfg, spark, tmp_path_factory) -> ZooRun:
    from streaming.embedded.detached import alive

    work = tmp_path_factory.mktemp("zoo")
    started = time.monotonic()
    zoo = Zoo(cfg.kafka.bootstrap_servers, work, compile_members(work / "classes"))
    try:
        zoo.start()
        formed = time.monotonic()
        result = run(cfg, spark, zoo)
    finally:
        pids = zoo.pids()
        zoo.stop()
    result.seconds = {"compiled and formed": round(formed - started, 1), **result.seconds,
                      "stopped": round(time.monotonic() - started, 1)}
    (work / "seconds.json").write_text(json.dumps(result.seconds))  # where the zoo's minutes go
    # what it saw, for the notes
    (work / "seen.json").write_text(json.dumps(_seen(result), default=str))
    assert not [p for p in pids if alive(p)], "zoo JVMs left running"
    yield result


def test_groups_not_read_are_said_with_their_reason(zoo_run):
    """Connect workers and KIP-1071 streams groups: once in the collector's log, in ``describe``
    (JSON and table) and ``verify``, never in an event."""
    zoo_run.needs("describe", "changes", "verify")
    skipped = zoo_run.before.snapshot.skipped
    for kind, words in SKIPPED.items():
        group = GROUPS[kind]
        assert skipped[group].kind == serving.NOT_READ and words in skipped[group].reason
        said = [m for m in zoo_run.before.logged + zoo_run.after.logged
                if m.startswith(f"group {group} ")]
        assert said == [f"group {group} not read: {skipped[group].reason}"]
        assert f"  {group}: {skipped[group].reason}" in zoo_run.described_table
        code, verdict = zoo_run.verified[group]
        assert (code, verdict["status"]) == (Verdict.NO_RECOMMENDATION.exit_status, "none")
        assert skipped[group].reason in verdict["reason"]
    assert {s["group"]: s["kind"] for s in zoo_run.described["skipped"]} == \
        {GROUPS[k]: serving.NOT_READ for k in SKIPPED}
    published = {e["group"] for e in zoo_run.before.events + zoo_run.after.events}
    assert not {GROUPS[k] for k in SKIPPED} & published


def test_members_as_kafka_consumer_groups_reports_them(zoo_run):
    zoo_run.needs("tool")
    members, rows = zoo_run.before.members, zoo_run.tool_members
    for kind in MEMBERS:
        ours = {m["client_id"]: m for m in members[GROUPS[kind]]["members"]}
        tool = {r["CLIENT-ID"]: r for r in rows if r["GROUP"] == GROUPS[kind]}
        assert set(ours) == set(tool) and len(tool) == MEMBERS[kind], kind
        for client_id, r in tool.items():
            m = ours[client_id]
            assert (r["CONSUMER-ID"], r["HOST"].lstrip("/")) == (m["member_id"], m["host"]), kind
            # the tool leaves the column out when no member of the group has an instance id
            assert (r.get("GROUP-INSTANCE-ID") or None) == m["instance_id"], kind
            assert parse_assignment(r["CURRENT-ASSIGNMENT"]) == {(t, int(p))
                                                                 for t, p in m["assigned"]}, kind
        # what each client says it holds is what Kafka says; Java and librdkafka send client.rack on
        # both protocols (subscription v3, KIP-848): librdkafka's as configured, Java's a, b, c by
        # member index
        if kind in zoo_run.clients:
            assert {cid: {(t, int(p)) for t, p in m["assigned"]} for cid, m in ours.items()} == \
                zoo_run.clients[kind], kind
        if kind in RACKS:
            assert {cid: m["rack"] for cid, m in ours.items()} == {f"{GROUPS[kind]}-{r}": r
                                                                   for r in RACKS[kind]}
        if kind in JAVA_GROUPS:
            assert all(m["rack"] == "abc"[int(cid.rsplit("-", 1)[1]) % 3]
                       for cid, m in ours.items()), kind
    assert members[GROUPS["rdk_consumer"]]["group_protocol"] == "consumer"
    assert members[GROUPS["streams"]]["protocol"] == "stream"
    assert members[GROUPS["rdk_classic"]]["protocol"] == "cooperative-sticky"
    # a regex subscription: the topics it matches, whether the client (classic) or the broker
    # (KIP-848) matches
    matched = sorted(t for t in TOPICS if re.fullmatch(REGEX, t))
    for kind in ("regex_classic", "regex_consumer"):
        assert {tuple(m["topics"]) for m in members[GROUPS[kind]]["members"]} \
            == {tuple(matched)}, kind
        # static members
        assert all(m["instance_id"] for m in members[GROUPS[kind]]["members"]), kind


def test_offsets_as_the_tool_reports_them(zoo_run):
    zoo_run.needs("tool")
    kinds = (*MEMBERS, "offsets")
    # the tool also prints "Consumer group 'zoo-offsets' has no active members." among its tables
    wanted = {GROUPS[k] for k in kinds}
    tool = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): r for r in zoo_run.tool_offsets
            if r["GROUP"] in wanted and r["CURRENT-OFFSET"]}
    ours = {k: r for k, r in zoo_run.before.lag.items() if not r.get("no_commit")}
    assert set(ours) == set(tool)
    for key, r in tool.items():
        assert (ours[key]["committed_offset"], ours[key]["end_offset"]) \
            == (int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"])), key
    assert {(t, p): ours[(GROUPS["offsets"], t, p)]["committed_offset"]
            for t, p in OFFSETS_ONLY} == OFFSETS_ONLY
    # the crowd commits its positions (0: its topic holds no record)
    assert {g for g, _, _ in tool} == wanted


def test_describe_says_how_each_group_is_served(zoo_run):
    """describe: every read group with its serving verdict and its owners, the others with why not
    read."""
    zoo_run.needs("describe")
    by_group = {g["group"]: g for g in zoo_run.described["groups"]}
    assert {k: by_group[GROUPS[k]]["serving"]["kind"] for k in EXPECTED} == EXPECTED
    assert "group.protocol=consumer" in by_group[GROUPS["rdk_classic"]]["serving"]["reason"]
    assert "co-partitioned" in by_group[GROUPS["streams"]]["serving"]["reason"]
    assert "Recommendations: observe-only: Kafka Streams" in zoo_run.described_table
    for kind in MEMBERS:
        owners = {(p["topic"], p["partition"]): p["consumer_id"]
                  for p in by_group[GROUPS[kind]]["partitions"]
                  if p["consumer_id"]}
        assert owners == {(t, int(p)): m["member_id"]
                          for m in zoo_run.before.members[GROUPS[kind]]["members"]
                          for t, p in m["assigned"]}, kind


def test_a_deleted_topic_stops_its_events_and_nothing_else(zoo_run):
    """The doomed group's topic deleted under its members: the collector says so once and publishes
    no lag or partitions of it; the group's members (holding nothing now) and offsets are read as
    Kafka's tool reports them."""
    zoo_run.needs("changes")
    after, group = zoo_run.after, GROUPS["doomed"]
    assert f"topic {DOOMED} does not exist (any more); no events for it" in after.logged
    assert not [e for e in after.events if e["type"] in (*ev.LAG_TYPES, ev.PARTITIONS) and
                (e.get("topic") == DOOMED)]
    assert {r["group"] for e in after.events if e["type"] in ev.LAG_TYPES
            for r in ev.readings(e)} >= \
        {GROUPS["streams"], GROUPS["rdk_classic"]}  # the other groups' lag goes on
    tool_members, tool_offsets = ([r for r in rows if r["GROUP"] == group]
                                  for rows in zoo_run.tool_doomed)
    assert {r["CLIENT-ID"]: parse_assignment(r["CURRENT-ASSIGNMENT"]) for r in tool_members} == \
        {m["client_id"]: {(t, int(p)) for t, p in m["assigned"]}
         for m in after.members[group]["members"]} == \
        {f"{group}-{i}": set() for i in range(JAVA_GROUPS["doomed"][1])}
    assert {(r["TOPIC"], int(r["PARTITION"])) for r in tool_offsets if r["CURRENT-OFFSET"]} == \
        set(after.snapshot.committed[group])


def test_the_job_serves_only_groups_that_can_apply(zoo_run):
    """The job over everything the collector published: the Streams app's membership change is
    written observe-only with its reason and never published; the librdkafka group's goes to the
    feed, said unapplied; every row's verdict is describe's; nothing the zoo made is rejected."""
    zoo_run.needs("describe", "job")
    by_group = {g["group"]: g["serving"]["kind"] for g in zoo_run.described["groups"]}
    rows = zoo_run.recommendations
    assert zoo_run.rejected == 0
    streams = [r for r in rows if r["group"] == GROUPS["streams"]]
    assert streams and all(r["mode"] == "observe"
                           and r["serving"].startswith("observe_only: Kafka Streams")
                           for r in streams)
    rdk = [r for r in rows if r["group"] == GROUPS["rdk_classic"]]
    assert rdk and all(r["mode"] == "auto" and r["serving"].startswith("unapplied: ") for r in rdk)
    for r in rows:
        assert r["serving"].split(":")[0] == by_group[r["group"]], r["group"]
        assert "membership_change" in r["triggers"], (r["group"], r["triggers"])
    fed = {m["group"] for m in zoo_run.feed}
    assert GROUPS["rdk_classic"] in fed
    assert not fed & {r["group"] for r in rows if r["mode"] == "observe"}
    assert {r["group"] for r in rows} <= {GROUPS[k] for k in CHANGED}


def test_a_share_group_is_read_for_its_lag_only(zoo_run):
    """The share group (KIP-932): read, shown as kafka-share-groups shows it, and never decided for:
    no members event reaches the job (test_share_groups.py checks its figures against Kafka's
    share-group tool)."""
    zoo_run.needs("describe", "verify")
    group = GROUPS["share"]
    shown = next(g for g in zoo_run.described["groups"] if g["group"] == group)
    assert shown["group_protocol"] == serving.SHARE and len(shown["members"]) == 1
    assert f"Share group '{group}'" in zoo_run.described_table
    assert not [e for e in zoo_run.before.events + zoo_run.after.events
                if e["group"] == group and e["type"] == ev.MEMBERS]
    assert zoo_run.verified[group][1]["status"] == "none"


def test_verify_takes_every_zoo_group(zoo_run):
    zoo_run.needs("verify")
    exits = {v.exit_status: v.label for v in Verdict}
    for group, (code, verdict) in zoo_run.verified.items():
        assert exits.get(code) == verdict.get("status"), (group, code, verdict)
    streams = zoo_run.verified[GROUPS["streams"]][1]["status"]
    assert streams in (Verdict.OBSERVED.label, Verdict.APPLIED.label)
    unchanged = set(GROUPS.values()) - {GROUPS[k] for k in CHANGED}
    assert {g: zoo_run.verified[g][1]["status"] for g in unchanged} \
        == {g: "none" for g in unchanged}


def test_the_collectors_metrics_cover_every_read_group(zoo_run):
    zoo_run.needs("metrics", "tool")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(zoo_run.metrics) for s in fam.samples}
    members = {dict(k[1])["group"]: v for k, v in samples.items()
               if k[0] == "kafka_rebalancer_group_members"}
    tool = {GROUPS[k]: sum(r["GROUP"] == GROUPS[k] for r in zoo_run.tool_members) for k in MEMBERS}
    assert members == {**tool, GROUPS["offsets"]: 0, GROUPS["share"]: 1}
    assert samples[("kafka_rebalancer_collector_polls_total", ())] >= 1
    assert samples[("kafka_rebalancer_metrics_dropped_groups", ())] == 0
    assert not [m for m in zoo_run.before.logged if "metrics failed" in m]


def _seen(zr: ZooRun) -> dict:
    """A few facts of the run for the notes (tests/integration/test_zoo.py writes them next to the
    zoo's logs)."""
    doomed = (zr.after.snapshot.committed.get(GROUPS["doomed"])
              if zr.after and zr.after.snapshot else None)
    return {"failed": sorted(zr.failed), "doomed_committed_after": sorted(doomed or {}),
            "recommendations": [(r["group"], r["mode"], r["triggers"], r["serving"])
                                for r in zr.recommendations],
            "feed": sorted({m["group"] for m in zr.feed}),
            "verified": {g: v.get("status") for g, (_, v) in zr.verified.items()}}
