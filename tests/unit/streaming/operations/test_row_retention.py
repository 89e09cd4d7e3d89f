"""The job's own row retention (streaming.operations.row_retention): a round when due, never failing
the batch."""

from __future__ import annotations

import dataclasses

import pytest

from streaming import config
from streaming.operations import delta_tables, row_retention


def _conflict() -> Exception:
    from delta.exceptions.base import ConcurrentAppendException

    return ConcurrentAppendException("a concurrent WRITE added data")


@pytest.fixture
def calls(monkeypatch):
    made: list[tuple[str, float]] = []

    def fake(kind):
        def expire(spark, location, days):
            made.append((kind, days))
            return 3
        return expire

    monkeypatch.setattr(delta_tables, "expire_recommendations", fake("recommendations"))
    monkeypatch.setattr(delta_tables, "expire_rejected", fake("rejected"))
    return made


def _cfg(**maintenance) -> config.Config:
    cfg = config.load()
    return dataclasses.replace(cfg, maintenance=dataclasses.replace(cfg.maintenance, **maintenance))


def test_a_round_every_expire_every_s_after_the_start(calls):
    now = [100.0]
    r = row_retention.Retention(_cfg(expire_every_s=600, recommendations_retention_days=90,
                                 rejected_retention_days=30), clock=lambda: now[0])
    assert r.after_batch(None) == {} and calls == []
    now[0] += 600
    assert r.after_batch(None) == {"recommendations": 3, "rejected_events": 3}
    assert calls == [("recommendations", 90), ("rejected", 30)]
    now[0] += 599
    assert r.after_batch(None) == {} and len(calls) == 2
    now[0] += 1
    assert r.after_batch(None) == {"recommendations": 3, "rejected_events": 3}


def test_off_and_kept_tables_are_not_touched(calls):
    assert row_retention.Retention(_cfg(expire_every_s=0)).after_batch(None) == {}
    r = row_retention.Retention(_cfg(expire_every_s=1, rejected_retention_days=0),
                                clock=lambda: 5.0)
    r.due = 0.0
    assert r.after_batch(None) == {"recommendations": 3} and calls == [("recommendations", 90.0)]


def test_a_conflict_or_any_failure_skips_the_round_not_the_batch(monkeypatch, caplog):
    def conflicting(spark, location, days):
        raise _conflict()

    def broken(spark, location, days):
        raise OSError("disk gone")

    monkeypatch.setattr(delta_tables, "expire_recommendations", conflicting)
    monkeypatch.setattr(delta_tables, "expire_rejected", broken)
    now = [0.0]
    r = row_retention.Retention(_cfg(expire_every_s=10), clock=lambda: now[0])
    now[0] = 10.0
    with caplog.at_level("INFO"):
        assert r.after_batch(None) == {}
    assert "met a concurrent commit" in caplog.text and "row retention failed" in caplog.text
    assert r.due == 20.0

