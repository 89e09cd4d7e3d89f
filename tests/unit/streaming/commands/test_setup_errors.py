"""Missing prerequisites give one clear message that names the cause (and the log to read)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from streaming import jvm
from streaming.errors import SetupError


def _fake_tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bare_path(tmp_path, monkeypatch):
    """A PATH holding only the fake tools a test puts in it."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    jvm._check_java_version.cache_clear()
    return tmp_path


def test_no_java(bare_path):
    with pytest.raises(SetupError, match="Java 17\\+ not found"):
        jvm.java_executable()


def test_old_java(bare_path):
    _fake_tool(bare_path, "java", 'echo \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    with pytest.raises(SetupError, match="is Java 11; .* need Java 17"):
        jvm.java_executable()


def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(jvm, "STAMP", tmp_path / "jars" / ".resolved")
    monkeypatch.setattr(jvm, "JARS_DIR", tmp_path / "jars")
    monkeypatch.setattr(jvm, "LOG_DIR", tmp_path / "logs")


def test_no_maven(bare_path, monkeypatch):
    _fake_tool(bare_path, "java", 'echo \'openjdk version "17.0.15" 2025-04-15\' >&2\n')
    _isolated_cache(monkeypatch, bare_path)
    with pytest.raises(SetupError, match="Maven \\(mvn\\) not found"):
        jvm.resolve()


def test_unreachable_maven_central_names_the_log(bare_path, monkeypatch):
    _fake_tool(bare_path, "java", 'echo \'openjdk version "17.0.15" 2025-04-15\' >&2\n')
    _fake_tool(bare_path, "mvn",
               "echo '[ERROR] transfer failed for https://repo.maven.apache.org/x: "
               "Unknown host repo.maven.apache.org'\nexit 1\n")
    _isolated_cache(monkeypatch, bare_path)
    with pytest.raises(SetupError) as err:
        jvm.resolve()
    assert "could not reach Maven Central" in str(err.value)
    assert err.value.log_file and os.path.exists(err.value.log_file)
    assert "Unknown host" in Path(err.value.log_file).read_text()


def test_unresolved_cache_says_what_to_run(monkeypatch, tmp_path):
    _isolated_cache(monkeypatch, tmp_path)
    with pytest.raises(SetupError, match="run `rebalancer setup`"):
        jvm.kafka_classpath()
