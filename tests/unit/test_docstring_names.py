"""Every name a docstring gives exists, as test_docs checks the Markdown: the docstrings of
``assignors/``, ``streaming/`` and ``benchmarks/`` (module, class and function ones, read with
:mod:`ast`) go through the same checks (paths, bare file names, dotted names under the packages:
there a class's attributes as below), and each Sphinx role (``:mod:``, ``:func:``, ``:class:``,
``:meth:``, ``:attr:``, ``:data:``, ``:exc:``) must resolve from the module it is written in:

- ``.name`` relative to the module's package (one dot per level, as an import);
- a dotted name under a package of the repository, or of an installed library
  (``prometheus_client.X``);
- a name the module defines or imports, followed by attributes of it (``plan.Decision``), where a
  class's attributes include its dataclass fields, annotations and what its methods assign to
  ``self``; or a module of the same package by its own name (``search._offer_swaps`` in
  ``assignors.balanced.steps``);
- a single name: also a builtin, or an attribute of a class of the module (a method named from its
  class).

So a module that moves or a function renamed since a docstring was written makes this fail, as
``:mod:`.clients``` did after ``kafka_clients.clients`` became ``factories``."""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.test_docs import DOTTED, check_bare_files, check_paths

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("assignors", "streaming", "benchmarks")
ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj):`~?([\w.]+)`")


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text())
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return "\n".join(d for n in ast.walk(tree)
                     if isinstance(n, kinds) and (d := ast.get_docstring(n, clean=False)))


def has(obj: object, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    if not isinstance(obj, type):
        return False
    if (attr in getattr(obj, "__dataclass_fields__", {})
            or attr in getattr(obj, "__annotations__", {})):
        return True
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return False
    return re.search(rf"self\.{attr}\b\s*(?::[^=\n]*)?=", source) is not None


def follow(obj: object, attrs: list[str]) -> bool:
    for a in attrs:
        if not has(obj, a):
            return False
        obj = getattr(obj, a, None)
    return True


@functools.cache
def imported(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def absolute(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = imported(".".join(parts[:cut]))
        if module is not None:
            return follow(module, parts[cut:])
    return False


def resolves(name: str, module: ModuleType, package: str) -> bool:
    if name.startswith("."):
        dots = len(name) - len(name.lstrip("."))
        base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
        return absolute(f"{base}.{name.lstrip('.')}")
    first, *rest = name.split(".")
    if first in SOURCES:
        return absolute(name)
    if hasattr(module, first) and follow(getattr(module, first), rest):
        return True
    if not rest:
        return hasattr(builtins, first) or any(
            has(c, first) for c in vars(module).values()
            if isinstance(c, type) and c.__module__ == module.__name__)
    return absolute(name) or absolute(f"{package}.{name}")


def check_roles(text: str, module_path: Path) -> list[str]:
    name = module_name(module_path)
    module = importlib.import_module(name)
    package = name if module_path.name == "__init__.py" else name.rsplit(".", 1)[0]
    return [f"{role}: does not resolve from {name}" for role in sorted(set(ROLE.findall(text)))
            if not resolves(role, module, package)]


FILES = sorted(p for top in SOURCES for p in (ROOT / top).rglob("*.py") if docstrings(p))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_in_the_docstrings_exists(path: Path) -> None:
    text = docstrings(path)
    dotted = [f"{n}: no such name" for n in sorted(set(DOTTED.findall(text))) if not absolute(n)]
    assert [*check_paths(text), *check_bare_files(text), *dotted, *check_roles(text, path)] == []


@pytest.mark.parametrize("planted",
                         [":mod:`.clients`", ":func:`no_such_function`",
                          ":class:`plan.NoSuchClass`",
                          ":attr:`~streaming.state.group_state.GroupState.no_such_field`",
                          ":meth:`RejoinOnRecommendation.no_such_method`"])
def test_a_planted_bad_role_is_caught(planted: str) -> None:
    assert check_roles(f"Prose around {planted}, and more.", ROOT / "streaming/apply/rejoin.py")


def test_the_roles_that_resolve_are_read_as_such() -> None:
    """Each form above, from a module that uses it: a check that passed everything would fail
    here."""
    good = (":mod:`.feed`, :func:`~streaming.apply.plan.rejoin_reason`, "
            ":class:`RecommendationAssignor`, :meth:`RejoinOnRecommendation.check`, "
            ":attr:`~streaming.state.group_state.GroupState.capacity`, :meth:`start`, "
            ":class:`ValueError`, :class:`plan.Decision`")
    assert check_roles(good, ROOT / "streaming/apply/rejoin.py") == []
    assert len(FILES) > 200
