"""The fuzz generator and the verdict on a run, without Kafka or Spark."""

from __future__ import annotations

import json

from streaming.dev import fuzz, fuzz_run

TS = 1_763_700_000_000


def test_generation_is_seeded_and_covers_every_kind():
    a = fuzz.generate(3, 2 * len(fuzz.KINDS), TS, 65_536)
    assert a == fuzz.generate(3, 2 * len(fuzz.KINDS), TS, 65_536)
    assert a != fuzz.generate(4, 2 * len(fuzz.KINDS), TS, 65_536)
    assert len(fuzz.KINDS) >= 50
    assert {r.kind for r in a} == set(fuzz.KINDS)
    assert all(sum(r.kind == k for r in a) == 2 for k in fuzz.KINDS)


def test_records_are_labelled_and_sized_from_the_limit():
    records = {r.kind: r for r in fuzz.generate(1, len(fuzz.KINDS), TS, 8192)}
    assert all(r.expected for r in records.values())
    assert len(records["huge_value"].value) > 8192
    assert len(records["huge_member_list"].value) <= 8192
    assert records["null_value"].value is None and records["null_key"].key is None
    valid = [r for r in records.values() if r.expected == fuzz.VALID]
    assert len(valid) >= 10
    for r in valid:  # an extreme-but-valid record is a JSON object keyed by its group (or has no key)
        event = json.loads(r.value)
        assert r.key is None or r.key.decode() == event["group"]
    assert records["ts_far_past"].expected == fuzz.LATE


def test_verdict_matches_by_source_and_reason():
    recs = fuzz.generate(2, len(fuzz.KINDS), TS, 8192)
    sent = [fuzz_run.Sent(r, ("t", 0, i)) for i, r in enumerate(recs)]
    perfect = [(s.source, s.record.expected if s.record.expected != fuzz.LATE else "late")
               for s in sent if s.record.expected != fuzz.VALID]
    v = fuzz_run.verdict(sent, perfect)
    assert v.ok and v.accepted == sum(r.expected == fuzz.VALID for r in recs)
    valid = next(s for s in sent if s.record.expected == fuzz.VALID)
    bad = next(s for s in sent if s.record.expected not in (fuzz.VALID, fuzz.LATE))
    worse = [x for x in perfect if x[0] != bad.source] + [(valid.source, "late"), (("t", 0, 10**6), "x")]
    v = fuzz_run.verdict(sent, worse)
    assert v.missing == [bad.record.kind] and v.valid_lost == [(valid.record.kind, "late")] and v.unexpected == 1
    assert not v.ok
