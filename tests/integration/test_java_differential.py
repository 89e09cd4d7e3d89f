"""Differential tests: our Python assignors against Kafka 4.3.1's own Java assignors, on the same
input.

Random groups (seeded; ``JAVA_DIFF_SEED`` / ``JAVA_DIFF_CASES`` change seed and count) go through
``kafka-clients`` in ONE JVM run per assignor (benchmarks/javaref/) and through
``assignors.registry``.

* ``range``, ``roundrobin``: the same partitions per member on every case, and the same list order.
* ``sticky``, ``cooperative-sticky``: identical too, except where the Java result is SHOWN to depend
  on something that is not in the snapshot: every case also runs in Java with the members put into
  the subscriptions map in other orders (a LinkedHashMap in input order, and a HashMap filled in
  reverse order). If those Java runs disagree among themselves, Java depends on
  ``java.util.HashMap`` iteration order; then ours must be equally balanced (same max-min and
  Kafka's balance score) and equally sticky (same number of partitions left with a member that owned
  them). That bucket is counted, printed with its evidence and must stay small.

A failing case is shrunk (members, topics, partitions, owned partitions, racks removed while it
still fails) and printed as a reproducer in the conformance scenario schema, with Java's and our
answers.

The conformance scenarios also go through Java: any whose ``expected`` disagrees with Java 4.3.1
must be listed in ``tests/data/java_overrides.json``
(``python -m benchmarks.javaref --write-overrides``).

Run: ``.venv/bin/python -m pytest -m java tests/integration/test_java_differential.py -s`` (``-s``
shows the per-assignor summary).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from typing import Any

import pytest

from benchmarks import javaref

from .differential_cases import CASES, ORDER_DEPENDENT_MAX, SEED, STICKY, random_case
from .differential_verdicts import (
    classify,
    is_failure,
    lists_of,
    reproducer,
    run_ours,
    sets_of,
    shrink,
    variants,
)

pytestmark = pytest.mark.java
@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    return [random_case(rng, i) for i in range(CASES)]


@pytest.fixture(scope="module")
def java_ready() -> None:
    try:
        javaref.ensure_built()
    except javaref.JavaRefError as e:
        pytest.fail(f"Kafka's Java assignors are needed here (run `make setup`): {e}")


# -- our side --------------------------------------------------------------------------------------


def _ours(assignor: str):
    from assignors import registry

    if assignor not in registry.names():
        pytest.fail(f"assignors/{assignor.replace('-', '_')}.py is missing")
    return registry.get(assignor)


# -- the tests -------------------------------------------------------------------------------------

_RESULTS: dict[str, tuple[list[dict], list[list[dict]]]] = {}


def java_results(assignor: str, cases: list[dict]) -> list[list[dict]]:
    """Java's results per case (with map-order variants for the sticky family): ONE JVM run per
    assignor."""
    if assignor not in _RESULTS:
        with_variants = assignor in STICKY
        batch = [v for c in cases for v in (variants(c) if with_variants else [c])]
        flat = javaref.run_cases(assignor, batch)
        n = 3 if with_variants else 1
        _RESULTS[assignor] = (cases, [flat[i * n : (i + 1) * n] for i in range(len(cases))])
    return _RESULTS[assignor][1]


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_same_as_kafka(assignor: str, cases: list[dict], java_ready: None) -> None:
    fn = _ours(assignor)
    t0 = time.perf_counter()
    java = java_results(assignor, cases)
    t_java = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdicts = [classify(assignor, c, j, run_ours(fn, c), fn)
                for c, j in zip(cases, java, strict=True)]
    t_ours = time.perf_counter() - t0
    kinds = Counter(v["kind"] for v in verdicts)
    order_diff = sum(1 for v in verdicts if v["kind"] == "identical" and not v["order_equal"])
    in_input_order = sum(
        j[0].get("member_order") == [m["id"] for m in c["members"]]
        for c, j in zip(cases, java, strict=True)
    )
    bug_compat = Counter(v["bug_compatible"] for v in verdicts if v["kind"] == "java_defect")
    print(
        f"\n[{assignor}] {len(cases)} cases (seed {SEED}), "
        f"Java {t_java:.1f}s ({len(java[0])} map order(s) per case), "
        f"ours {t_ours:.1f}s: {dict(kinds)}; same partitions in another list order: {order_diff}; "
        f"Java iterated the members in input order in {in_input_order} cases"
    )
    defects = Counter(
        p.split(":")[0] if "threw" in p else "partition to a non-subscriber"
        for c, v in zip(cases, verdicts, strict=True)
        if v["kind"] == "java_defect"
        for p in v["java_problems"][:1]
    )
    if defects:
        print(
            f"  Java breaks the contract in {kinds['java_defect']} cases ({dict(defects)}); "
            f"ours is valid there; with kafka_bugs=True ours equals Java in {bug_compat[True]}, "
            f"differs in {bug_compat[False]}, "
            f"not compared in {bug_compat[None]} (Java threw, or no kafka_bugs option)"
        )
    for c, v in zip(cases, verdicts, strict=True):
        if v["kind"] == "order_dependent":
            orders = "; ".join(k.split(":")[1] for k in v["evidence"])
            print(
                f"  Java depends on map order in {c['name']}: "
                f"{len(set(map(json.dumps, v['evidence'].values())))} "
                f"different results for member orders {orders}; ours is as balanced and sticky"
                f"{' and equals one of them' if v['matches_other_order'] else ''}"
            )

    failures = [(c, v) for c, v in zip(cases, verdicts, strict=True) if is_failure(v)]
    if failures:
        case, verdict = failures[0]
        small, small_verdict, small_java, small_ours = shrink(assignor, fn, case)
        if not is_failure(small_verdict):  # shrinking lost it; show the original
            small, small_verdict = case, verdict
            small_java = javaref.run_cases(assignor,
                                           variants(case) if assignor in STICKY else [case])
            small_ours = run_ours(fn, case)
        names = ", ".join(c["name"] for c, _ in failures[:20])
        why = verdict.get("why") or "with kafka_bugs=True ours differs from Java"
        pytest.fail(
            f"{assignor}: {len(failures)} of {len(cases)} random cases differ from Kafka "
            f"{javaref.kafka_clients_version()} ({names}{' ...' if len(failures) > 20 else ''}).\n"
            f"First one: {why}\n"
            "Minimal reproducer (conformance schema; expected = Java's answer):\n"
            f"{reproducer(assignor, small, small_verdict, small_java, small_ours)}"
        )
    if assignor in STICKY:
        assert kinds["order_dependent"] <= ORDER_DEPENDENT_MAX * len(cases), (
            f"{kinds['order_dependent']} cases only match Java up to HashMap order "
            "(see the printout)"
        )
    else:
        assert kinds["order_dependent"] == 0
        assert kinds["java_defect"] == 0


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_list_order_as_kafka(assignor: str, cases: list[dict], java_ready: None) -> None:
    """Beyond the same partitions: the same order within each member's list (Kafka's tests assert it
    for sticky; consumers see it as the order of onPartitionsAssigned)."""
    fn = _ours(assignor)
    java = java_results(assignor, cases)
    differ = []
    for c, j in zip(cases, java, strict=True):
        ours = run_ours(fn, c)
        if j[0]["error"] or isinstance(ours, BaseException):
            continue
        theirs = j[0]["assignment"]
        if sets_of(ours) == sets_of(theirs) and lists_of(ours) != lists_of(theirs):
            differ.append((c, j[0], ours))
    if differ:
        c, j, ours = min(differ, key=lambda x: len(json.dumps(x[0])))
        member = next(m for m in j["assignment"]
                      if lists_of(j["assignment"]).get(m) != lists_of(ours).get(m))
        expected = {m: [list(x) for x in v] for m, v in j["assignment"].items()}
        pytest.fail(
            f"{assignor}: {len(differ)} of {len(cases)} cases give the same partitions "
            "in another list order. "
            f"Smallest: {c['name']}, member {member}: Java {j['assignment'][member]}, "
            f"ours {ours.get(member)}\n"
            f"{json.dumps({**c, 'expected': expected})}"
        )


def test_conformance_scenarios_agree_with_java(java_ready: None) -> None:
    """Every conformance scenario through Java 4.3.1; disagreements must be in
    tests/data/java_overrides.json."""
    disagreements, checked = javaref.check_conformance()
    assert checked > 0
    recorded = (json.loads(javaref.OVERRIDES.read_text()) if javaref.OVERRIDES.exists()
                else {"overrides": []})
    known = {(d["name"], d["assignor"]): d for d in recorded["overrides"]}
    for d in disagreements:
        print(
            f"\n[{d['assignor']}] {d['name']} disagrees with Java: {'; '.join(d['problems'])}\n"
            f"  file: {json.dumps(d['expected'])}\n  java: {json.dumps(d['java'])}"
        )
    new = [
        d
        for d in disagreements
        if (d["name"], d["assignor"]) not in known
           or known[(d["name"], d["assignor"])]["java"] != d["java"]
    ]
    stale = set(known) - {(d["name"], d["assignor"]) for d in disagreements}
    assert not new and not stale, (
        "tests/data/java_overrides.json is out of date "
        f"(new: {[(d['name'], d['assignor']) for d in new]}, "
        f"stale: {sorted(stale)}): run `.venv/bin/python -m benchmarks.javaref --write-overrides`"
    )


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_same_as_kafka_at_scale(assignor: str, java_ready: None) -> None:
    """Kafka's testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout (100 topics x 200
    partitions, 500 consumers, split subscriptions): a fresh round, then everyone but member 0
    re-joins owning what Java gave."""
    from benchmarks import speed

    fn = _ours(assignor)
    names = tuple(speed.canonical("t", i, 100) for i in range(100))
    ids = [speed.canonical("c", i, 500) for i in range(500)]

    def scenario(owned: dict | None) -> dict:
        return {
            "name": f"scale-split-20k-{'round2' if owned else 'round1'}",
            "topics": dict.fromkeys(names, 200),
            "replica_racks": None,
            "prefer_rack_aware_logic": False,
            "members": [
                {
                    "id": m,
                    "instance_id": None,
                    "rack": None,
                    "topics": list(speed.topics_for("split", i, 500, names)),
                    "owned": [list(tp) for tp in owned[m]] if owned and i else [],
                    "generation": 1 if owned and i else None,
                }
                for i, m in enumerate(ids)
            ],
        }

    owned = None
    for _ in range(2):
        s = scenario(owned)
        java = javaref.run_cases(assignor, [s], timeout=600)[0]
        assert java["error"] is None
        ours = run_ours(fn, s)
        assert not isinstance(ours, BaseException), ours
        assert sets_of(ours) == sets_of(java["assignment"]), f"{s['name']}: ours differs from Java"
        owned = java["assignment"]
