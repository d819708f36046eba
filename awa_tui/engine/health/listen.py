"""Where /metrics listens (S43): HOST:PORT checked before anything starts, and the default
cap of per-schedule series. Apart from metrics.py so that the CLI can refuse a bad address
without importing prometheus_client (every command starts faster)."""

from __future__ import annotations

import ipaddress

from awa_tui.engine.core.errors import ValidationError

# Per-schedule series for at most this many schedules by default (x 11 series each).
DEFAULT_SCHEDULE_SERIES = 1000


def parse_addr(text: str, option: str = "--metrics-addr") -> tuple[str, int]:
    """HOST:PORT (IPv6 as [::1]:9464; port 0: any free port), refused in one line when malformed."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValidationError(f"{option}: expected HOST:PORT such as 127.0.0.1:9464, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValidationError(f"{option}: not an IPv6 address: {text!r}") from None
    elif ":" in host or any(ch.isspace() for ch in host):
        raise ValidationError(f"{option}: expected HOST:PORT such as 127.0.0.1:9464, got {text!r}")
    return host, int(port_text)
