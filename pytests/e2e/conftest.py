"""Fixtures for the end-to-end tests: real ternd processes over LTP/UDP with
a link emulator (tools/linkem) on their link. network (see
pytests/conftest.py) puts a linkem on an edge with links={(a, b): {...}} and
writes announced outages into the contact plan with planned_outages=...;
linkem_built fails a test early when linkem is not built.
"""
import os

import pytest

from tern import linkem


@pytest.fixture(autouse=True)
def linkem_built():
    if not os.access(linkem.binary(), os.X_OK):
        pytest.fail(f"{linkem.binary()} is not built (run 'make build')")
