"""The layers run one way, checked on the source: every import of every module of ``assignors/`` and
``streaming/``, read with :mod:`ast` (lazy imports inside functions included).

    streaming.job (Spark edge: the query's data path) -> streaming.policy (decisions)
    -> streaming.state (a group and how events change it) -> assignors (pure)

The job's operations (``streaming.operations``: lease, supervisor, stop, side files, recovery, crash
points, the Delta tables' upkeep) sit below the data path, which calls them, and beside the policy:
they import neither.

The consumer side (``streaming.apply``) and the collector stand apart: neither needs the job's state
or policy, nor each other. Reviewing proposals (``streaming.proposals``) sits below the policy and
the consumer side and above the contracts. Below them all: the contracts (``streaming.contracts``),
lag over time (``streaming.lag``) and the production Kafka plumbing (``streaming.kafka_clients``);
the loopback development cluster (``streaming.embedded``) is never imported by the job, the policy,
the state, the consumer side, the collector, the operator's view or the exporter. The operator's
view (``streaming.operator_view``, what ``describe`` prints) reads the collector's snapshot types;
the exporter reads the view's figures; the collector never imports either (it is handed an exporter,
as it is handed its sink). The development tools (``streaming.dev``) and the benchmarks are never
imported by shipped code, except lazily by the commands that run them (see docs/architecture.md). No
import circle anywhere, between modules or between packages, lazy imports included.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("assignors", "streaming")

SHARED_ABOVE = ("streaming.state", "streaming.policy", "streaming.job", "streaming.operations",
                "streaming.apply", "streaming.collector", "streaming.commands", "streaming.cli",
                "streaming.dev")
"""What the shared modules at the top of ``streaming/`` (config, errors, paths, ...) never
import."""

ABOVE_THE_BASE = ("streaming.state", "streaming.policy", "streaming.job", "streaming.operations",
                  "streaming.apply", "streaming.collector", "streaming.operator_view",
                  "streaming.exporter", "streaming.commands", "streaming.cli", "streaming.dev",
                  "benchmarks")
NOT_IN_PRODUCTION = ("streaming.embedded", "streaming.dev", "benchmarks")

FORBIDDEN = {
    "streaming.contracts": (*ABOVE_THE_BASE, "streaming.kafka_clients", "streaming.embedded",
                            "streaming.lag", "streaming.spark_session"),
    "streaming.lag": (*ABOVE_THE_BASE, "streaming.kafka_clients", "streaming.embedded",
                      "streaming.spark_session"),
    "streaming.kafka_clients": (*ABOVE_THE_BASE, "streaming.embedded"),
    "streaming.embedded": ABOVE_THE_BASE,
    "assignors": ("streaming", "benchmarks"),
    "streaming.state": ("streaming.policy", "streaming.job", "streaming.operations",
                        "streaming.apply", "streaming.collector", "streaming.operator_view",
                        "streaming.exporter", "streaming.commands", "streaming.cli",
                        *NOT_IN_PRODUCTION),
    "streaming.policy": ("streaming.job", "streaming.operations", "streaming.apply",
                         "streaming.collector", "streaming.operator_view", "streaming.exporter",
                         "streaming.commands", "streaming.cli", *NOT_IN_PRODUCTION),
    "streaming.job": ("streaming.apply", "streaming.collector", "streaming.commands",
                      "streaming.cli", *NOT_IN_PRODUCTION),
    # the job's operations: what the data path calls to run, stop, recover and keep the job
    # (lease, supervisor, side files, crash points, the tables' upkeep); never the data path
    # itself, nor a decision
    "streaming.operations": ("streaming.job", "streaming.policy", "streaming.apply",
                             "streaming.collector", "streaming.operator_view",
                             "streaming.exporter", "streaming.commands", "streaming.cli",
                             *NOT_IN_PRODUCTION),
    "streaming.apply": ("streaming.state", "streaming.policy", "streaming.job",
                        "streaming.operations", "streaming.collector", "streaming.operator_view",
                        "streaming.exporter", "streaming.commands", "streaming.cli",
                        *NOT_IN_PRODUCTION),
    "streaming.collector": ("streaming.state", "streaming.policy", "streaming.job",
                            "streaming.operations", "streaming.apply", "streaming.operator_view",
                            "streaming.exporter", "streaming.commands", "streaming.cli",
                            *NOT_IN_PRODUCTION),
    # reviewing proposals: pure rules over the feed's and the table's values, used by the policy
    # (the facts a proposal carries) and by the consumer side and the commands (expiry, the diff)
    "streaming.proposals": ("streaming.state", "streaming.policy", "streaming.job",
                            "streaming.operations", "streaming.apply", "streaming.collector",
                            "streaming.operator_view", "streaming.exporter", "streaming.commands",
                            "streaming.cli", *NOT_IN_PRODUCTION),
    # the operator's view: what ``describe`` prints, from the collector's snapshot and the lag
    # rules; the exporter and the commands read it, it decides nothing and exports nothing
    "streaming.operator_view": ("streaming.state", "streaming.policy", "streaming.job",
                                "streaming.operations", "streaming.apply", "streaming.exporter",
                                "streaming.commands", "streaming.cli", *NOT_IN_PRODUCTION),
    # the Prometheus exporter serves the job's and the collector's figures; it reads the collector's
    # snapshot types and the operator's view's figures but decides nothing and runs no command
    "streaming.exporter": ("streaming.state", "streaming.policy", "streaming.job",
                           "streaming.operations", "streaming.apply", "streaming.commands",
                           "streaming.cli", *NOT_IN_PRODUCTION),
}
"""package -> what none of its modules may import, anywhere in the module."""

DEV_RUNNERS = {"streaming.commands.demo", "streaming.commands.smoke", "streaming.commands.workload",
               "streaming.commands.bench"}
"""The only shipped modules that import the development tools or the benchmarks, and only inside
functions."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level) for every import statement of ``path``."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    # statements directly in the module body, or in a module-level if/try block
    module_level = set()
    for stmt in tree.body:
        module_level.add(id(stmt))
        if isinstance(stmt, ast.If | ast.Try):
            module_level |= {id(inner) for inner in ast.walk(stmt)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in module_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, id(node) in module_level))
            # `from streaming import dev` imports the package streaming.dev
            out += [(f"{mod}.{a.name}", id(node) in module_level) for a in node.names]
    return out


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_every_module_is_seen() -> None:
    names = {_module_name(p) for p in _modules()}
    assert {"streaming.state.ingest", "streaming.policy.recommend", "streaming.job.stateful",
            "streaming.operations.supervisor", "streaming.apply.plan", "streaming.collector.poll",
            "assignors.model"} <= names


def test_layers_run_one_way() -> None:
    broken = []
    for path in _modules():
        name = _module_name(path)
        for package, banned in FORBIDDEN.items():
            if not _within(name, package):
                continue
            broken += [f"{name} imports {mod}" for mod, _ in _imports(path)
                       if any(_within(mod, b) for b in banned)]
        # config.py, errors.py, ...
        if path.parent == ROOT / "streaming" and name not in SHARED_ABOVE:
            broken += [f"{name} (shared) imports {mod}" for mod, _ in _imports(path)
                       if any(_within(mod, b) for b in SHARED_ABOVE)]
    assert broken == []


def import_graph() -> dict[str, set[str]]:
    """module -> the project's modules it imports, lazily or not. ``from pkg import mod`` is an
    import of the module ``pkg.mod`` (Python runs ``pkg/__init__`` first, but that is the package's
    own business)."""
    paths = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                     *([node.module] if node.module else [])])
                subs = {f"{base}.{a.name}" for a in node.names} & paths.keys()
                edges |= subs if subs else {base}
        graph[name] = {m for m in edges if m in paths and m != name}
    return graph


def package_of(module: str) -> str | None:
    """The room a module lives in: its sub-package of ``streaming`` or ``assignors``
    (``streaming.job``, ``assignors.sticky``); a module at the top (config, errors, cli, ...) is a
    room of its own, so that ``streaming.config`` and the ``streaming.kafka_clients`` package
    importing each other is a circle; None for the packages themselves (``streaming/__init__``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def package_graph(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """Sub-package -> the sub-packages its modules import."""
    out: dict[str, set[str]] = {}
    for module, imported in graph.items():
        room = package_of(module)
        if room is not None:
            out.setdefault(room, set()).update(r for r in map(package_of, imported)
                                               if r not in (None, room))
    return out


def test_no_import_circle_between_modules_or_packages() -> None:
    graph = import_graph()
    assert circles(graph) == []
    assert circles(package_graph(graph)) == []


def test_a_planted_circle_is_found() -> None:
    """The check sees a circle through lazy imports and across packages: one planted edge back up
    makes one."""
    graph = import_graph()
    assert "streaming.contracts.events" in graph["streaming.collector.poll_events"]
    planted = {**graph, "streaming.contracts.events": {*graph["streaming.contracts.events"],
                                                       "streaming.collector.poll_events"}}
    assert circles(planted) == [["streaming.collector.poll_events", "streaming.contracts.events"]]
    assert ["streaming.collector", "streaming.contracts"] in circles(package_graph(planted))


def test_a_planted_circle_through_a_module_at_the_top_is_found() -> None:
    """config and kafka_clients imported each other (config lazily) unseen while the modules at the
    top had no room in the package graph."""
    graph = import_graph()
    assert "streaming.config" in graph["streaming.kafka_clients.factories"]
    assert not any(m.startswith("streaming.kafka_clients") for m in graph["streaming.config"])
    planted = {**graph,
               "streaming.config": {*graph["streaming.config"],
                                    "streaming.kafka_clients.properties"}}
    assert ["streaming.config", "streaming.kafka_clients"] in circles(package_graph(planted))


def test_a_planted_back_arrow_from_the_operations_to_the_data_path_is_found() -> None:
    """The data path calls the job's operations (the bucketed step writes its layout file through
    hfs); one edge back, from the operations to the data path, is a circle between the two
    packages, and forbidden."""
    graph = import_graph()
    assert "streaming.operations.hfs" in graph["streaming.job.buckets"]
    hfs = "streaming.operations.hfs"
    planted = {**graph, hfs: {*graph[hfs], "streaming.job.buckets"}}
    assert ["streaming.job", "streaming.operations"] in circles(package_graph(planted))
    assert any(_within("streaming.job.buckets", b) for b in FORBIDDEN["streaming.operations"])


def test_shipped_code_needs_no_dev_tools() -> None:
    broken = []
    for path in _modules():
        name = _module_name(path)
        if _within(name, "streaming.dev"):
            continue
        for mod, at_top in _imports(path):
            if not (_within(mod, "streaming.dev") or _within(mod, "benchmarks")):
                continue
            if name not in DEV_RUNNERS:
                broken.append(f"{name} imports {mod}")
            elif at_top:
                broken.append(
                    f"{name} imports {mod} at module level (import it where the command runs)")
    assert broken == []


def test_bench_without_the_benchmarks_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming.commands import bench
    from streaming.errors import UsageError

    # as from the wheel: no benchmarks package to import
    monkeypatch.setitem(sys.modules, "benchmarks", None)
    monkeypatch.setitem(sys.modules, "benchmarks.quality", None)
    with pytest.raises(UsageError, match="not part of the wheel"):
        bench._benchmark("quality")


def test_no_top_of_streaming_shadows_an_importable_module() -> None:
    """Under spark-submit ``streaming/cli.py`` runs as a script, so ``streaming/`` is first on
    ``sys.path``: a ``streaming/kafka/`` hid kafka-python there (``No module named
    'kafka.errors'``). No name at the top of ``streaming/`` may be one that Python could import from
    elsewhere."""
    import importlib.util

    names = {p.stem for p in (ROOT / "streaming").glob("*.py")} | {
        p.name for p in (ROOT / "streaming").iterdir() if (p / "__init__.py").exists()}
    shadowing = []
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        if name in sys.stdlib_module_names or (
                spec is not None
                and ROOT / "streaming" not in [p.parent for p in map(
                    Path, spec.submodule_search_locations or [spec.origin or ""])]):
            shadowing.append(name)
    assert shadowing == []


def test_every_error_derives_from_one_root() -> None:
    """Every exception class the project defines is a :class:`assignors.errors.RebalancerError`."""
    import importlib

    from assignors.errors import RebalancerError

    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception"))
                    for b in node.bases):
                cls = getattr(importlib.import_module(_module_name(path)), node.name)
                if isinstance(cls, type) and issubclass(cls, BaseException):
                    found.append(cls)
    assert len(found) >= 15
    assert [c.__qualname__ for c in found if not issubclass(c, RebalancerError)] == []
