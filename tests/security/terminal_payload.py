"""Hostile strings written by raw SQL into every field the CLI, the console and the log
show, and the check that the bytes a terminal received obeyed none of them.

The payload: erase the screen (ESC [2J), set the window title (OSC 0, BEL-terminated),
write the clipboard (OSC 52), a colour CSI, a C1 CSI (U+009B), DEL, a right-to-left
override, a carriage return, a newline that starts a forged row, Rich markup and an
emoji code. SHOWN is what an operator must see instead, written out by hand (the oracle
is not the sanitiser).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

PAYLOAD = (
    "\x1b[2J\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b[31m\x9b2J\x7f\u202e\rX\nFORGED|[bold]b[/bold]:fire:"
)
SHOWN = (
    r"\x1b[2J\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b[31m\x9b2J\x7f\u202e\rX\nFORGED|[bold]b[/bold]:fire:"
)


@dataclass(frozen=True)
class Seeded:
    paused: str  # a PAUSED schedule, every text field hostile
    retired: str  # a RETIRED one
    queue: str  # a paused queue
    owner: str


def seed(conn: Any) -> Seeded:
    """Rows as anything with SQL access could write them (the API would refuse these).

    Written with triggers off, as a superuser or a binary older than the size guards
    (v004) could have written them: the guards refuse such names today, the display must
    still survive rows from before."""
    tag = uuid.uuid4().hex[:6]
    conn.execute("SET session_replication_role = replica")

    def h(prefix: str) -> str:
        return f"{prefix}{tag}{PAYLOAD}"

    s = Seeded(paused=h("p"), retired=h("r"), queue=h("q"), owner=h("o"))
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, tags, owner, paused_at, paused_by,"
        " args, metadata) VALUES (%s, '0 * * * *', 'UTC', %s, %s, %s, %s, now(), %s, %s, %s)",
        (s.paused, h("k"), s.queue, [h("t"), "plain"], s.owner, h("by"),
         json.dumps({"a": PAYLOAD}), json.dumps({"m": PAYLOAD})),
    )
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, owner, retired_at, retired_by)"
        " VALUES (%s, '*/5 * * * *', 'UTC', %s, %s, %s, now(), %s)",
        (s.retired, h("k"), s.queue, s.owner, h("rb")),
    )
    conn.execute(
        "INSERT INTO awa.queue_meta (queue, paused, paused_at, paused_by) VALUES (%s, true, now(), %s)",
        (s.queue, h("qb")),
    )
    conn.execute(
        "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at,"
        " owner, manifest_hash) VALUES (%s, %s, 4242, %s, now(), now(), %s, %s)",
        (uuid.uuid4(), h("host"), h("v"), s.owner, h("hash")),
    )
    conn.execute(
        "INSERT INTO awa.audit_log (operator, action, target, before, after, detail) VALUES (%s, %s, %s, %s, %s, %s)",
        (h("op"), h("act"), s.paused, json.dumps({"paused_by": None}), json.dumps({"paused_by": h("by")}),
         json.dumps({"note": PAYLOAD})),
    )
    conn.execute(
        "INSERT INTO awa.jobs (kind, queue, state, errors, metadata) VALUES (%s, %s, 'available', %s, %s)",
        (h("jk"), s.queue, json.dumps([{"error": PAYLOAD}]), json.dumps({"cron_name": s.paused})),
    )
    conn.execute("RESET session_replication_role")
    return s


def assert_obeys_nothing(raw: bytes) -> str:
    """The bytes hold no ESC, BEL, CR, DEL, C1 or bidi control, and no line starts with the
    forged row; returns them decoded (strict UTF-8: a lone C1 byte fails here too)."""
    assert b"\x1b" not in raw
    assert b"\x07" not in raw
    assert b"\x7f" not in raw
    assert b"\r" not in raw
    text = raw.decode("utf-8")
    assert [c for c in text if 0x80 <= ord(c) <= 0x9F] == []
    assert "\u202e" not in text
    assert [line for line in text.splitlines() if line.lstrip(" │┃|").startswith("FORGED")] == []
    return text
