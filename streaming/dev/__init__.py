"""Development aids (test-data generators); nothing here is used by the collector, the job or consumers."""
