"""The Java member wrapper's protocol, driven by a stand-in child process (a few lines of Python
that speak it): settings on stdin, ``assigned`` lines parsed, every line logged, leaving when stdin
closes."""

from __future__ import annotations

import sys
import time

from streaming.dev.java_process import JavaProcess, parse_assigned

CHILD = r"""
import sys
settings = []
for line in sys.stdin:
    if line.strip() == "#end":
        break
    settings.append(line.strip())
print("log INFO got " + ",".join(settings), flush=True)
print("assigned orders-0,my-topic-11", flush=True)
print("assigned", flush=True)
print("assigned a-b-2", flush=True)
sys.stdin.read()  # until the wrapper closes our input
print("log INFO leaving", flush=True)
"""


class Recording(JavaProcess):
    def __init__(self, *args, **kwargs) -> None:
        self.seen: list[str] = []
        super().__init__(*args, **kwargs)

    def on_line(self, line: str) -> None:
        self.seen.append(line)


def test_parse_assigned_splits_at_the_last_dash() -> None:
    assert parse_assigned("assigned orders-0,my-topic-11") == {("orders", 0), ("my-topic", 11)}
    assert parse_assigned("assigned") == set()
    assert parse_assigned("log INFO assigned x-1") is None


def test_settings_in_assignments_out_and_leaving_on_closed_input(tmp_path) -> None:
    log = open(tmp_path / "c0.log", "w")  # noqa: SIM115 (the wrapper's reader closes it)
    member = Recording([sys.executable, "-c", CHILD], "c0",
                       stdin_text="bootstrap.servers=x:1\n#end\n", log=log)
    deadline = time.monotonic() + 30
    while len(member.output()) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert member.alive  # still in the group: its input is open
    # the latest line wins, an empty one cleared the earlier set
    assert member.assignment() == {("a-b", 2)}
    member.stop(timeout_s=30)
    assert not member.alive
    assert member.output() == ["log INFO got bootstrap.servers=x:1",
                               "assigned orders-0,my-topic-11", "assigned",
                               "assigned a-b-2", "log INFO leaving"]
    assert member.seen == member.output()
    assert log.closed and (tmp_path / "c0.log").read_text().splitlines() == member.output()
