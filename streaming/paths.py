"""Where things live on disk. ``REBALANCER_HOME`` overrides the project root (default: this checkout)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(os.environ.get("REBALANCER_HOME", Path(__file__).resolve().parents[1]))
CONF_DIR = PROJECT_ROOT / "conf"
CACHE_DIR = PROJECT_ROOT / ".cache"
JARS_DIR = CACHE_DIR / "jars"
LOG_DIR = CACHE_DIR / "logs"
CHECKPOINTS_DIR = PROJECT_ROOT / "checkpoints"
DATA_DIR = PROJECT_ROOT / "data"
