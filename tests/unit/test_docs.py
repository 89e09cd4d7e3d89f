"""Every name the docs give exists: README.md and docs/*.md are read as text and each name is
checked against the code, so a module that moves, a command or option that is renamed or a setting
that goes makes this fail.

What is checked, and against what:

- a Python module named without its folder (``sinks.py``): some file of the repository has the name
  (Java files are left alone: the docs quote Kafka's);
- paths under a folder of the repository (``streaming/job/sinks.py``, ``tests/data/fit/*status*``):
  on disk (globs must match something; ``<placeholders>`` and the wheel-only ``streaming/_conf`` are
  skipped);
- dotted names under ``streaming``, ``assignors`` or ``benchmarks``
  (``streaming.policy.recommend.process``): the longest importable module prefix, then the rest as
  attributes of it;
- ``rebalancer COMMAND [SUBCOMMAND] --options`` in code (inline spans and fenced blocks;
  ``streaming/cli.py`` as under spark-submit): against the argparse parser
  :func:`streaming.cli.build_parser` builds, each option against its own command's parser;
- an inline span that is only an option (``--pending-for``): an option of some ``rebalancer``
  command or benchmark, or one of the few other tools' options the docs quote
  (:data:`OTHER_TOOLS_OPTIONS`);
- ``python -m benchmarks.X --options`` (and ``python -m streaming.dev.X``): the module (a package
  needs ``__main__.py``) and the options its source passes to ``add_argument``;
- configuration keys ``section.key`` whose section is one of :class:`streaming.config.Config`'s: the
  key a field of that section's dataclass (``policy.assignor_options.KEY``: an option some assignor
  declares). ``kafka.*`` and ``spark.*`` also pass Kafka's and Spark's own settings through
  (``kafka.client.id``, ``spark.sql.shuffle.partitions``), so there only a key with ``_`` (our
  spelling, never theirs) must be a field. Kafka's settings (``group.protocol``, ``client.rack``)
  have no section of ours and are not read;
- relative links: the file exists, and a ``#anchor`` is a heading of the target page (GitHub's
  slugs).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import glob
import importlib
import importlib.util
import re
import typing
from pathlib import Path

import pytest

from assignors import registry
from streaming.cli import build_parser
from streaming.config import Config

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

TOP_FOLDERS = ("streaming", "assignors", "benchmarks", "tests", "conf", "clients", "docs")
PACKAGES = ("streaming", "assignors", "benchmarks")
GENERATED = ("streaming/_conf",)
"""Paths that exist only in a built wheel (conf/ copied into the package)."""
FILE_SUFFIXES = frozenset({"py", "md", "toml", "json", "txt", "png", "properties", "java", "jar",
                           "xml", "bin"})
"""``metrics.py`` is a file name, not the key ``py`` of section ``metrics``."""
OTHER_TOOLS_OPTIONS = frozenset({
    "--master", "--jars", "--packages", "--py-files", "--conf",  # spark-submit
    "--no-deps", "--no-build-isolation",  # pip wheel
    # Kafka's group tools / kafka-reassign-partitions
    "--describe", "--members", "--offsets", "--state", "--verbose", "--verify",
    "--help",
})

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
BARE_FILE = re.compile(r"(?<![\w./-])(\w+\.py)\b")
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP_FOLDERS)})/[\w./<>*-]*)")
DOTTED = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)})(?:\.\w+)+)")
COMMAND = re.compile(r"(?<![\w.=-])(?:rebalancer|streaming/cli\.py)(?=\s)")
BENCHMARK = re.compile(r"python -m ((?:benchmarks|streaming\.dev)(?:\.\w+)+)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)
SEPARATORS = re.compile(r"[;&|#]|\s/\s")
"""Where a command line ends inside a code region: ``;``, ``&``/``&&``, a pipe, a comment, `` / ``
in prose."""


def config_fields() -> dict[str, frozenset[str]]:
    """Each section of the configuration and the names of its settings, from the dataclasses."""
    hints = typing.get_type_hints(Config)
    return {f.name: frozenset(g.name for g in dataclasses.fields(hints[f.name]))
            for f in dataclasses.fields(Config)}


SECTIONS = config_fields()
KEY = re.compile(
    rf"(?<![\w./-])({'|'.join(SECTIONS)})\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?(?![\w(])")


@functools.cache
def parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the ``rebalancer`` command line by its path: ``()``, ``("run",)``,
    ``("kafka", "up")``."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


@functools.cache
def assignor_options() -> frozenset[str]:
    return frozenset(o for name in registry.names() for o in registry.options(name))


@functools.cache
def benchmark_options(module: str) -> frozenset[str] | None:
    """The ``--options`` a benchmark's source passes to ``add_argument`` (a package: all its files);
    None when ``python -m module`` could not run."""
    base = ROOT / module.replace(".", "/")
    files = [base.with_suffix(".py")] if base.with_suffix(".py").is_file() else []
    if (base / "__main__.py").is_file():
        files = sorted(base.glob("*.py"))
    if not files:
        return None
    found: set[str] = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                found.update(a.value for a in node.args if isinstance(a, ast.Constant)
                             and isinstance(a.value, str) and a.value.startswith("--"))
    return frozenset(found)


def all_options() -> frozenset[str]:
    ours = set().union(*(options_of(p) for p in parsers().values()))
    for file in (ROOT / "benchmarks").glob("*.py"):
        ours |= benchmark_options(f"benchmarks.{file.stem}") or set()
    # the packages (loop, chaos, soak, speed, ...)
    for main in (ROOT / "benchmarks").glob("*/__main__.py"):
        ours |= benchmark_options(f"benchmarks.{main.parent.name}") or set()
    # the development tools run as modules (python -m streaming.dev.fuzz)
    for main in (ROOT / "streaming" / "dev").rglob("__main__.py"):
        module = ".".join(main.parent.relative_to(ROOT).parts)
        ours |= benchmark_options(module) or set()
    return frozenset(ours | OTHER_TOOLS_OPTIONS)


def code_regions(text: str) -> list[str]:
    """The code of a page: each fenced block's lines (``\\`` continuations joined) and each inline
    span."""
    regions: list[str] = []
    for block in FENCE.findall(text):
        regions += block.replace("\\\n", " ").splitlines()
    regions += INLINE.findall(FENCE.sub("", text))
    return regions


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", text))}


def check_paths(text: str) -> list[str]:
    problems = []
    for raw in sorted(set(PATH.findall(text))):
        path = raw.rstrip(".,:")
        if "<" in path or path.rstrip("/").startswith(GENERATED):
            continue
        exists = glob.glob(str(ROOT / path)) if "*" in path else (ROOT / path).exists()
        if not exists:
            problems.append(f"path {path}: not in the repository")
    return problems


def module_prefix(parts: list[str]) -> int:
    """How many leading parts of a dotted name are a module (0: not even the first)."""
    cut = 0
    for i in range(1, len(parts) + 1):
        try:
            if importlib.util.find_spec(".".join(parts[:i])) is None:
                break
        except ModuleNotFoundError:  # the parent is a module, not a package
            break
        cut = i
    return cut


@functools.cache
def file_names() -> frozenset[str]:
    return frozenset(p.name
                     for folder in ("streaming", "assignors", "benchmarks", "tests", "clients")
                     for p in (ROOT / folder).rglob("*.py"))


def check_bare_files(text: str) -> list[str]:
    """``sinks.py``, named without its folder: some module of the repository has that name."""
    return [f"file {name}: no module of that name" for name in sorted(set(BARE_FILE.findall(text)))
            if name not in file_names()]


def check_dotted(text: str) -> list[str]:
    problems = []
    for name in sorted(set(DOTTED.findall(text))):
        parts = name.split(".")
        cut = module_prefix(parts)
        if not cut:
            problems.append(f"module {name}: no such module")
            continue
        target: object = importlib.import_module(".".join(parts[:cut]))
        for i, attr in enumerate(parts[cut:], cut):
            if not hasattr(target, attr):
                problems.append(f"name {name}: {'.'.join(parts[:i])} has no {attr!r}")
                break
            target = getattr(target, attr)
    return problems


def check_command(rest: str) -> list[str]:
    """One ``rebalancer ...`` command line (what follows the word ``rebalancer``)."""
    words = rest.split()
    path: tuple[str, ...] = ()
    while words and words[0] in ("-v", "--verbose", "--version"):
        words.pop(0)
    while words and re.fullmatch(r"[a-z][a-z-]*", words[0]) and any(
            len(p) == len(path) + 1 and p[:-1] == path for p in parsers()):
        word = words.pop(0)
        if (*path, word) not in parsers():
            return [f"command rebalancer {' '.join((*path, word))}: no such command"]
        path = (*path, word)
    if not path and words and re.fullmatch(r"[A-Z][A-Z_]*", words[0]):
        return []  # rebalancer COMMAND --help: a placeholder for any command
    known = options_of(parsers()[path])
    return [f"option rebalancer {' '.join(path)} {o}: no such option"
            for o in OPTION.findall(" ".join(words)) if o not in known]


def check_commands(text: str) -> list[str]:
    problems = []
    for region in code_regions(text):
        for line in SEPARATORS.split(region):
            starts = [m.end() for m in COMMAND.finditer(line)]
            for i, start in enumerate(starts):
                end = starts[i + 1] if i + 1 < len(starts) else len(line)
                problems += check_command(line[start:end].rsplit("rebalancer", 1)[0]
                                          if i + 1 < len(starts) else line[start:end])
        if re.fullmatch(r"--[a-z][a-z0-9-]*(?:[ =].*)?", region.strip(), re.S):
            option = OPTION.match(region.strip())
            if option and option.group() not in all_options():
                problems.append(f"option {option.group()}: no command or benchmark takes it")
    return problems


def check_benchmarks(text: str) -> list[str]:
    problems = []
    for region in [*code_regions(text), *text.splitlines()]:
        for line in SEPARATORS.split(region):
            for m in BENCHMARK.finditer(line):
                known = benchmark_options(m.group(1))
                if known is None:
                    problems.append(f"benchmark python -m {m.group(1)}: no such module")
                    continue
                problems += [f"option python -m {m.group(1)} {o}: no such option"
                             for o in OPTION.findall(line[m.end():]) if o not in known]
    return sorted(set(problems))


KAFKA_CLIENT_KEYS = ("metrics.sample.window.ms", "metrics.num.samples")
"""Kafka client settings whose names begin as one of our sections does (docs/java.md)."""


def check_config_keys(text: str) -> list[str]:
    problems = []
    for name in KAFKA_CLIENT_KEYS:
        text = text.replace(name, "")
    for section, key, entry in sorted(set(KEY.findall(text))):
        if key in FILE_SUFFIXES:
            continue
        if section in ("kafka", "spark") and key not in SECTIONS[section] and "_" not in key:
            continue  # a Kafka or Spark setting passed through as it is
        if key not in SECTIONS[section]:
            problems.append(f"config key {section}.{key}: [{section}] has no such setting")
        elif ((section, key) == ("policy", "assignor_options") and entry
              and entry not in assignor_options()):
            problems.append(
                f"config key policy.assignor_options.{entry}: no assignor declares {entry!r}")
    return problems


def check_links(text: str, page: Path) -> list[str]:
    problems = []
    for target in sorted(set(LINK.findall(FENCE.sub("", text)))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists() and file:
            problems.append(f"link {target}: no file {file}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(
                text if not file else path.read_text()):
            problems.append(f"link {target}: {path.name} has no heading #{anchor}")
    return problems


def check(text: str, page: Path = ROOT / "README.md") -> list[str]:
    """Every name in ``text`` (a page's Markdown) that does not exist, one message each."""
    return [*check_paths(text), *check_bare_files(text), *check_dotted(text), *check_commands(text),
            *check_benchmarks(text), *check_config_keys(text), *check_links(text, page)]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_in_the_docs_exists(page: Path) -> None:
    assert check(page.read_text(), page) == []


@pytest.mark.parametrize(("planted", "name"), [
    ("`job.state_bucketz`", "job.state_bucketz"),
    ("`--conf policy.no_such_setting=1`", "policy.no_such_setting"),
    ("`kafka.lag_topicz`", "kafka.lag_topicz"),
    ("`policy.assignor_options.no_such_option=1`", "no_such_option"),
    ("`streaming/policy/decide.py`", "streaming/policy/decide.py"),
    ("put together by `decide.py`", "decide.py"),
    ("`streaming.policy.decide`", "streaming.policy.decide"),
    ("`streaming.policy.recommend.no_such_function`", "no_such_function"),
    ("`rebalancer frobnicate`", "frobnicate"),
    ("`rebalancer kafka sideways`", "sideways"),
    ("`rebalancer run --no-such-option`", "--no-such-option"),
    ("```bash\nrebalancer collect --interval 10 \\\n  --no-such-option\n```", "--no-such-option"),
    ("`--no-such-option`", "--no-such-option"),
    ("`python -m benchmarks.nope`", "benchmarks.nope"),
    ("`.venv/bin/python -m benchmarks.chaos --no-such-option`", "--no-such-option"),
    ("[a page](docs/no-such-page.md)", "docs/no-such-page.md"),
    ("[a heading](docs/design.md#no-such-heading)", "#no-such-heading"),
])
def test_a_planted_bad_name_is_caught(planted: str, name: str) -> None:
    problems = check(f"Some prose around it: {planted}, and more.\n")
    assert problems, planted
    assert all(name in p for p in problems), problems


def test_other_tools_names_are_left_alone() -> None:
    text = """Kafka's own settings: `group.protocol=consumer`, `client.rack`, `fetch.max.wait.ms`,
    `replica.selector.class`, `group.consumer.assignors`, passed through:
    `--conf kafka.client.id=r`, `spark.sql.shuffle.partitions`, `spark.hadoop.fs.s3a.endpoint`;
    file names `metrics.py`, `sinks.py`; the rebalancer watches groups; `rebalancer COMMAND --help`;
    `rebalancer.triggers`; the job. Then `kafka_rebalancer_job_batches_total`,
    `https://example.com/streaming/nothing`."""
    assert check(text) == []


def test_the_docs_are_read_at_all() -> None:
    """The checks see the names they are meant to: a regex that matched nothing would pass every
    page."""
    text = "\n".join(p.read_text() for p in DOCS)
    keys = {f"{s}.{k}" for s, k, _ in KEY.findall(text)}
    assert {"job.state_buckets", "policy.mode", "paths.tables", "metrics.enabled",
            "maintenance.rejected_retention_days", "kafka.bootstrap_servers"} <= keys
    assert ({"streaming/lag/rules.py", "streaming/contracts/recommendation.py"}
            <= set(PATH.findall(text)))
    assert "benchmarks.chaos" in BENCHMARK.findall(text)


def test_the_readme_lists_every_command() -> None:
    """The README's command table names every ``rebalancer`` command and subcommand."""
    readme = (ROOT / "README.md").read_text()
    rows = {m.group(1)
            for m in re.finditer(r"^\| `rebalancer ([a-z ]+?)(?: [A-Z-]|`)", readme, re.M)}
    rows |= {m.group(1) for m in re.finditer(r"/ `rebalancer ([a-z ]+?)(?: [A-Z-]|`)", readme)}
    commands = {" ".join(p) for p in parsers()
                if p and not any(q[:len(p)] == p and q != p for q in parsers())}
    assert commands <= rows, sorted(commands - rows)
