"""TcpNetwork lives in tern.testing now (the e2e suite and bench/tcpcl use it
too); this module keeps the suite's imports working."""
from tern.testing import TcpNetwork, tcp_log_events  # noqa: F401
