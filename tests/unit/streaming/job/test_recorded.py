"""streaming.job.recorded: a plan's calls recorded once per key and JVM, replayed on each source.

A fake DataFrame stands in for Spark's: it keeps the calls made on it, so a replay can be compared
with the calls the builder makes on a DataFrame directly."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from streaming.job import recorded


class FakeFrame:
    def __init__(self, gateway: object, calls: tuple[Any, ...] = ()) -> None:
        self.calls = calls
        self.sparkSession = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=gateway))
        self._gateway = gateway

    def _then(self, call: Any) -> FakeFrame:
        return FakeFrame(self._gateway, (*self.calls, call))

    def select(self, *cols: Any) -> FakeFrame:
        return self._then(("select", cols))

    def withColumn(self, name: str, col: Any) -> FakeFrame:
        return self._then(("withColumn", name, col))

    def withColumns(self, cols: dict[str, Any]) -> FakeFrame:
        return self._then(("withColumns", tuple(cols.items())))

    def transform(self, f: Any) -> Any:
        return f(self)


def builder(built: list[int]) -> Any:
    def build(df: Any) -> Any:
        built.append(1)
        df = df.select("*", "a").withColumn("b", "col-b")
        return df.transform(lambda d: d.withColumns({"c": "col-c", "d": "col-d"})).select("b")
    return build


@pytest.fixture(autouse=True)
def empty() -> Any:
    recorded._recordings.clear()
    yield
    recorded._recordings.clear()


def test_a_replay_makes_the_builders_calls_in_order():
    gateway = object()
    direct = builder([])(FakeFrame(gateway))
    replayed = recorded.replayed("k", builder([]), FakeFrame(gateway))
    assert replayed.calls == direct.calls and len(direct.calls) == 4


def test_built_once_per_key_and_gateway():
    built: list[int] = []
    g1, g2 = object(), object()
    first = recorded.replayed("k", builder(built), FakeFrame(g1))
    again = recorded.replayed("k", builder(built), FakeFrame(g1))
    assert len(built) == 1 and again.calls == first.calls
    recorded.replayed("other", builder(built), FakeFrame(g1))
    assert len(built) == 2
    # a new JVM: the old Columns are not its own
    recorded.replayed("k", builder(built), FakeFrame(g2))
    assert len(built) == 3


def test_a_builder_that_reads_the_frame_fails_rather_than_differs():
    with pytest.raises(AttributeError):
        recorded.replayed("schema", lambda df: df.select(*df.columns), FakeFrame(object()))
