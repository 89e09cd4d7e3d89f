"""The layers run one way, checked on the source: every import of every module of ``assignors/`` and
``streaming/``, read with :mod:`ast` (lazy imports inside functions included).

    streaming.job (Spark edge) -> streaming.policy (decisions) -> streaming.state (a group and how
    events change it) -> assignors (pure)

The consumer side (``streaming.apply``) and the collector stand apart: neither needs the job's state or
policy, nor each other. The development tools (``streaming.dev``) and the benchmarks are never imported
by shipped code, except lazily by the commands that run them (see docs/architecture.md).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("assignors", "streaming")

SHARED_ABOVE = ("streaming.state", "streaming.policy", "streaming.job", "streaming.apply", "streaming.collector",
                "streaming.commands", "streaming.cli", "streaming.dev")
"""What the shared modules at the top of ``streaming/`` (events, config, errors, ...) never import."""

FORBIDDEN = {
    "assignors": ("streaming", "benchmarks"),
    "streaming.state": ("streaming.policy", "streaming.job", "streaming.apply", "streaming.collector",
                        "streaming.commands", "streaming.cli", "streaming.dev", "benchmarks"),
    "streaming.policy": ("streaming.job", "streaming.apply", "streaming.collector", "streaming.commands",
                         "streaming.cli", "streaming.dev", "benchmarks"),
    "streaming.job": ("streaming.apply", "streaming.collector", "streaming.commands", "streaming.cli",
                      "streaming.dev", "benchmarks"),
    "streaming.apply": ("streaming.state", "streaming.policy", "streaming.job", "streaming.collector",
                        "streaming.commands", "streaming.cli", "streaming.dev", "benchmarks"),
    "streaming.collector": ("streaming.state", "streaming.policy", "streaming.job", "streaming.apply",
                            "streaming.commands", "streaming.cli", "streaming.dev", "benchmarks"),
    # the Prometheus exporter serves the job's and the collector's figures; it reads the collector's
    # snapshot types but decides nothing and runs no command
    "streaming.exporter": ("streaming.state", "streaming.policy", "streaming.job", "streaming.apply",
                           "streaming.commands", "streaming.cli", "streaming.dev", "benchmarks"),
}
"""package -> what none of its modules may import, anywhere in the module."""

DEV_RUNNERS = {"streaming.commands.demo", "streaming.commands.smoke", "streaming.commands.workload",
               "streaming.commands.bench"}
"""The only shipped modules that import the development tools or the benchmarks, and only inside functions."""


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
            "streaming.apply.plan", "streaming.collector.poll", "assignors.model"} <= names


def test_layers_run_one_way() -> None:
    broken = []
    for path in _modules():
        name = _module_name(path)
        for package, banned in FORBIDDEN.items():
            if not _within(name, package):
                continue
            broken += [f"{name} imports {mod}" for mod, _ in _imports(path)
                       if any(_within(mod, b) for b in banned)]
        if path.parent == ROOT / "streaming" and name not in SHARED_ABOVE:  # streaming/events.py, config.py, ...
            broken += [f"{name} (shared) imports {mod}" for mod, _ in _imports(path)
                       if any(_within(mod, b) for b in SHARED_ABOVE)]
    assert broken == []


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
                broken.append(f"{name} imports {mod} at module level (import it where the command runs)")
    assert broken == []


def test_bench_without_the_benchmarks_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming.commands import bench
    from streaming.errors import UsageError

    # as from the wheel: no benchmarks package to import
    monkeypatch.setitem(sys.modules, "benchmarks", None)
    monkeypatch.setitem(sys.modules, "benchmarks.quality", None)
    with pytest.raises(UsageError, match="not part of the wheel"):
        bench._benchmark("quality")


def test_every_error_derives_from_one_root() -> None:
    """Every exception class the project defines is a :class:`assignors.errors.RebalancerError`."""
    import importlib

    from assignors.errors import RebalancerError

    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in node.bases):
                cls = getattr(importlib.import_module(_module_name(path)), node.name)
                if isinstance(cls, type) and issubclass(cls, BaseException):
                    found.append(cls)
    assert len(found) >= 15
    assert [c.__qualname__ for c in found if not issubclass(c, RebalancerError)] == []
