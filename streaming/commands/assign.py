"""``rebalancer assign``: run one assignor on scenarios in the conformance schema and print the
result.

Input is one scenario object or an array of them (an element with ``"_schema": true`` is skipped),
from a file or stdin. Output is ``{"assignor", "assignment", "metrics"}`` per scenario (an array for
an array), or a table for a person with ``--format table``.

``--option key=value`` (repeatable) sets the assignor's options as ``assignors.registry`` declares
them, checked before any input is read; a scenario's ``prefer_rack_aware_logic`` reaches only the
assignors that take it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from streaming.errors import RebalancerError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    from assignors import registry

    p = sub.add_parser("assign",
                       help="run an assignor on group scenarios (JSON) and print assignment and "
                            "metrics",
                       epilog=_options_help(registry),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--assignor", required=True, metavar="NAME", help=", ".join(registry.names()))
    p.add_argument("--input", default="-", metavar="FILE",
                   help="scenario JSON file: one object or an array (default: - for stdin)")
    p.add_argument("--format", choices=("json", "table"), default="json",
                   help="output format (default json)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the assignor (repeatable; see below)")
    p.add_argument("--horizon", type=float, default=None, metavar="SECONDS",
                   help="load = lag + produce rate x SECONDS where rates are given, in the metrics "
                        "and for an assignor that takes horizon_s (default 0: lag alone)")
    p.set_defaults(func=run)


def _options_help(registry: Any) -> str:
    lines = ["assignor options (--option KEY=VALUE):"]
    for name in registry.names():
        specs = registry.options(name)
        if not specs:
            lines.append(f"  {name}: none")
            continue
        lines.append(f"  {name}:")
        for spec in specs.values():
            default = "none" if spec.default is None else str(spec.default).lower()
            lines.append(f"    {spec.name} ({spec.allowed()}, default {default}): {spec.help}")
    return "\n".join(lines)


def user_options(assignor: str, pairs: list[str],
                 horizon: float | None) -> tuple[dict[str, Any], float]:
    """The validated ``--option`` values (with ``--horizon`` as horizon_s where the assignor takes
    it) and the horizon the metrics use; :class:`UsageError` naming the key on a bad one."""
    from assignors import registry

    if horizon is not None and horizon < 0:
        raise UsageError(f"--horizon: must be >= 0, got {horizon}")
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        given[key.strip()] = value
    try:
        options = registry.validate_options(assignor, given)
    except registry.InvalidOption as e:
        raise UsageError(f"--option {e}") from None
    if "horizon_s" in options:
        if horizon is not None and horizon != options["horizon_s"]:
            raise UsageError(
                f"--horizon {horizon:g} and --option horizon_s={options['horizon_s']:g} disagree")
        return options, options["horizon_s"]
    if horizon is not None and "horizon_s" in registry.options(assignor):
        options["horizon_s"] = horizon
    return options, horizon or 0.0


def _read(path: str) -> Any:
    if path == "-":
        text, where = sys.stdin.read(), "stdin"
    else:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise UsageError(f"--input: no such file: {path}") from None
        except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
            raise UsageError(f"--input: cannot read {path}: {e}") from None
        where = path
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--input: {where} is not valid JSON: {e.msg} at line {e.lineno} "
                         f"column {e.colno}") from None


def run(args: argparse.Namespace) -> int:
    from assignors import registry
    from assignors.errors import UnknownAssignor

    try:
        assignor = registry.get(args.assignor)
    except UnknownAssignor as e:
        raise UsageError(f"--assignor: {e}") from None
    options, horizon = user_options(args.assignor, args.option, args.horizon)
    data = _read(args.input)
    single = isinstance(data, dict)
    outputs = [_assign_one(args.assignor, assignor, raw, "" if index is None else f"[{index}].",
                           options, horizon)
               for index, raw in _scenarios(data)]
    if args.format == "json":
        json.dump(outputs[0] if single else outputs, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(_table(out) for out in outputs))
    return 0


def _scenarios(data: Any) -> list[tuple[int | None, Any]]:
    """(index, raw scenario) of the input: one object (index None), or each of an array but its
    schema entry."""
    if isinstance(data, dict):
        return [(None, data)]
    if isinstance(data, list):
        return [(i, s) for i, s in enumerate(data)
                if not (isinstance(s, dict) and s.get("_schema") is True)]
    raise UsageError(
        f"--input: must hold a scenario object or an array of them, got {type(data).__name__}")


def _assign_one(name: str, assignor: Any, raw: Any, prefix: str, options: dict[str, Any],
                horizon: float) -> dict[str, Any]:
    """One scenario assigned, checked and measured, as the output object."""
    from assignors import registry
    from assignors.errors import InvalidSnapshot
    from assignors.metrics import InvalidAssignment, compute_metrics
    from assignors.scenario import assignment_to_json, call_assignor, parse_scenario
    from assignors.validity import validate_assignment

    try:
        scenario = parse_scenario(raw)
        # The scenario's own options (Kafka's test flag) only where the assignor takes them.
        taken = registry.applicable(name, scenario.options) | options
        assignment = call_assignor(assignor, scenario.snapshot, taken)
        if isinstance(assignment, tuple):  # assign_with_transfers style: (assignment, transferring)
            assignment = assignment[0]
    except InvalidSnapshot as e:
        raise UsageError(f"{prefix}{e}") from None
    try:
        # A cooperative first round withholds the partitions that change owner.
        validate_assignment(scenario.snapshot, assignment,
                            allow_unassigned=name == "cooperative-sticky")
    except InvalidAssignment as e:
        raise RebalancerError(
            f"{prefix}assignor {name} produced an invalid assignment: {e}") from None
    out: dict[str, Any] = {} if scenario.name is None else {"name": scenario.name}
    out["assignor"] = name
    if options:
        out["options"] = options
    out["assignment"] = assignment_to_json(assignment)
    out["metrics"] = compute_metrics(scenario.snapshot, assignment, horizon_s=horizon).to_dict()
    return out


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:,.3f}".rstrip("0").rstrip(".") if x != int(x) else f"{int(x):,}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _compact(tps: list[list]) -> str:
    """t0[0-2,5] t1[1]: partitions grouped by topic, runs collapsed."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    parts = []
    for t, ps in by_topic.items():
        ps = sorted(ps)
        runs: list[str] = []
        start = ps[0]
        for a, b in zip(ps, [*ps[1:], None], strict=True):
            if b is None or b != a + 1:  # a ends a run
                runs.append(f"{start}" if start == a else f"{start}-{a}")
                if b is not None:
                    start = b
        parts.append(f"{t}[{','.join(runs)}]")
    return " ".join(parts) if parts else "-"


def _table(out: dict[str, Any]) -> str:
    m = out["metrics"]
    opts = ", ".join(f"{k}={v}" for k, v in (out.get("options") or {}).items())
    title = (f"{out['assignor']}" + (f" ({opts})" if opts else "")
             + (f" on {out['name']}" if out.get("name") else ""))
    lines = [title]
    members = list(out["assignment"])
    width = max([len("member"), *(len(x) for x in members)])
    lines.append(f"  {'member':<{width}}  {'parts':>6}  {'load':>14}  partitions")
    for member in members:
        tps = out["assignment"][member]
        load = m["member_loads"].get(member, 0)
        lines.append(f"  {member:<{width}}  {len(tps):>6}  {_fmt(load):>14}  {_compact(tps)}")
    lb = m["lower_bound"]
    lines.append(
        f"  max load {_fmt(m['max_load'])} (lower bound {_fmt(lb)}), mean {_fmt(m['mean_load'])}, "
        f"imbalance {m['imbalance']:.3f}"
    )
    lines.append(
        f"  count spread {m['count_spread']}, cross-rack {m['cross_rack_partitions']}, "
        f"moved {m['partitions_moved']} partitions ({_fmt(m['load_moved'])} load)"
    )
    return "\n".join(lines) + "\n"
