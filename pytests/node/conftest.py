"""Fixtures for tests with real ternd processes: network (and node_dir,
tern_bin) come from pytests/conftest.py, shared with the other real-process
suites."""
