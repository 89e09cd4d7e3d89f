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

import inspect
import json
import os
import random
import time
from collections import Counter
from typing import Any

import pytest

from assignors.scenario import call_assignor, parse_scenario
from benchmarks import javaref

pytestmark = pytest.mark.java

SEED = int(os.environ.get("JAVA_DIFF_SEED", "20251121"))
CASES = int(os.environ.get("JAVA_DIFF_CASES", "600"))
# at most 2% of sticky cases may fall in the "Java depends on map order" bucket
ORDER_DEPENDENT_MAX = 0.02

TOPIC_POOL = [
    "t0",
    "t1",
    "t2",
    "t3",
    "topic",
    "topic1",
    "topic2",
    "orders",
    "payments",
    "a",
    "b-events",
    "x.y",
    "T9",
    "clicks",
]
RACKS = ["a", "b", "c"]
STICKY = ("sticky", "cooperative-sticky")


# -- random groups ---------------------------------------------------------------------------------


def _member_ids(rng: random.Random, n: int) -> list[str]:
    style = rng.choice(["consumer", "c", "member-", "uuid"])
    if style == "uuid":
        ids: set[str] = set()
        while len(ids) < n:
            ids.add(f"consumer-{rng.randrange(16**6):06x}")
        out = sorted(ids)
        rng.shuffle(out)
        return out
    nums = rng.sample(range(0, 20), n)
    return [f"{style}{k}" for k in nums]


def random_case(rng: random.Random, index: int) -> dict[str, Any]:
    """One random group in the conformance scenario schema."""
    names = rng.sample(TOPIC_POOL, rng.randint(1, 6))
    topics = {t: (0 if rng.random() < 0.05 else rng.randint(1, 12)) for t in names}
    n_members = rng.randint(1, 8)
    ids = _member_ids(rng, n_members)

    # subscriptions: often all equal (Kafka's constrained sticky builder), else random subsets
    equal = rng.random() < 0.45
    common = names if rng.random() < 0.6 else rng.sample(names, rng.randint(1, len(names)))
    ghost = rng.random() < 0.1  # a subscribed topic missing from the metadata
    subs = []
    for _ in ids:
        mine = list(common) if equal else rng.sample(names, rng.randint(1, len(names)))
        rng.shuffle(mine)
        if ghost and rng.random() < 0.5:
            mine.append("ghost")
        subs.append(mine)

    # racks: none, partial (RF 1-3 on random racks, some rackless brokers), or every partition on
    # every rack
    rack_mode = rng.choice(["none", "none", "partial", "partial", "all"])
    replica_racks: dict[str, list[list[str | None]]] | None = None
    if rack_mode != "none":
        replica_racks = {}
        for t, n in topics.items():
            if rack_mode == "partial" and rng.random() < 0.1:
                continue  # a topic whose brokers report no rack at all
            per = []
            for _ in range(n):
                if rack_mode == "all":
                    per.append(list(RACKS))
                else:
                    replicas: list[str | None] = rng.sample(RACKS, rng.randint(1, 3))
                    if rng.random() < 0.1:
                        replicas[rng.randrange(len(replicas))] = None
                    per.append(replicas)
            replica_racks[t] = per
    member_racks = rack_mode != "none" or rng.random() < 0.1
    instance_ids = rng.random() < 0.35

    # what members owned: nothing (fresh group), or a previous random assignment with generations
    prev = rng.choice(["fresh", "random", "random", "shifted"])
    owned: dict[str, list[list]] = {m: [] for m in ids}
    gens: dict[str, int | None] = {m: None for m in ids}
    if prev != "fresh":
        departed = [f"gone{k}" for k in range(rng.randint(0, 2))]
        holders = ids + departed
        prev_topics = dict(topics)
        if rng.random() < 0.15:
            prev_topics["deleted"] = rng.randint(1, 4)  # a topic deleted since
        for t, n in prev_topics.items():
            # Kafka partition counts only grow: "shifted" groups last saw fewer partitions
            shift = prev == "shifted" and rng.random() < 0.5
            before = max(0, n - rng.randint(1, 3)) if shift else n
            for p in range(before):
                if rng.random() < 0.12:
                    continue  # nobody owned it
                first = rng.choice(holders)
                if first in owned:
                    owned[first].append([t, p])
                if rng.random() < 0.05:  # claimed twice (stale member)
                    second = rng.choice(ids)
                    if second != first:
                        owned[second].append([t, p])
        base = rng.randint(1, 5)
        for m in ids:
            r = rng.random()
            gens[m] = base if r < 0.75 else (None if r < 0.85
                                             else max(1, base + rng.choice([-2, -1, 1])))
            if rng.random() < 0.5:
                rng.shuffle(owned[m])
            else:
                owned[m].sort()

    members = []
    for i, m in enumerate(ids):
        members.append(
            {
                "id": m,
                "instance_id": (f"inst-{rng.randrange(100)}-{i}"
                                if instance_ids and rng.random() < 0.6 else None),
                "rack": rng.choice([*RACKS, "d"]) if member_racks and rng.random() < 0.75 else None,
                "topics": subs[i],
                "owned": owned[m],
                "generation": gens[m],
            }
        )
    return {
        "name": f"random-{SEED}-{index}",
        "topics": topics,
        "replica_racks": replica_racks,
        "members": members,
        # Kafka's test-only switch (rack path even when every partition is on every rack); ours
        # takes it too
        "prefer_rack_aware_logic": rack_mode != "none" and rng.random() < 0.15,
    }


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


def run_ours(fn, scenario: dict[str, Any],
             extra: dict[str, Any] | None = None) -> dict | BaseException:
    """Our assignment of ``scenario`` (or the exception it raised)."""
    try:
        parsed = parse_scenario(scenario)
        return call_assignor(fn, parsed.snapshot, {**parsed.options, **(extra or {})})
    except Exception as e:
        return e


# -- comparing -------------------------------------------------------------------------------------


def _sets(a: dict) -> dict[str, list]:
    return {m: sorted(tuple(x) for x in v) for m, v in a.items() if v}


def _lists(a: dict) -> dict[str, list]:
    return {m: [tuple(x) for x in v] for m, v in a.items() if v}


def balance(scenario: dict, a: dict) -> tuple[int, int]:
    """(max - min partitions per member, Kafka's getBalanceScore: sum over pairs of |size
    difference|)."""
    sizes = sorted(len(a.get(m["id"], [])) for m in scenario["members"])
    score = sum(abs(x - y) for i, x in enumerate(sizes) for y in sizes[i + 1 :])
    return (sizes[-1] - sizes[0] if sizes else 0, score)


def stickiness(scenario: dict, a: dict) -> int:
    """Partitions that stay with a member that reported owning them."""
    return sum(
        len({tuple(tp) for tp in m["owned"]} & {tuple(tp) for tp in a.get(m["id"], [])})
        for m in scenario["members"]
    )


def validity_problems(scenario: dict, a: dict, assignor: str) -> list[str]:
    subscribed = {m["id"]: set(m["topics"]) for m in scenario["members"]}
    problems = []
    seen: Counter = Counter()
    for m, tps in a.items():
        if m not in subscribed:
            problems.append(f"unknown member {m}")
            continue
        for t, p in tps:
            seen[(t, p)] += 1
            if t not in subscribed[m] or t not in scenario["topics"] \
                    or not 0 <= p < scenario["topics"][t]:
                problems.append(f"{t}-{p} given to {m}, which cannot take it")
    problems += [f"{t}-{p} assigned {n} times" for (t, p), n in seen.items() if n > 1]
    if assignor != "cooperative-sticky":  # cooperative withholds partitions that change owner
        wanted = {(t, p) for m in scenario["members"] for t in m["topics"]
                  for p in range(scenario["topics"].get(t, 0))}
        missing = wanted - set(seen)
        if missing:
            problems.append(f"unassigned: {sorted(missing)[:5]}")
    return problems


def variants(scenario: dict) -> list[dict]:
    """The case as given (HashMap filled in member order), then the same members in a LinkedHashMap,
    then a HashMap filled in reverse order: the only differences are the subscriptions map's
    iteration order."""
    linked = {**scenario, "java_map": "linked"}
    rev = {**scenario, "members": list(reversed(scenario["members"])), "java_map": "hash"}
    return [scenario, linked, rev]


def _accepts(fn, option: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return option in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def classify(assignor: str, scenario: dict, java: list[dict], ours: dict | BaseException,
             fn=None) -> dict[str, Any]:
    """Compare one case. ``java`` holds the Java results of :func:`variants` (only the first for
    range and roundrobin). Returns {"kind": ..., ...} with kind one of

    identical        same partitions per member
    order_dependent  Java's own result changes with the subscriptions map's iteration order, and
                     ours is as balanced and as sticky as Java's
    java_defect      Java breaks the assignor contract on this input (throws, or gives a partition
                     to a member not subscribed to its topic); ours is valid. With
                     ``kafka_bugs=True`` (if our assignor takes it) ours is also compared with Java
                     bit for bit: ``bug_compatible``.
    mismatch         anything else: a failure
    """
    primary = java[0]
    java_problems = (
        [f"Java threw {primary['error']}"]
        if primary["error"]
        else validity_problems(scenario, primary["assignment"], assignor)
    )
    if isinstance(ours, BaseException):
        return {
            "kind": "mismatch",
            "why": f"ours raised {ours!r}" + (f" ({java_problems[0]})" if java_problems else ""),
        }
    problems = validity_problems(scenario, ours, assignor)
    if problems:
        return {"kind": "mismatch", "why": "ours is invalid: " + "; ".join(problems[:5])}
    if java_problems:
        verdict: dict[str, Any] = {"kind": "java_defect", "java_problems": java_problems[:3],
                                   "bug_compatible": None}
        if fn is not None and not primary["error"] and _accepts(fn, "kafka_bugs"):
            bug = run_ours(fn, scenario, {"kafka_bugs": True})
            verdict["bug_compatible"] = not isinstance(bug, BaseException) and _sets(bug) == _sets(
                primary["assignment"]
            )
        return verdict
    if _sets(ours) == _sets(primary["assignment"]):
        return {"kind": "identical", "order_equal": _lists(ours) == _lists(primary["assignment"])}
    if assignor in STICKY and len(java) > 1:
        others = [j for j in java[1:] if not j["error"]]
        java_varies = any(_sets(j["assignment"]) != _sets(primary["assignment"]) for j in others)
        if java_varies:
            same_quality = balance(scenario, ours) == balance(scenario, primary["assignment"]) \
                and stickiness(scenario, ours) == stickiness(scenario, primary["assignment"])
            evidence = {
                f"{j['map']}:{','.join(j['member_order'])}": _sets(j["assignment"])
                for j in java if not j["error"]
            }
            matches_a_java_order = any(_sets(ours) == _sets(j["assignment"]) for j in others)
            if same_quality:
                return {"kind": "order_dependent", "evidence": evidence,
                        "matches_other_order": matches_a_java_order}
            return {
                "kind": "mismatch",
                "why": "Java depends on map order, but ours is less balanced or sticky: "
                f"balance ours {balance(scenario, ours)} "
                f"vs Java {balance(scenario, primary['assignment'])}, "
                f"stickiness ours {stickiness(scenario, ours)} vs Java "
                f"{stickiness(scenario, primary['assignment'])}",
                "evidence": evidence,
            }
    return {"kind": "mismatch", "why": "different assignment"}


# -- shrinking a failing case to a small reproducer ------------------------------------------------


def _drop_topic(s: dict, topic: str) -> dict | None:
    topics = {t: n for t, n in s["topics"].items() if t != topic}
    members = []
    for m in s["members"]:
        subs = [t for t in m["topics"] if t != topic]
        if not subs:
            continue
        members.append({**m, "topics": subs, "owned": [tp for tp in m["owned"] if tp[0] != topic]})
    if not topics or not members:
        return None
    racks = None if s["replica_racks"] is None else {t: r for t, r in s["replica_racks"].items()
                                                     if t != topic}
    return {**s, "topics": topics, "members": members, "replica_racks": racks}


def _shrink_partitions(s: dict, topic: str) -> dict:
    n = s["topics"][topic] - 1
    racks = s["replica_racks"]
    if racks is not None and topic in racks:
        racks = {**racks, topic: racks[topic][:n]}
    members = [{**m, "owned": [tp for tp in m["owned"] if not (tp[0] == topic and tp[1] >= n)]}
               for m in s["members"]]
    return {**s, "topics": {**s["topics"], topic: n}, "replica_racks": racks, "members": members}


def candidates(s: dict) -> list[dict]:
    out: list[dict] = []
    if len(s["members"]) > 1:
        out += [{**s, "members": s["members"][:i] + s["members"][i + 1 :]}
                for i in range(len(s["members"]))]
    for t in s["topics"]:
        d = _drop_topic(s, t)
        if d:
            out.append(d)
    out += [_shrink_partitions(s, t) for t, n in s["topics"].items() if n > 0]
    if s["replica_racks"] is not None:
        out.append({**s, "replica_racks": None})
    for i, m in enumerate(s["members"]):
        simpler = []
        if m["owned"]:
            simpler.append({**m, "owned": []})
            simpler += [{**m, "owned": m["owned"][:k] + m["owned"][k + 1 :]}
                        for k in range(len(m["owned"]))]
        if m["rack"] is not None:
            simpler.append({**m, "rack": None})
        if m["instance_id"] is not None:
            simpler.append({**m, "instance_id": None})
        if m["generation"] is not None and not m["owned"]:
            simpler.append({**m, "generation": None})
        if "ghost" in m["topics"] and len(m["topics"]) > 1:
            simpler.append({**m, "topics": [t for t in m["topics"] if t != "ghost"]})
        out += [{**s, "members": [*s["members"][:i], mm, *s["members"][i + 1 :]]} for mm in simpler]
    return out


def _is_failure(verdict: dict) -> bool:
    return verdict["kind"] == "mismatch" or verdict.get("bug_compatible") is False


def shrink(assignor: str, fn, case: dict,
           budget_s: float = 40.0) -> tuple[dict, dict, list[dict], Any]:
    """Greedy shrink while the case still fails the same way; each step is one JVM run over all
    candidates."""
    with_variants = assignor in STICKY
    n_var = 3 if with_variants else 1
    best = case
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        cands = candidates(best)
        if not cands:
            break
        batch = [v for c in cands for v in (variants(c) if with_variants else [c])]
        java = javaref.run_cases(assignor, batch)
        for k, c in enumerate(cands):
            jv = java[k * n_var : (k + 1) * n_var]
            ours = run_ours(fn, c)
            if _is_failure(classify(assignor, c, jv, ours, fn)):
                best = c
                break
        else:
            break
    jv = javaref.run_cases(assignor, variants(best) if with_variants else [best])
    ours = run_ours(fn, best)
    return best, classify(assignor, best, jv, ours, fn), jv, ours


def reproducer(assignor: str, case: dict, verdict: dict, java: list[dict], ours: Any) -> str:
    scenario = {
        "assignors": [assignor],
        "name": case["name"] + " (shrunk)",
        "source": "tests/integration/test_java_differential.py",
        **{k: case[k] for k in ("prefer_rack_aware_logic", "topics", "replica_racks", "members")},
        "java_member_iteration_order": java[0].get("member_order"),
        "expected": None if java[0]["error"] else {m: [list(x) for x in v]
                                                   for m, v in java[0]["assignment"].items()},
        "order_significant": True,
        "java_transferring": java[0].get("transferring"),
        "ours": (repr(ours) if isinstance(ours, BaseException)
                 else {m: [list(x) for x in v] for m, v in ours.items()}),
        "why": verdict.get("why"),
    }
    return json.dumps(scenario)


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

    failures = [(c, v) for c, v in zip(cases, verdicts, strict=True) if _is_failure(v)]
    if failures:
        case, verdict = failures[0]
        small, small_verdict, small_java, small_ours = shrink(assignor, fn, case)
        if not _is_failure(small_verdict):  # shrinking lost it; show the original
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
        if _sets(ours) == _sets(j[0]["assignment"]) and _lists(ours) != _lists(j[0]["assignment"]):
            differ.append((c, j[0], ours))
    if differ:
        c, j, ours = min(differ, key=lambda x: len(json.dumps(x[0])))
        member = next(m for m in j["assignment"]
                      if _lists(j["assignment"]).get(m) != _lists(ours).get(m))
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
        assert _sets(ours) == _sets(java["assignment"]), f"{s['name']}: ours differs from Java"
        owned = java["assignment"]
