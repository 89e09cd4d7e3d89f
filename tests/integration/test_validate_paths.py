"""validate.parse has two paths: the collector's own lag events are recognised by a regex and read
from their text, everything else is parsed as a VARIANT. Both must give the same row for every
record: the same reason for a rejected one, the same values for a valid one. Checked on Spark (the
regex is Java's) over the fuzz corpus and over lag events at and just past every edge the fast
path's regex draws."""

from __future__ import annotations

import datetime as dt
import json
import random
import re

import pytest
from pyspark.sql import functions as F

from streaming.contracts import events as ev
from streaming.dev.fuzz import contract, kinds
from streaming.job import canonical, validate

LAG_TOPIC, META_TOPIC = "rebalancer.lag", "rebalancer.metadata"
NOW = 1_763_800_000_000
MAX_VALUE_BYTES = 64 * 1024
SKEW_MS = 600_000
RAW_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp "
              "timestamp, timestampType int")


def _canonical(ts=NOW, group="g", topic="t0", partition=3, committed=10, end=20, no_commit=None,
               start=None, count=None) -> str:
    """The collector's encoding, written out by hand so the strings may hold what json.dumps would
    escape."""
    text = (f'{{"type":"lag","ts":{ts},"group":"{group}","topic":"{topic}","partition":{partition},'
            f'"committed_offset":{committed},"end_offset":{end}')
    text += f',"log_start_offset":{start}' if start is not None else ""
    text += f',"no_commit":{json.dumps(no_commit)}' if no_commit is not None else ""
    return text + (f',"{ev.METADATA_EVENTS}":{count}}}' if count is not None else "}")


def _edges() -> list[tuple[str, str, str | None]]:
    """(value text, source topic, key) at and around every bound of the fast path."""
    texts = [
        _canonical(), _canonical(no_commit=True), _canonical(no_commit=False),
        *(_canonical(partition=p) for p in (0, 2**31 - 1, 2**31, 9_999_999_999, 10_000_000_000)),
        *(_canonical(committed=c, end=c) for c in (0, 10**18 - 1, 10**18, 2**63 - 1, 2**63)),
        _canonical(committed=20, end=10),
        *(_canonical(count=n) for n in (0, 1, 2**31 - 1, 2**31, 9_999_999_999, 10_000_000_000)),
        _canonical(start=4, no_commit=False, count=2), _canonical(no_commit=True, count=1),
        _canonical(count="01"), _canonical(count="-1"), _canonical(count="1.0"),
        _canonical(count='"1"'), _canonical(count="null"), _canonical(count=1).replace("}", ",}"),
        *(_canonical(ts=t) for t in (0, 1, NOW + SKEW_MS, NOW + SKEW_MS + 1, 10**17, 10**18 - 1,
                                     10**18)),
        *(_canonical(topic=t) for t in (".", "..", "...", "a" * 249, "a" * 250, "t-1._X", "t 1",
                                        "t/1", "")),
        *(_canonical(group=g) for g in ("}", "{}", "g}x", "é☃", "a b", "'", "x" * 32767,
                                        "x" * 32768, "", "tab\there", "del\x7f", "q\\\"uote",
                                        "\\u0067")),
        _canonical() + "\n", _canonical() + " ", " " + _canonical(), _canonical() + "}",
        _canonical() + "x", _canonical().replace('"ts":', '"ts": '),
        _canonical().replace("3,", "03,"), _canonical().replace('"partition":3', '"partition":-0'),
        _canonical().replace("10,", "10.0,"),
        _canonical().replace('"end_offset":20', '"end_offset":2e1'),
        _canonical().replace('"lag"', '"lag2"'),
        _canonical().replace('"ts":', '"ts":1,"ts":'),
        _canonical().replace('"no_commit":true', '"no_commit":1'),
        _canonical(no_commit=True).replace("true", "null"), _canonical()[:-1] + ',"extra":1}',
        _canonical().replace("{", "{ ", 1),
        # the log start offset: in range, at the end offset, past it, too long for the fast path,
        # not an integer, with no_commit, and after no_commit (not the collector's order: the
        # general path, as valid)
        *(_canonical(start=s) for s in (0, 5, 20, 21, 10**18 - 1, 10**18, "-1", "1.0", '"5"',
                                        "null")),
        _canonical(start=0, no_commit=True), _canonical(start=20, no_commit=False),
        _canonical(committed=2**63 - 1, end=2**63 - 1, start=2**63 - 1),
        _canonical(no_commit=True)[:-1] + ',"log_start_offset":3}',
    ]
    rows: list[tuple[str, str, str | None]] = []
    for text in texts:
        group = _group_of(text)
        rows += [(text, LAG_TOPIC, group), (text, LAG_TOPIC, None), (text, META_TOPIC, group),
                 (text, LAG_TOPIC, "other")]
    return rows


def _dense(ts=NOW, group="g", topic="t0", partitions=(0, 1, 2), committed=(5, 6, 7), ends=(9, 9, 9),
           **more: object) -> str:
    """A lag_dense text as the collector's encoding lays it out, with any field's JSON written
    verbatim (``contract.Raw``), repeated (``contract.Pairs``) or added."""
    def listed(x: object) -> object:
        return list(x) if isinstance(x, tuple) else x

    fields = {"type": "lag_dense", "ts": ts, "group": group, "topic": topic,
              "partitions": listed(partitions),
              "committed_offsets": listed(committed), "end_offsets": listed(ends)} | more
    return contract.to_json(fields)


def _dense_edges() -> list[str]:
    """lag_dense texts at and just past what the fast path's round trip takes
    (streaming.job.canonical)."""
    raw, big, long_max = contract.Raw, 2**63, 2**63 - 1
    return [
        _dense(), _dense(no_commit=[True, False, False]), _dense(log_start_offsets=[0, 6, 9]),
        _dense(no_commit=[False, True, None], log_start_offsets=[0, 0, 10]),
        # not the collector's order
        _dense(log_start_offsets=[0, 0, 0], no_commit=[True, True, True]),
        _dense(partitions=[0, 2**31 - 1, 2**31], committed=[0, 0, long_max],
               ends=[0, long_max, long_max]),
        _dense(committed=[raw(str(big)), 1, 1]), _dense(ends=[raw("9.0"), 9, 9]),
        _dense(ends=[raw("1e400"), 9, 9]),
        _dense(partitions=[raw("-0"), 1, 2]), _dense(partitions=[raw("01"), 1, 2]),
        _dense(partitions=["0", 1, 2]),
        _dense(partitions=[0, None, 2]), _dense(committed=[None, None, None]),
        _dense(no_commit=None), _dense(log_start_offsets=None), _dense(no_commit=[]),
        _dense(log_start_offsets=[None, None, None]),
        _dense(partitions=[1, 1, 2]), _dense(committed=[10, 6, 7]),
        _dense(log_start_offsets=[0, 10, 0]),
        _dense(partitions=[], committed=[], ends=[]), _dense(partitions=[0, 1]),
        _dense(partitions=5), _dense(partitions=[[0], 1, 2]), _dense(no_commit=["true", 0, 1]),
        _dense(extra=1), _dense(ts=raw("1.0")), _dense(ts=0), _dense(ts=NOW + SKEW_MS + 1),
        _dense(group=1), _dense(group=""), _dense(group="é☃"), _dense(group="tab\there"),
        _dense(group="q\"uote"), _dense(topic=".."), _dense(topic="t 1"),
        _dense(topic="a" * 250), _dense() + " ", _dense() + "\n", " " + _dense(), _dense() + "}",
        _dense() + "x", _dense().replace('"ts":', '"ts": '),
        _dense().replace("[0,1,2]", "[0, 1, 2]"),
        contract.to_json(contract.Pairs([("type", "lag_dense"), ("ts", NOW), ("ts", NOW),
                                         ("group", "g"), ("topic", "t0"), ("partitions", [0]),
                                         ("committed_offsets", [1]), ("end_offsets", [2])])),
        _dense(partitions=[raw("1" * 2000)]),
        _dense(committed=[raw("[" * 3000 + "]" * 3000), 6, 7]),
        _dense(partitions=list(range(5000)), committed=[7] * 5000, ends=[long_max] * 5000),
        _dense().replace('"lag_dense"', '"lag_dense2"'), _dense().replace("lag_dense", "LAG_DENSE"),
    ]


def _group_of(text: str) -> str | None:
    try:
        return str(json.loads(text)["group"])
    except Exception:
        return None


def _raw(spark, records: list[tuple[bytes | None, bytes | None, str]]):
    """Kafka-source rows (timestamp NOW) for (key, value, topic)."""
    stamp = dt.datetime.fromtimestamp(NOW / 1000, tz=dt.UTC)
    rows = [(k, v, t, i % 3, i, stamp, 0) for i, (k, v, t) in enumerate(records)]
    return spark.createDataFrame(rows, RAW_SCHEMA)


@pytest.fixture(scope="module")
def corpus(spark):
    records: list[tuple[bytes | None, bytes | None, str]] = []
    for r in kinds.generate(seed=5, n=4 * len(kinds.KINDS), ts=NOW - 60_000,
                           max_value_bytes=MAX_VALUE_BYTES):
        records.append((r.key, r.value, LAG_TOPIC if r.role == kinds.LAG_ROLE else META_TOPIC))
    for text, topic, key in _edges():
        records.append((None if key is None else key.encode(), text.encode(), topic))
    for text in _dense_edges():
        group = _group_of(text)
        records += [(None if group is None else str(group).encode(), text.encode(), LAG_TOPIC),
                    (None, text.encode(), META_TOPIC)]
    for group in (*NOT_UTF8, REPLACEMENT):
        records.append((group, _dense_bytes(group), LAG_TOPIC))
    rng = random.Random(7)
    for i in range(300):  # the collector's own events, as encode writes them
        event = ev.lag_event(NOW - rng.randrange(0, 10**6), f"group-{i % 17}", f"topic.{i % 5}",
                             rng.randrange(0, 64), c := rng.randrange(0, 10**12),
                             e := c + rng.randrange(0, 10**6), i % 9 == 0,
                             rng.randrange(0, e + 1) if i % 2 else None,
                             int(i % 10 == 0))  # a poll's count of its metadata now and then
        key, value = ev.encode(event)
        records.append((key, value, LAG_TOPIC))
    for i in range(60):  # and its lag_dense events
        n = rng.randrange(1, 40)
        committed = [rng.randrange(0, 10**15) for _ in range(n)]
        ends = [c + rng.randrange(0, 10**6) for c in committed]
        event = ev.dense_lag_event(NOW - rng.randrange(0, 10**6), f"group-{i % 17}",
                                   f"topic.{i % 5}", rng.sample(range(10**4), n), committed, ends,
                                   [rng.random() < 0.1 for _ in range(n)] if i % 3 == 0 else None,
                                   [rng.randrange(0, e + 1) for e in ends] if i % 2 else None,
                                   i % 3)
        key, value = ev.encode(event)
        records.append((key, value, LAG_TOPIC))
    records.append((b"g", b"\xff" + _canonical().encode()[1:], LAG_TOPIC))  # not UTF-8
    records.append((b"g", _canonical(group="\xe9").encode("latin-1"), LAG_TOPIC))
    return _raw(spark, records), records


NOT_UTF8 = (b"\xe9", b"\xed\xa0\x80")  # a Latin-1 byte; a lone surrogate's bytes
REPLACEMENT = "\ufffd".encode()  # what a reader makes of a byte it cannot decode, as valid UTF-8


def _dense_bytes(group: bytes) -> bytes:
    """A lag_dense text whose group is these bytes, verbatim."""
    return _dense(group="G").encode().replace(b'"G"', b'"' + group + b'"')


def _parsed(raw, fast_path: bool) -> list[dict]:
    out = validate.parse(raw, MAX_VALUE_BYTES, SKEW_MS, LAG_TOPIC, fast_path=fast_path)
    return [r.asDict() for r in out.orderBy("source_offset").collect()]


def test_both_paths_give_the_same_row_for_every_record(corpus):
    raw, records = corpus
    fast, general = _parsed(raw, True), _parsed(raw, False)
    assert len(fast) == len(general) == len(records)
    differ = [(records[a["source_offset"]][1], a, b) for a, b in zip(fast, general, strict=True)
              if a != b]
    assert not differ, differ[:3]


def test_the_fast_path_takes_the_collectors_events_and_some_edges(corpus):
    raw, records = corpus
    matches = F.col("value").cast("string").rlike(canonical.CANONICAL_LAG)
    fast = raw.select(F.coalesce(matches, F.lit(False)).alias("c"), "value").collect()
    taken = {bytes(r["value"]) for r in fast if r["c"]}
    encoded = [v for _, v, _ in records[-362:-62]]
    # every event the collector writes, those that count their poll's metadata too
    assert sum(ev.METADATA_EVENTS.encode() in v for v in encoded) == 30
    assert all(v in taken for v in encoded)
    # read fast, then rejected by the range rule
    assert _canonical(partition=2**31).encode() in taken
    assert _canonical(topic="..").encode() in taken
    # $ would match before a final newline; \z does not
    assert (_canonical() + "\n").encode() not in taken
    # 19 digits: the general path
    assert _canonical(committed=10**18, end=10**18).encode() not in taken
    assert _canonical(start=0, no_commit=True).encode() in taken \
        and _canonical(start=5).encode() in taken
    assert _canonical(start=4, no_commit=False, count=2).encode() in taken
    assert _canonical(count=2**31).encode() in taken  # read fast, then rejected by the range rule
    assert _canonical(count=10**10).encode() not in taken and \
        _canonical(count="01").encode() not in taken


def test_the_dense_fast_path_takes_the_collectors_events_and_no_text_that_differs(corpus):
    raw, records = corpus
    text = F.col("value").cast("string")
    read = canonical.dense_read(text, F.lit(True))
    rows = raw.select(canonical.is_exact(read, text).alias("exact"), read.alias("read"),
                      "value").collect()
    exact = {bytes(r["value"]): r["read"] for r in rows if r["exact"]}
    # every lag_dense event the collector writes, with its count of the poll's metadata or not
    assert all(v in exact for _, v, _ in records[-62:-2])
    assert sum(ev.METADATA_EVENTS.encode() in v for _, v, _ in records[-62:-2]) == 40
    for value, read_back in exact.items():  # what is taken means what the text says
        assert {k: v for k, v in read_back.asDict().items() if v is not None} == json.loads(value)
    assert _dense(no_commit=[False, True, None], log_start_offsets=[0, 0, 10]).encode() in exact
    for text_of in (_dense(committed=[contract.Raw(str(2**63)), 1, 1]),
                    _dense(ends=[contract.Raw("9.0"), 9, 9]),
                    _dense(partitions=["0", 1, 2]), _dense(no_commit=None), _dense(extra=1),
                    _dense() + " ", _dense(group=1),
                    _dense(log_start_offsets=[0, 0, 0], no_commit=[True, True, True])):
        assert text_of.encode() not in exact, text_of


def test_a_dense_text_read_exactly_is_utf8_and_any_other_is_checked(corpus):
    raw, records = corpus
    rows = {records[r["source_offset"]][1]: r for r in _parsed(raw, True)}
    # the reader turns the bytes into U+FFFD: read, never exactly, then rejected
    for group in NOT_UTF8:
        assert json.loads(rows[_dense_bytes(group)]["detail"])["reason"] \
            == "value is not valid UTF-8"
    assert rows[_dense_bytes(REPLACEMENT)]["type"] == "lag_dense"


def test_canonical_edge_cases_are_judged_by_the_rules(corpus):
    raw, records = corpus
    rows = {(records[r["source_offset"]][1], records[r["source_offset"]][2],
             records[r["source_offset"]][0]): r
            for r in _parsed(raw, True)}

    def reason(text: str, topic: str = LAG_TOPIC, key: str | None = "g") -> str | None:
        row = rows[(text.encode(), topic, None if key is None else key.encode())]
        return None if row["type"] else json.loads(row["detail"])["reason"]

    assert reason(_canonical()) is None
    assert reason(_canonical(partition=2**31)) == f"partition {2**31} above {2**31 - 1}"
    assert reason(_canonical(committed=20, end=10)) == "end_offset 10 below committed_offset 20"
    assert reason(_canonical(topic="..")) == "invalid topic name"
    assert reason(_canonical(ts=0)).startswith("ts 0 is not positive")
    assert reason(_canonical(ts=NOW + SKEW_MS + 1)).startswith(f"ts {NOW + SKEW_MS + 1} is more "
                                                               "than")
    assert reason(_canonical(), key="other") == "message key does not match group"
    assert reason(_canonical(), topic=META_TOPIC) == f"a lag event on topic {META_TOPIC}"
    assert reason(_canonical(group="x" * 32768), key="x" * 32768) \
        == "group longer than 32767 characters"
    assert reason(_canonical(start=20)) is None \
        and reason(_canonical(start=0, no_commit=True)) is None
    assert reason(_canonical(start=21)) == "log_start_offset 21 above end_offset 20"
    assert reason(_canonical(start="-1")) == "negative log_start_offset -1"
    assert reason(_canonical(start='"5"')) == "field log_start_offset is not an integer"
    assert reason(_canonical(start="null")) is None  # absent and null alike, as for no_commit
    assert reason(_canonical(count=2**31 - 1)) is None \
        and reason(_canonical(no_commit=True, count=1)) is None
    assert reason(_canonical(count=2**31)) == f"metadata_events {2**31} outside 0..{2**31 - 1}"
    assert reason(_canonical(count="-1")) == f"metadata_events -1 outside 0..{2**31 - 1}"
    assert reason(_canonical(count='"1"')) == "field metadata_events is not an integer"
    assert reason(_canonical(count="null")) is None


# The largest generated method spark_session.HUGE_METHODS was measured to let C2 compile:
# validation's fused whole-stage method at 23,505 bytes (benchmarks/results/job.txt, session 23).
# Without room for it, HotSpot interprets such a method for every record.
MEASURED_METHOD_BYTES = 23_505


def test_validations_generated_methods_stay_near_the_size_the_jit_options_were_measured_on(corpus):
    raw, _ = corpus
    out = validate.parse(raw, MAX_VALUE_BYTES, SKEW_MS, LAG_TOPIC)
    codegen = out._sc._jvm.PythonSQLUtils.explainString(out._jdf.queryExecution(), "codegen")
    sizes = [int(s) for s in re.findall(r"maxMethodCodeSize:(\d+)", codegen)]
    assert sizes, codegen[:500]
    # 25% of room; a larger method: measure with -XX:+LogCompilation that C2 still compiles it
    # (job.txt says how)
    assert max(sizes) <= MEASURED_METHOD_BYTES * 5 // 4, sizes
