"""``rebalancer reject GROUP [--version N]``: reject a group's proposed recommendation (the command
lives in streaming/commands/approve.py, with ``approve``)."""

from __future__ import annotations

import argparse

from streaming.commands import approve


def register(sub: argparse._SubParsersAction) -> None:
    approve.register(sub, "reject")
