"""The verdicts of the differential tests (:mod:`.test_java_differential`): our assignment of a
case, its comparison with Java's (equal, or equally balanced and sticky where Java is shown to
depend on map order) and the shrinking of a failing case to a small reproducer."""

from __future__ import annotations

import inspect
import json
import time
from collections import Counter
from typing import Any

from assignors.scenario import call_assignor, parse_scenario
from benchmarks import javaref

from .differential_cases import STICKY


def run_ours(fn, scenario: dict[str, Any],
             extra: dict[str, Any] | None = None) -> dict | BaseException:
    """Our assignment of ``scenario`` (or the exception it raised)."""
    try:
        parsed = parse_scenario(scenario)
        return call_assignor(fn, parsed.snapshot, {**parsed.options, **(extra or {})})
    except Exception as e:
        return e


# -- comparing -------------------------------------------------------------------------------------


def sets_of(a: dict) -> dict[str, list]:
    return {m: sorted(tuple(x) for x in v) for m, v in a.items() if v}


def lists_of(a: dict) -> dict[str, list]:
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
            verdict["bug_compatible"] = (not isinstance(bug, BaseException)
                                         and sets_of(bug) == sets_of(primary["assignment"]))
        return verdict
    first = primary["assignment"]
    if sets_of(ours) == sets_of(first):
        return {"kind": "identical", "order_equal": lists_of(ours) == lists_of(first)}
    if assignor in STICKY and len(java) > 1:
        others = [j for j in java[1:] if not j["error"]]
        java_varies = any(sets_of(j["assignment"]) != sets_of(first) for j in others)
        if java_varies:
            same_quality = balance(scenario, ours) == balance(scenario, primary["assignment"]) \
                and stickiness(scenario, ours) == stickiness(scenario, primary["assignment"])
            evidence = {
                f"{j['map']}:{','.join(j['member_order'])}": sets_of(j["assignment"])
                for j in java if not j["error"]
            }
            matches_a_java_order = any(sets_of(ours) == sets_of(j["assignment"]) for j in others)
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


def is_failure(verdict: dict) -> bool:
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
            if is_failure(classify(assignor, c, jv, ours, fn)):
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


