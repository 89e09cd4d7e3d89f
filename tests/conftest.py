"""Test layout: tests/unit runs in seconds without a JVM; tests/integration uses the real Kafka broker,
Spark and Delta (one cluster and one SparkSession per test session). Select with -m integration / -m java."""

from __future__ import annotations

from pathlib import Path

import pytest

INTEGRATION = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION in Path(item.fspath).parents and "java" not in item.keywords:
            item.add_marker(pytest.mark.integration)
