"""A tern.testing.Network whose nodes talk BP over TCP: flavour "tcp"
(TCPCLv4), "stcp" or "mtcp". Each node keeps the udp induct Network
publishes (its start-up check looks for it) and gets a TCP induct of the
flavour on its own TCP port; every outduct and plan uses the TCP flavour."""
import os
import socket
import time

from tern.testing import Network, free_ports, read_ports


class TcpNetwork(Network):
    def __init__(self, base, n=2, *, flavour="tcp", duct_ports=None, **kw):
        """duct_ports: {(me, peer): port} points me's outduct for peer at
        another port (a test's own peer) instead of peer's induct."""
        self.duct_ports = dict(duct_ports or {})
        if flavour not in ("tcp", "stcp", "mtcp"):
            raise ValueError(f"flavour {flavour!r}: expected tcp, stcp or mtcp")
        self.flavour = flavour
        self.tcp_ports = {}
        numbers = list(kw.get("numbers") or range(1, n + 1))
        for num, port in zip(numbers, free_ports(len(numbers), kind=socket.SOCK_STREAM)):
            self.tcp_ports[num] = port
        super().__init__(base, n, protocol="udp", **kw)

    def _port(self, me, peer):
        return self.duct_ports.get((me, peer), self.tcp_ports[peer])

    def _duct(self, me, peer):
        return f"{self.flavour}/127.0.0.1:{self._port(me, peer)}"

    def rc_text(self, num):
        text = super().rc_text(num)
        me = self.nodes[num]
        f = self.flavour
        out = []
        for line in text.splitlines():
            if line.startswith("a outduct udp"):
                continue
            out.append(line)
            if line.startswith("a induct udp"):
                out.append(f"a protocol {f}")
                out.append(f"a induct {f} 127.0.0.1:{self.tcp_ports[num]} {f}cli")
                out += [f"a outduct {f} 127.0.0.1:{self._port(num, p)} {f}clo"
                        for p in me.neighbours]
        return "\n".join(out) + "\n"

    def tcp_port(self, num):
        """The TCP port node num published for its induct."""
        return read_ports(self.nodes[num].dir).get((f"bp-{self.flavour}", "tcp"))

    def wait_log(self, num, text, timeout=20):
        """Waits until node num's ternd.log contains text; returns the log."""
        path = os.path.join(self.nodes[num].dir, "ternd.log")
        deadline = time.monotonic() + timeout
        log = ""
        while time.monotonic() < deadline:
            try:
                with open(path, errors="replace") as f:
                    log = f.read()
            except FileNotFoundError:
                log = ""
            if text in log:
                return log
            time.sleep(0.1)
        raise TimeoutError(f"node {num}: '{text}' not in its log after {timeout} s\n"
                           f"{log[-3000:]}")
