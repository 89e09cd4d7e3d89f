"""Per-group state of the streaming job: what it holds and how events change it (pure Python)."""
