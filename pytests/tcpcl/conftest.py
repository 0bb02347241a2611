"""Fixtures for the TCP convergence-layer tests with real ternd processes:
the shared network fixture (pytests/conftest.py) builds tcphelp.TcpNetwork
here — network(n, flavour=..., **kw)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tcphelp import TcpNetwork  # noqa: E402


@pytest.fixture
def network_class():
    return TcpNetwork
