"""Which embedded clusters end with the process that started them (no broker is started here; the
SIGKILL case is in tests/integration/test_foundation.py)."""

from __future__ import annotations

import shutil
import threading

import pytest

from streaming.embedded.cluster import KafkaCluster
from streaming.errors import KafkaClusterError


def test_a_node_gets_the_parent_death_signal_unless_its_cluster_outlives_the_owner(tmp_path):
    owned = KafkaCluster(base_dir=tmp_path / "owned")
    kept = KafkaCluster(base_dir=tmp_path / "kept", outlives_owner=True)
    assert shutil.which("setpriv"), "util-linux's setpriv (Debian: essential) is needed here"
    assert owned._owner_bound() == [shutil.which("setpriv"), "--pdeathsig", "TERM", "--"]
    assert kept._owner_bound() == []
    # started off the main thread, a node would be signalled when that thread ends
    seen: list[list[str]] = []
    thread = threading.Thread(target=lambda: seen.append(owned._owner_bound()))
    thread.start()
    thread.join()
    assert seen == [[]]


def test_only_a_cluster_that_outlives_its_owner_is_recorded_for_kafka_down(tmp_path):
    with pytest.raises(KafkaClusterError, match="outlives_owner"):
        KafkaCluster(base_dir=tmp_path).save_state()
