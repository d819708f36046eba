"""The real thing, the schedule form: `awa-tui --lead --demo` in tmux; `n` opens the form,
the keys fill it as a terminal sends them (tabs between fields in the same burst), enter
and `y` confirm; the schedule is in the database with exactly those values, audited."""

from __future__ import annotations

from datetime import UTC, datetime

from helpers import wait_for
from test_e2e_tmux import _tmux_installed, console, terminal  # noqa: F401 (fixtures)

NAME = "e2e.form-made"
SETTINGS = ("origin", "owner", "cron_expr", "cron_written", "timezone", "kind", "queue", "args", "priority",
            "max_attempts", "missed_fire_policy", "overlap", "tags", "start_at", "end_at", "max_fires", "jitter_ms",
            "exclude_dates", "exclude_calendars")


def test_a_schedule_made_through_the_form_is_stored_as_typed_and_audited(terminal, dsn, conn):  # noqa: F811
    terminal.start(console(dsn))
    terminal.wait_screen("LEADER")
    terminal.wait_screen("demo.heartbeat")

    terminal.keys("n")
    terminal.wait_screen("New schedule (made at run time)")
    # name, cron, (zone), kind, then nine tabs (queue .. start at) to end at: one burst.
    terminal.keys("-l", NAME)
    terminal.keys("Tab")
    terminal.keys("-l", "15 8 * * 1")
    terminal.keys("Tab", "Tab")
    terminal.keys("-l", "report")
    terminal.keys(*["Tab"] * 9)
    terminal.keys("-l", "2031-01-01T00:00:00Z")
    terminal.wait_screen("2031-01-01T00:00:00Z")
    terminal.keys("Enter")  # checks what is typed, then asks
    dialog = terminal.wait_screen("Create schedule?")
    assert "e2e@tmux" in dialog
    terminal.keys("y")
    wait_for(lambda: conn.execute("SELECT 1 FROM awa.cron_jobs WHERE name = %s", (NAME,)).fetchone(),
             what="the schedule in the database")
    row = conn.execute(f"SELECT {', '.join(SETTINGS)} FROM awa.cron_jobs WHERE name = %s", (NAME,)).fetchone()
    assert row == {"origin": "api", "owner": "app", "cron_expr": "15 8 * * 1", "cron_written": None,
                   "timezone": "UTC", "kind": "report", "queue": "default", "args": {}, "priority": 2,
                   "max_attempts": 25, "missed_fire_policy": "coalesce", "overlap": "allow", "tags": [],
                   "start_at": None, "end_at": datetime(2031, 1, 1, tzinfo=UTC), "max_fires": None, "jitter_ms": 0,
                   "exclude_dates": None, "exclude_calendars": None}
    audit = conn.execute("SELECT operator, action, target FROM awa.audit_log WHERE target = %s ORDER BY id",
                         (NAME,)).fetchall()
    assert audit == [{"operator": "e2e@tmux", "action": "create", "target": NAME}]
    terminal.wait_screen("created " + NAME)
    terminal.keys("q")
    terminal.wait_screen("Quit the console?")
    terminal.keys("y")
    wait_for(terminal.dead, what="the console to exit")
