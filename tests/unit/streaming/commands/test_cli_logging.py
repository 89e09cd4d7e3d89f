"""Commands print their answer: a live display's logs go to a file it names, -v brings them back,
and kafka-python's warnings stay out of a verdict."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator

import pytest

from streaming import cli, paths


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {n: logging.getLogger(n).level for n in ("kafka", "py4j")}
    yield
    for h in root.handlers:
        if h not in handlers:
            h.close()
    root.handlers[:] = handlers
    root.setLevel(level)
    for n, lv in levels.items():
        logging.getLogger(n).setLevel(lv)


def test_a_live_display_logs_to_the_file_it_names(tmp_path, monkeypatch, capsys, root_restored):
    monkeypatch.setattr(paths, "LOG_DIR", tmp_path)
    cli.setup_logging(argparse.Namespace(verbose=False, log_file="demo"))
    logging.getLogger("streaming.collector").info("poll 7")
    logging.getLogger("kafka.net.selector").warning("Task ran for 0.109s (>0.100s threshold)")
    said = capsys.readouterr()
    (log,) = tmp_path.glob("demo-*.log")
    assert f"logs: {log}" in said.out and "poll 7" not in said.out + said.err
    assert "poll 7" in log.read_text() and "0.109s" not in log.read_text()


def test_verbose_brings_every_line_back_to_the_terminal(tmp_path, monkeypatch, capsys,
                                                        root_restored):
    monkeypatch.setattr(paths, "LOG_DIR", tmp_path)
    cli.setup_logging(argparse.Namespace(verbose=True, log_file="demo"))
    logging.getLogger("kafka.net.selector").debug("connecting")
    said = capsys.readouterr()
    assert not list(tmp_path.glob("*.log")) and "connecting" in said.err
