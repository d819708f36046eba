"""Alert sinks (S63): where alerts go, added and removed by operators (audited by the
database's trigger, v023), read with their secrets masked.

A secret (a webhook's or Slack's URL, a webhook's HMAC key, a PagerDuty routing key) is best
named, not stored: `env:NAME` or `file:/path`, read by the runtime when it delivers, like
--dsn-file reads a DSN (the same checks: one line, not readable by every user). A URL given
as is is stored (any role that may read the table can read it) and every read of ours shows
its scheme and host only.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

import psycopg

from awa_tui.engine.alerts.models import KINDS, ROUTES, SEVERITIES, Sink, SinkInfo
from awa_tui.engine.core.audit import begin_action
from awa_tui.engine.core.errors import AwaError, Conflict, NotFound, ReadOnly, ValidationError
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.core.scope import owner_scope

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_CHANNEL_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# PagerDuty's Events API v2 endpoint, unless the sink names another (a proxy, a test).
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"

SINK_COLUMNS = "name, kind, route_by, route_value, url, url_ref, key_ref, channel, group_open"


def check_sink_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValidationError(f"sink name: 1-64 letters, digits, '.', '_' or '-', got {name!r:.70}")
    return name


def parse_route(text: str) -> tuple[str, str | None]:
    """`all`, or `owner=NAME`, `queue=NAME`, `tag=NAME`, `severity=warning|critical`."""
    if text == "all":
        return "all", None
    by, sep, value = text.partition("=")
    if not sep or by not in ROUTES or by == "all" or not value:
        raise ValidationError(f"route: 'all' or one of owner=, queue=, tag=, severity= with a value, got {text!r:.70}")
    if by == "severity" and value not in SEVERITIES:
        raise ValidationError(f"route: severity is warning or critical, got {value!r:.40}")
    return by, value


def check_url(url: str, field: str = "url") -> str:
    """An http(s) URL with a host; one line naming the field, never quoting the URL (its
    path may be the secret)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValidationError(f"{field}: not a URL") from None
    if parts.scheme not in ("http", "https"):
        raise ValidationError(f"{field}: must be an http:// or https:// URL")
    if not parts.hostname:
        raise ValidationError(f"{field}: the URL has no host")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise ValidationError(f"{field}: the URL holds spaces or control characters")
    return url


def mask_url(url: str) -> str:
    """Scheme, host and port only: a webhook's path and query are often the secret, and
    user:password@ always is."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a stored URL)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}/…"


def secret_ref(env: str | None, file: str | None, field: str) -> str | None:
    """`env:NAME` or `file:/path` from the two ways of naming a secret (at most one)."""
    if env is not None and file is not None:
        raise ValidationError(f"{field}: give the environment variable or the file, not both")
    if env is not None:
        if not _ENV_RE.match(env):
            raise ValidationError(f"{field}: not an environment variable name: {env!r:.70}")
        return f"env:{env}"
    if file is not None:
        if not os.path.isabs(file) or any(not ch.isprintable() for ch in file):
            raise ValidationError(f"{field}: an absolute path is required, got {file!r:.70}")
        return f"file:{file}"
    return None


def read_secret(ref: str, what: str) -> str:
    """The secret `ref` names, read now; a one-line AwaError naming where, never what."""
    from awa_tui.config import read_dsn_file

    source, _, where = ref.partition(":")
    if source == "env":
        value = os.environ.get(where, "").strip()
        if not value:
            raise AwaError(f"{what}: the environment variable {where} is not set")
        return value
    return read_dsn_file(where, what)


def sink_url(sink: Sink) -> str:
    """The URL a sink posts to, read now (a stored one, or its env:/file: source)."""
    if sink.url is not None:
        return sink.url
    if sink.url_ref is not None:
        return check_url(read_secret(sink.url_ref, f"sink {sink.name}: URL"), f"sink {sink.name}: URL")
    if sink.kind == "pagerduty":
        return PAGERDUTY_URL
    raise AwaError(f"sink {sink.name}: no URL")


def _target(row: dict[str, Any]) -> str:
    if row["channel"] is not None:
        return f"channel {row['channel']}"
    if row["url"] is not None:
        return mask_url(row["url"])
    if row["url_ref"] is not None:
        return str(row["url_ref"])
    return mask_url(PAGERDUTY_URL)


def _info(row: dict[str, Any]) -> SinkInfo:
    return SinkInfo(name=row["name"], kind=row["kind"], route_by=row["route_by"], route_value=row["route_value"],
                    target=_target(row), key_from=row["key_ref"], created_at=row.get("created_at"))


def _known_target(conn: psycopg.Connection[Any], by: str, value: str) -> bool:
    sql = {
        "owner": "SELECT EXISTS (SELECT 1 FROM awa.cron_jobs WHERE owner = %(v)s) "
                 "OR EXISTS (SELECT 1 FROM awa.owners WHERE owner = %(v)s) AS known",
        "queue": "SELECT EXISTS (SELECT 1 FROM awa.cron_jobs WHERE queue = %(v)s) AS known",
        "tag": "SELECT EXISTS (SELECT 1 FROM awa.cron_jobs WHERE %(v)s = ANY (tags)) AS known",
    }[by]
    row = conn.execute(sql, {"v": value}).fetchone()
    return bool(row and row["known"])


def add_sink(conn: psycopg.Connection[Any], name: str, kind: str, operator: str, *, route: str = "all",
             url: str | None = None, url_env: str | None = None, url_file: str | None = None,
             key_env: str | None = None, key_file: str | None = None, channel: str | None = None) -> SinkInfo:
    """Add sink `name`; every refusal is one line naming the field and nothing is stored."""
    name = check_sink_name(name)
    operator = check_operator(operator)
    if kind not in KINDS:
        raise ValidationError(f"kind: one of {', '.join(KINDS)}, got {kind!r:.40}")
    by, value = parse_route(route)
    if url is not None:
        check_url(url)
    url_ref = secret_ref(url_env, url_file, "url")
    key_ref = secret_ref(key_env, key_file, "key")
    given = [flag for flag, v in (("url", url), ("url", url_ref)) if v is not None]
    if len(given) > 1:
        raise ValidationError("url: give the URL, its environment variable or its file: one of them")
    if kind == "notify":
        if channel is None or not _CHANNEL_RE.match(channel):
            raise ValidationError(f"channel: a notify sink needs a channel of lower-case letters, digits and "
                                  f"'_' (at most 63), got {channel!r:.70}")
        if given or key_ref:
            raise ValidationError("url: a notify sink takes a channel, no URL and no key")
    else:
        if channel is not None:
            raise ValidationError(f"channel: only a notify sink takes one, not a {kind} sink")
        if not given and kind != "pagerduty":
            raise ValidationError(f"url: a {kind} sink needs a URL (--url, --url-env or --url-file)")
        if kind in ("webhook", "pagerduty") and key_ref is None:
            what = "the HMAC-SHA256 signing key" if kind == "webhook" else "the routing (integration) key"
            raise ValidationError(f"key: a {kind} sink needs {what} (--key-env or --key-file)")
        if kind in ("slack", "alertmanager") and key_ref is not None:
            raise ValidationError(f"key: a {kind} sink takes no key")
    with conn.transaction():
        begin_action(conn, operator, "alert_sink_add", {"sink": name, "kind": kind})
        if value is not None and by != "severity" and not _known_target(conn, by, value):
            raise ValidationError(f"route: no schedule has {by} {value!r:.70}")
        try:
            row = conn.execute(
                "INSERT INTO awa.alert_sinks (name, kind, route_by, route_value, url, url_ref, key_ref, channel) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING "
                f"RETURNING {SINK_COLUMNS}, created_at",
                (name, kind, by, value, url, url_ref, key_ref, channel)).fetchone()
        except psycopg.errors.CheckViolation as exc:
            raise ValidationError(f"sink {name}: refused by {exc.diag.constraint_name}") from None
        if row is None:
            raise Conflict(f"sink {name} already exists (remove it first)")
    return _info(row)


def remove_sink(conn: psycopg.Connection[Any], name: str, operator: str) -> SinkInfo:
    """Remove sink `name` with its deliveries (those not yet made are dropped)."""
    operator = check_operator(operator)
    with conn.transaction():
        begin_action(conn, operator, "alert_sink_remove", {"sink": name})
        row = conn.execute(f"DELETE FROM awa.alert_sinks WHERE name = %s RETURNING {SINK_COLUMNS}, created_at",
                           (name,)).fetchone()
        if row is None:
            raise NotFound(f"unknown sink {name!r:.70}")
    return _info(row)


# A team's role (v032) reads its alerts but not the sinks, whose addresses are secrets (v033).
TEAM_NO_SINKS = ("permission denied: a team's role does not read the alert sinks (they hold webhook addresses); "
                 "its own alerts: `awa-tui alerts list`")


def list_sinks(conn: psycopg.Connection[Any]) -> list[SinkInfo]:
    try:
        rows = conn.execute(f"SELECT {SINK_COLUMNS}, created_at FROM awa.alert_sinks ORDER BY name").fetchall()
    except psycopg.errors.InsufficientPrivilege:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE and owner_scope(conn) is not None:
            raise ReadOnly(TEAM_NO_SINKS) from None
        raise
    return [_info(r) for r in rows]


def load_sinks(conn: psycopg.Connection[Any], names: list[str] | None = None) -> list[Sink]:
    """The sinks as the deliverer needs them (a stored URL in clear: never shown)."""
    rows = conn.execute(f"SELECT {SINK_COLUMNS} FROM awa.alert_sinks "
                        "WHERE %(names)s::text[] IS NULL OR name = ANY (%(names)s::text[]) ORDER BY name",
                        {"names": names}).fetchall()
    return [Sink(**r) for r in rows]


def get_sink(conn: psycopg.Connection[Any], name: str) -> Sink:
    found = load_sinks(conn, [name])
    if not found:
        raise NotFound(f"unknown sink {name!r:.70}")
    return found[0]
