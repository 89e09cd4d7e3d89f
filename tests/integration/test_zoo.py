"""The zoo (tests/integration/zoo.py) as the project reads it (#29): every group either gets members, racks,
assignments and offsets equal to what Kafka's own ``kafka-consumer-groups`` reports, or a skip with its reason
in the collector's log and ``describe``; and ``describe`` says of every group whether its members can take a
recommendation, and why not (streaming.contracts.serving)."""

from __future__ import annotations

import json
import logging

import pytest

from streaming.collector import Collector, CollectorOptions
from streaming.contracts import events as ev
from streaming.contracts import serving

from .java_client import consumer_groups, parse_assignment, parse_table, wait_for
from .zoo import GROUPS, OFFSETS_ONLY, RACKS, Zoo, compile_members

ZOO = r"^(zoo-|connect-zoo-)"
MEMBERED = ("streams", "sink", "rdk_classic", "rdk_consumer")
"""The zoo's groups with members that Kafka's consumer-group tool describes."""
EXPECTED = {"streams": serving.OBSERVE_ONLY, "sink": serving.UNAPPLIED, "rdk_classic": serving.UNAPPLIED,
            "rdk_consumer": serving.UNAPPLIED, "offsets": serving.OBSERVE_ONLY}
SKIPPED = {"connect": "protocol type connect", "share": "KIP-932"}


def _settled(collector: Collector) -> tuple[dict[str, dict], dict[tuple[str, str, int], dict]]:
    """The collector's latest members event of every membered group and its latest lag readings, once each
    membered group has had one (members events come on change only, so they are gathered over polls)."""
    members: dict[str, dict] = {}
    lag: dict[tuple[str, str, int], dict] = {}

    def check():
        for e in collector.poll_once():
            if e["type"] == "members":
                members[e["group"]] = e
            elif e["type"] in ev.LAG_TYPES:
                lag.update({(r["group"], r["topic"], r["partition"]): r for r in ev.readings(e)})
        return all(GROUPS[k] in members for k in MEMBERED)

    wait_for(check, 120, 1.0, "a members event of every membered zoo group")
    return members, lag


def _assert_members_as_the_tool_reports(zoo: Zoo, members: dict[str, dict]) -> None:
    rows = parse_table(consumer_groups(zoo.bootstrap, "--describe", "--members", "--verbose",
                                       *(a for k in MEMBERED for a in ("--group", GROUPS[k]))))
    for kind in MEMBERED:
        event = members[GROUPS[kind]]
        ours = {m["client_id"]: m for m in event["members"]}
        tool = {r["CLIENT-ID"]: r for r in rows if r["GROUP"] == GROUPS[kind]}
        assert set(ours) == set(tool), kind
        for client_id, r in tool.items():
            m = ours[client_id]
            assert r["CONSUMER-ID"] == m["member_id"]
            assert r["HOST"].lstrip("/") == m["host"]
            # the tool leaves the column out when no member of the group has an instance id
            assert (r.get("GROUP-INSTANCE-ID") or None) == m["instance_id"]
            assert parse_assignment(r["CURRENT-ASSIGNMENT"]) == {(t, int(p)) for t, p in m["assigned"]}, kind
        if kind in RACKS:  # librdkafka sends client.rack on both protocols; the clients hold what Kafka says
            held = {c.client_id: (c.rack, c.assignment()) for c in zoo.rdk[kind]}
            assert {cid: (m["rack"], {(t, int(p)) for t, p in m["assigned"]}) for cid, m in ours.items()} == held
    assert members[GROUPS["rdk_consumer"]]["group_protocol"] == "consumer"
    assert members[GROUPS["streams"]]["protocol"] == "stream"
    assert members[GROUPS["rdk_classic"]]["protocol"] == "cooperative-sticky"
    assert len(members[GROUPS["streams"]]["members"]) == 2  # two stream threads


def _assert_offsets_as_the_tool_reports(zoo: Zoo, lag: dict[tuple[str, str, int], dict]) -> None:
    kinds = (*MEMBERED, "offsets")
    rows = parse_table(consumer_groups(zoo.bootstrap, "--describe", "--offsets",
                                       *(a for k in kinds for a in ("--group", GROUPS[k]))))
    # the tool also prints "Consumer group 'zoo-offsets' has no active members." among its tables
    wanted = {GROUPS[k] for k in kinds}
    tool = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): r for r in rows
            if r["GROUP"] in wanted and r["CURRENT-OFFSET"]}
    ours = {k: r for k, r in lag.items() if not r.get("no_commit")}
    assert set(ours) == set(tool)
    for key, r in tool.items():
        assert (ours[key]["committed_offset"], ours[key]["end_offset"]) == (int(r["CURRENT-OFFSET"]),
                                                                            int(r["LOG-END-OFFSET"])), key
    assert {(t, p): ours[(GROUPS["offsets"], t, p)]["committed_offset"] for t, p in OFFSETS_ONLY} == OFFSETS_ONLY
    assert {g for g, _, _ in tool} == wanted


def _describe(cfg, capsys) -> dict:
    from streaming.cli import main

    capsys.readouterr()
    assert main(["describe", "--bootstrap", cfg.kafka.bootstrap_servers, "--groups", ZOO, "--format", "json",
                 "--lag-seconds-timeout", "0", "--conf", f"paths.tables={cfg.paths.tables}"]) == 0
    return json.loads(capsys.readouterr().out)


def _assert_skipped_with_reasons(collector: Collector, logged: list[str], members: dict[str, dict]) -> None:
    """Not read: said once in the collector's log, with the reason, and kept in the snapshot."""
    skipped = collector.last_snapshot.skipped
    for kind, words in SKIPPED.items():
        assert skipped[GROUPS[kind]].kind == serving.NOT_READ and words in skipped[GROUPS[kind]].reason
        said = [m for m in logged if m.startswith(f"group {GROUPS[kind]} ")]
        assert said == [f"group {GROUPS[kind]} not read: {skipped[GROUPS[kind]].reason}"]
    assert not {GROUPS[k] for k in SKIPPED} & set(members)


def _assert_describe(cfg, capsys, members: dict[str, dict]) -> None:
    """describe: every read group with its serving verdict and its owners, the others with why not read."""
    out = _describe(cfg, capsys)
    by_group = {g["group"]: g for g in out["groups"]}
    assert {k: by_group[GROUPS[k]]["serving"]["kind"] for k in EXPECTED} == EXPECTED
    assert "group.protocol=consumer" in by_group[GROUPS["rdk_classic"]]["serving"]["reason"]
    assert "co-partitioned" in by_group[GROUPS["streams"]]["serving"]["reason"]
    assert {s["group"]: s["kind"] for s in out["skipped"]} == {GROUPS[k]: serving.NOT_READ for k in SKIPPED}
    for kind in MEMBERED:
        owners = {(p["topic"], p["partition"]): p["consumer_id"] for p in by_group[GROUPS[kind]]["partitions"]
                  if p["consumer_id"]}
        assert owners == {(t, int(p)): m["member_id"] for m in members[GROUPS[kind]]["members"]
                          for t, p in m["assigned"]}, kind


@pytest.mark.integration
def test_every_kind_of_group_is_read_right_or_skipped_with_its_reason(cfg, tmp_path, caplog, capsys):
    zoo = Zoo(cfg.kafka.bootstrap_servers, tmp_path, compile_members(tmp_path / "classes"))
    collector = Collector(cfg, CollectorOptions(include=ZOO, client_rack_pattern=None, lag_form="partition"),
                          out=None)
    failed: list[str] = []
    try:
        zoo.start()
        with caplog.at_level(logging.INFO, logger="streaming.collector.poll"):
            members, lag = _settled(collector)
        logged = [r.getMessage() for r in caplog.records]
        # each part is checked even when another fails: one run of the zoo tells every misreading
        for name, check in (("skipped", lambda: _assert_skipped_with_reasons(collector, logged, members)),
                            ("members", lambda: _assert_members_as_the_tool_reports(zoo, members)),
                            ("offsets", lambda: _assert_offsets_as_the_tool_reports(zoo, lag)),
                            ("describe", lambda: _assert_describe(cfg, capsys, members))):
            try:
                check()
            except Exception as e:  # an assertion, or a tool's output not as expected: reported with the rest
                failed.append(f"{name}: {type(e).__name__}: {e}")
    finally:
        pids = zoo.pids()
        zoo.stop()
        collector.close()
    left = [p for p in pids if _alive(p)]
    assert not failed and not left, "\n\n".join([*failed, *([f"zoo JVMs left running: {left}"] if left else [])])


def _alive(pid: int) -> bool:
    from streaming.embedded.detached import alive

    return alive(pid)
