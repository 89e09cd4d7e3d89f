"""The cooperative-sticky assignor under its former module name; it lives in :mod:`assignors.sticky.cooperative`."""

from __future__ import annotations

from assignors.sticky.cooperative import NAME, assign, assign_with_transfers

__all__ = ["NAME", "assign", "assign_with_transfers"]
