"""Hypothesis strategies for Kafka records drawn from the event contract
(:mod:`streaming.contracts.events`).

Every field of the four event types is drawn inside its contract (mostly) and at and beyond its
bounds: integers at 0, 1, 2^31-1, 2^53±1, 2^63-1 and one past each, negative, floats where integers
belong, numbers too large for any type; strings empty, huge, unicode (lone surrogates included),
with control characters; every field sometimes of another JSON type, missing, or duplicated
(``duplicate key``); values nested deeper than a parser allows, trailing data, keys that do not
match. A ``lag_dense`` event's entries are drawn so, one by one (a bad entry among good ones,
partitions repeated), and its arrays now and then of unequal length, empty or not arrays.
:func:`scenario` draws whole groups (members, partitions, polls of lag in either form) whose lags
sit at those bounds, so records that pass validation also reach the stateful step's figures.

A drawn record has no expected reason: the contract's promise is that each one is either valid (and
every figure it feeds exact or bounded) or rejected with a reason, never that it stops the query.
Used by the property tests and by ``python -m streaming.dev.fuzz --contract`` (seeded:
:func:`streaming.dev.fuzz.seeded.draw`).

Dev tool only: hypothesis is never imported by production modules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.contracts import member_load
from streaming.dev.fuzz.kinds import ANY, LAG_ROLE, META_ROLE, Record
from streaming.dev.fuzz.seeded import draw

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
EDGES = (0, 1, 2, INT_MAX - 1, INT_MAX, INT_MAX + 1, 2**53 - 1, 2**53, 2**53 + 1, LONG_MAX - 1,
         LONG_MAX, LONG_MAX + 1, 2**64, -1, -(2**31), -(2**63), -(2**63) - 1, 10**30)
TOPIC_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
MAX_DEPTH = 2_000
"""Nesting deeper than Spark's JSON parser allows (it refuses at 1,000)."""


class Raw(str):
    """JSON text written as it is (``1e400``, ``1000.0``, ``-0``, ``NaN``): numbers Python cannot
    hold."""


class Pairs(list):
    """A JSON object as (key, value) pairs: keys may repeat."""


def to_json(value: Any) -> str:
    """Compact JSON of ``value``, with :class:`Raw` verbatim and :class:`Pairs` as objects (repeats
    kept)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Pairs):
        return "{" + ",".join(f"{json.dumps(k)}:{to_json(v)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return to_json(Pairs(value.items()))
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return json.dumps(value)


def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in [lo, hi], its bounds and the contract's edges inside it weighted up."""
    inside = sorted({lo, lo + 1, hi - 1, hi, *(e for e in EDGES if lo <= e <= hi)})
    return st.one_of(st.sampled_from(inside), st.integers(lo, hi))


def beyond(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers out of [lo, hi]: just past each bound, and every edge of :data:`EDGES` outside it
    (the far ends of a long among them: arithmetic on a value before it is checked overflows there,
    and ANSI mode raises)."""
    return st.sampled_from(sorted({lo - 1, hi + 1, *(e for e in EDGES if not lo <= e <= hi)}))


def wrong_json() -> st.SearchStrategy[Any]:
    """A value of some JSON type, or a number no type holds."""
    return st.one_of(st.none(), st.booleans(), st.sampled_from(EDGES),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                     st.sampled_from([Raw("1e400"), Raw("1000.0"), Raw("-0"), Raw("1E2"),
                                      Raw("0.5"), [], {}, [1], {"a": 1}, "1", "", Raw("-1e-400")]))


def field(valid: st.SearchStrategy[Any],
          bad: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[Any]:
    """Mostly ``valid``; else out of contract (``bad``, another JSON type)."""
    bad = wrong_json() if bad is None else st.one_of(bad, wrong_json())
    return st.tuples(odds(12), valid, bad).map(lambda t: t[2] if t[0] else t[1])


def odds(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n + 1`` draws. (Hypothesis draws one of equal branches of ``one_of``
    once, and favours small integers and a list's first entries: the rare case is a value from the
    middle.)"""
    return st.integers(0, n).map(lambda i: i == n // 2)


def topic_names() -> st.SearchStrategy[str]:
    return st.text(TOPIC_CHARS, min_size=1, max_size=12).filter(lambda t: t not in (".", ".."))


def bad_topics() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(["", ".", "..", "a" * 250, "t 1", "t/1", "é"]),
                     st.text(max_size=20))


def groups() -> st.SearchStrategy[str]:
    """Group ids: short names, unicode, and at and past the protocol's 32,767 characters."""
    return st.one_of(st.text(TOPIC_CHARS, min_size=1, max_size=10),
                     st.text(st.characters(exclude_categories=["Cc"]), min_size=1, max_size=20),
                     st.sampled_from(["x" * 32767, "é" * 32767, "☃", "q\"uote", "\\", "}"]))


def bad_groups() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(["", "x" * 32768, "tab\there", "del\x7f", "\ud800"]),
                     st.text(max_size=10))


def offsets() -> st.SearchStrategy[tuple[int, int]]:
    """(committed, end) inside the contract: 0 <= committed <= end <= 2^63-1."""
    return st.tuples(ints(0, LONG_MAX), ints(0, LONG_MAX)).map(lambda ce: (min(ce), max(ce)))


def moving(base: int, lag: int, poll: int) -> tuple[int, int]:
    """(committed, end) of a partition at poll ``poll``: ``lag`` behind, the committed offset moving
    on by 1,000 a poll (else the partition reads as stuck and leaves the skew reading) unless the
    lag leaves no room."""
    room = LONG_MAX - lag - 10_000
    committed = min(base, room) + 1_000 * poll if room >= 0 else LONG_MAX - lag
    return committed, committed + lag


def lag_fields(ts: int) -> st.SearchStrategy[dict[str, Any]]:
    """A lag event's fields, each drawn from :func:`field`."""
    return st.fixed_dictionaries({
        "type": field(st.just(ev.LAG), st.sampled_from(["members", "LAG", "lag2"])),
        "ts": field(ts_near(ts), st.sampled_from([0, -1, LONG_MAX, LONG_MAX + 1])),
        "group": field(groups(), bad_groups()),
        "topic": field(topic_names(), bad_topics()),
        "partition": field(ints(0, INT_MAX), beyond(0, INT_MAX)),
        "committed_offset": field(ints(0, LONG_MAX), beyond(0, LONG_MAX)),
        "end_offset": field(ints(0, LONG_MAX), beyond(0, LONG_MAX)),
    }, optional={"no_commit": field(st.booleans()), "extra": wrong_json(),
                 # drawn apart from the offsets: above end_offset now and then, which the contract
                 # refuses
                 ev.LOG_START: field(ints(0, LONG_MAX), beyond(0, LONG_MAX)),
                 ev.METADATA_EVENTS: field(ints(0, INT_MAX), beyond(0, INT_MAX))})


DENSE_FLAWS = ("short partitions", "short committed_offsets", "short end_offsets",
               "short no_commit", f"short {ev.LOG_STARTS}", "empty", "partitions not a list",
               "no_commit not a list", f"{ev.LOG_STARTS} not a list")
"""How a ``lag_dense`` event's shape is broken now and then (the whole record is then rejected)."""


def dense_entries() -> st.SearchStrategy[list[tuple[Any, Any, Any, Any, Any]]]:
    """(partition, committed, end, no_commit, log start) of each entry, each value now and then out
    of contract; partitions at the bounds, so that some repeat; the log start at or under the
    committed offset mostly, past it (records lost: valid) or past the end (refused) now and
    then."""
    entry = st.tuples(field(ints(0, INT_MAX), beyond(0, INT_MAX)), offsets(),
                      field(st.none(), beyond(0, LONG_MAX)), field(st.none(), beyond(0, LONG_MAX)),
                      field(st.booleans()),
                      field(st.floats(0, 1), st.one_of(beyond(0, LONG_MAX), st.just(1.5))))
    return st.lists(entry, min_size=1, max_size=6).map(lambda es: [
        (p, ce[0] if bad_c is None else bad_c, ce[1] if bad_e is None else bad_e, flag,
         _log_start(ce, at))
        for p, ce, bad_c, bad_e, flag, at in es])


def _log_start(committed_end: tuple[int, int], at: Any) -> Any:
    """A log start ``at`` of the way to the committed offset (0..1), 1.5 of the way to the end (past
    the committed offset: lost records), or ``at`` itself when it is out of contract."""
    if not isinstance(at, float) or not (0 <= at <= 1 or at == 1.5):
        return at  # out of contract (a float such as -1.7e308 too: its product overflows)
    committed, end = committed_end
    return int(committed * at) if at <= 1 else committed + (end - committed) // 2


def dense_fields(ts: int) -> st.SearchStrategy[dict[str, Any]]:
    """A ``lag_dense`` event's fields: the common ones drawn as for ``lag``, then the arrays of its
    entries."""
    def build(common: dict[str, Any], entries: list[tuple[Any, Any, Any, Any, Any]], flags: bool,
              starts: bool, flaw: str, wrong: Any, count: Any) -> dict[str, Any]:
        names = [*ev.DENSE_ARRAYS, "no_commit", ev.LOG_STARTS]
        arrays = {n: [e[i] for e in entries] for i, n in enumerate(names)
                  if (n != "no_commit" or flags) and (n != ev.LOG_STARTS or starts)}
        if flaw.startswith("short ") and flaw[6:] in arrays:
            arrays[flaw[6:]] = arrays[flaw[6:]][:-1]
        elif flaw == "empty":
            arrays = {n: [] for n in arrays}
        elif flaw.endswith(" not a list"):
            arrays[flaw.split()[0]] = wrong
        # last, as the collector writes it (where the dense fast path reads it), when drawn
        return common | arrays | ({} if count is _ABSENT else {ev.METADATA_EVENTS: count})

    common = st.fixed_dictionaries({
        "type": field(st.just(ev.LAG_DENSE), st.sampled_from([ev.LAG, "LAG_DENSE"])),
        "ts": field(ts_near(ts)), "group": field(groups(), bad_groups()),
        "topic": field(topic_names(), bad_topics())})
    flaw = st.tuples(odds(8), st.sampled_from(DENSE_FLAWS)).map(lambda t: t[1] if t[0] else "none")
    count = st.one_of(st.just(_ABSENT), st.just(_ABSENT), field(ints(0, INT_MAX),
                                                             beyond(0, INT_MAX)))
    return st.builds(build, common, dense_entries(), st.booleans(), st.booleans(), flaw,
                     wrong_json(), count)


_ABSENT = object()
"""An optional field not drawn."""


def ts_near(ts: int) -> st.SearchStrategy[int]:
    """Event times up to 100 s before ``ts`` (on time for the runs that use this), some before the
    watermark."""
    return st.one_of(st.integers(ts - 100_000, ts), st.sampled_from([1, 2, ts - 10**9]))


def loads() -> st.SearchStrategy[dict[str, Any]]:
    """A member's ``load`` (:mod:`streaming.contracts.member_load`): ``busy`` in 0..1 at and past
    its bounds, ``records_per_s`` up to the contract's most and past it, ``record_cost_s``
    (optional) at 0, its most and past both, ``records_lag_min`` (optional) at 0, an offset's most
    and past both, numbers too large for a double, integers where floats belong and floats where
    integers do."""
    busy = st.one_of(st.floats(0, 1), st.sampled_from([0, 1, 0.0, 1.0]))
    bad_busy = st.one_of(st.sampled_from([-0.01, 1.0001, 2, -1]), st.just(Raw("1e400")))
    rate = st.one_of(st.floats(0, member_load.MAX_RECORDS_PER_S), ints(0, 10**6))
    bad_rate = st.one_of(st.sampled_from([-1, -0.5, 1e13]), st.just(Raw("1e400")))
    cost = st.one_of(st.none(), st.floats(0, member_load.MAX_RECORD_COST_S, exclude_min=True),
                     st.sampled_from([member_load.MAX_RECORD_COST_S, 5e-324, 1]))
    bad_cost = st.one_of(st.sampled_from([0, 0.0, -1e-9, member_load.MAX_RECORD_COST_S * 1.001]),
                         st.just(Raw("1e400")))
    lag = st.one_of(st.none(), ints(0, LONG_MAX))
    bad_lag = st.one_of(beyond(0, LONG_MAX), st.sampled_from([1.0, 0.5, "1", True]))
    return st.fixed_dictionaries({"ts": field(ints(0, LONG_MAX), beyond(0, LONG_MAX)),
                                  "busy": field(busy, bad_busy),
                                  "records_per_s": field(rate, bad_rate)},
                                 optional={member_load.RECORD_COST: field(cost, bad_cost),
                                           member_load.LAG_MIN: field(lag, bad_lag)})


def member_entries(topic: str) -> st.SearchStrategy[dict[str, Any]]:
    opt = field(st.one_of(st.none(), st.text(max_size=12)))
    return st.fixed_dictionaries({
        "member_id": field(st.text(min_size=1, max_size=12), st.just("")),
        "instance_id": opt, "client_id": opt, "host": opt, "rack": opt,
        "topics": field(st.lists(st.one_of(st.just(topic), topic_names()), max_size=3)),
        "assigned": field(
            st.lists(
                st.one_of(st.tuples(st.just(topic), ints(0, 8)).map(list),
                          st.tuples(topic_names(), ints(0, INT_MAX)).map(list)), max_size=4)),
    }, optional={"load": field(loads())})


def members_fields(ts: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "type": st.just(ev.MEMBERS), "ts": field(ts_near(ts)),
        "group": field(groups(), bad_groups()),
        "generation": field(ints(-1, INT_MAX), st.sampled_from([-2, INT_MAX + 1])),
        "protocol": field(
            st.one_of(st.none(), st.sampled_from(["range", "roundrobin", "cooperative-sticky"]))),
        "members": field(st.lists(member_entries("t0"), max_size=4)),
    }, optional={"group_protocol": field(st.sampled_from(["classic", "consumer"]))})


def partition_entries() -> st.SearchStrategy[list[dict[str, Any]]]:
    """Partitions 0..n-1 (sometimes not: a gap, a repeat), leaders and replicas at the broker-id
    bounds, racks one per replica (sometimes not)."""
    broker = ints(0, INT_MAX)
    racks = st.lists(st.one_of(st.none(), st.text(max_size=4)), max_size=3)
    entry = st.tuples(field(st.one_of(st.none(), broker)), st.lists(broker, max_size=3),
                      field(st.none(), racks),
                      field(st.none(), st.sampled_from([-1, INT_MAX + 1, 0])))

    def build(drawn: list[tuple[Any, list[int], Any, Any]]) -> list[dict[str, Any]]:
        return [{"partition": p if number is None else number, "leader": leader,
                 "replicas": replicas,
                 "replica_racks": [f"r{b % 3}" for b in replicas] if rs is None else rs}
                for p, (leader, replicas, rs, number) in enumerate(drawn)]

    return st.lists(entry, max_size=6).map(build)


def partitions_fields(ts: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "type": st.just(ev.PARTITIONS), "ts": field(ts_near(ts)),
        "group": field(groups(), bad_groups()), "topic": field(topic_names(), bad_topics()),
        "partitions": field(partition_entries())})


SHAPES = ("repeat", "drop", "trailing", "space", "object after", "in a list", "too deep",
                         "cut", "null", "empty", "NaN")
"""How a drawn event becomes text besides as it is (:data:`KEEP`): a field dropped or repeated
(``duplicate key``), trailing data, nested too deep, cut short, or not an object."""
KEEP = st.tuples(odds(5), st.sampled_from(SHAPES)).map(lambda t: t[1] if t[0] else "keep")
KEYS = st.tuples(odds(8), st.sampled_from(["none", "other"])).map(
    lambda t: t[1] if t[0] else "group")


def text_of(fields: dict[str, Any], shape: str, pick: int) -> str:
    """The event's JSON text in ``shape``; ``pick`` chooses the field a shape drops or repeats."""
    name = sorted(fields)[pick % len(fields)]
    pairs = Pairs(fields.items())
    whole = to_json(pairs)
    return {
        "keep": lambda: whole,
        "drop": lambda: to_json(Pairs((k, v) for k, v in pairs if k != name)),
        "repeat": lambda: to_json(Pairs([*pairs, (name, fields[name])])),
        "trailing": lambda: whole + "x", "space": lambda: whole + " \n",
        "object after": lambda: whole + "{}", "in a list": lambda: f"[{whole}]",
        "cut": lambda: whole[:-1], "null": lambda: "null",
        "too deep": lambda: to_json(Pairs([*pairs,
                                            ("deep", Raw("[" * MAX_DEPTH + "]" * MAX_DEPTH))])),
        "empty": lambda: "", "NaN": lambda: "NaN",
    }[shape]()


def key_of(group: Any, choice: str) -> bytes | None:
    """The message key: the group's (UTF-8, lone surrogates passed through), none, or another."""
    if choice == "group" and isinstance(group, str):
        return group.encode("utf-8", "surrogatepass")
    return b"other" if choice == "other" else None


def record_of(kind: str, fields: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Record]:
    """Records of one event type: its fields, their text, its key, and now and then the other
    topic."""
    role = LAG_ROLE if kind in ev.LAG_TYPES else META_ROLE
    wrong = META_ROLE if role == LAG_ROLE else LAG_ROLE

    def build(f: dict[str, Any], shape: str, pick: int, key: str, r: str) -> Record:
        return Record(f"contract-{kind}", r, key_of(f.get("group"), key),
                      text_of(f, shape, pick).encode("utf-8", "surrogatepass"), ANY)

    return st.builds(build, fields, KEEP, st.integers(0, 15), KEYS,
                     odds(9).map(lambda w: wrong if w else role))


def records(ts: int) -> st.SearchStrategy[Record]:
    """One record of any event type (each lag form twice as often), its group drawn too."""
    # two strategies of a kind, not one twice: Hypothesis draws one of equal branches as one
    return st.one_of(record_of(ev.LAG, lag_fields(ts)), record_of(ev.LAG, lag_fields(ts)),
                     record_of(ev.LAG_DENSE, dense_fields(ts)),
                     record_of(ev.LAG_DENSE, dense_fields(ts)),
                     record_of(ev.MEMBERS, members_fields(ts)),
                     record_of(ev.PARTITIONS, partitions_fields(ts)))


def _event_record(kind: str, event: dict[str, Any]) -> Record:
    key, value = ev.encode(event)
    return Record(kind, LAG_ROLE if event["type"] in ev.LAG_TYPES else META_ROLE, key, value, ANY)


def scenario(ts: int) -> st.SearchStrategy[Callable[[str], list[Record]]]:
    """A valid group whose lags sit at the contract's bounds, given its name: its members (two,
    partitions split between them), its partitions, and polls of every partition's offsets (its lag
    drawn at the contract's bounds, :func:`moving`), one every 10 s, as ``lag`` events or
    (``dense``) one ``lag_dense`` event a poll; skewed often enough that many recommend, with
    figures at and past 2^53 and 2^63-1."""
    def build(n: int, polls: int, lags: list[tuple[int, int]],
              dense: bool) -> Callable[[str], list[Record]]:
        def named(g: str) -> list[Record]:
            t0 = ts - 90_000
            members = [
                ev.member_entry("m0", ["t0"], [("t0", p) for p in range(n) if p < (n + 1) // 2]),
                ev.member_entry("m1", ["t0"], [("t0", p) for p in range(n) if p >= (n + 1) // 2])]
            partitions = [ev.partition_entry(p, 0, [0], ["a"]) for p in range(n)]
            out = [_event_record("contract-scenario-members",
                                 ev.members_event(t0, g, 1, "range", members)),
                   _event_record("contract-scenario-partitions",
                                 ev.partitions_event(t0, g, "t0", partitions))]
            for i in range(polls):
                lag = [ev.lag_event(t0 + 1 + i * 10_000, g, "t0", p, *moving(*lags[p], i))
                       for p in range(n)]
                out += [_event_record("contract-scenario-lag", e)
                        for e in (ev.dense(lag) if dense else lag)]
            return out

        return named

    # (base committed offset, lag): m0's partitions (the first half) mostly heavy, m1's mostly
    # light, so that most groups are skewed and recommend
    heavy = st.tuples(ints(0, LONG_MAX), st.one_of(ints(1_000, LONG_MAX), ints(0, LONG_MAX)))
    light = st.tuples(ints(0, LONG_MAX),
                      st.one_of(ints(0, 1_000), ints(0, 1_000), ints(0, LONG_MAX)))
    return st.sampled_from([1, 2, 3, 3, 4, 4, 4]).flatmap(lambda n: st.builds(
        build, st.just(n), st.integers(3, 5),
        st.tuples(*[heavy if p < (n + 1) // 2 else light for p in range(n)]).map(list),
        st.booleans()))


def generate(seed: int, n: int, ts: int) -> list[Record]:
    """``n`` records drawn from the contract: about four in five single records (:func:`records`),
    the rest whole groups (:func:`scenario`, named ``ct-<seed>-<i>``)."""
    out: list[Record] = draw(records(ts), max(1, n * 4 // 5), seed)
    for i, named in enumerate(draw(scenario(ts), max(1, (n - len(out)) // 6), seed + 1)):
        out += named(f"ct-{seed}-{i}")
    return out[:n]
