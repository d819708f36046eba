"""The real thing, in bulk: `awa-tui --lead --demo` in tmux; filter with the grammar,
select the filtered set with `*`, pause it with one confirmation, and find one audit row
per schedule in the database."""

from __future__ import annotations

from helpers import wait_for
from test_e2e_tmux import _tmux_installed, console, terminal  # noqa: F401 (fixtures)


def test_bulk_pause_of_a_filtered_set_writes_one_audit_row_each(terminal, dsn, conn):  # noqa: F811
    terminal.start(console(dsn))
    terminal.wait_screen("LEADER")
    terminal.wait_screen("demo.heartbeat")

    terminal.keys("/")
    terminal.wait_screen("enter keeps, esc clears")  # the filter box is open (its placeholder)
    terminal.keys("-l", "queue:default")
    terminal.wait_screen("filter: queue:default")
    terminal.keys("Enter")
    wait_for(lambda: "demo.minutely-report" not in terminal.screen(), what="the filtered list")
    terminal.keys("*")
    terminal.wait_screen("2 SELECTED")
    terminal.keys("s")
    dialog = terminal.wait_screen("Pause schedules?")
    assert "2 schedules: demo.heartbeat, demo.hourly-cleanup" in dialog
    assert "e2e@tmux" in dialog and "Database" in dialog
    terminal.keys("y")
    paused = "SELECT name, paused_by FROM awa.cron_jobs WHERE paused_at IS NOT NULL ORDER BY name"
    wait_for(lambda: len(conn.execute(paused).fetchall()) == 2, what="both paused in the database")
    assert conn.execute(paused).fetchall() == [
        {"name": "demo.heartbeat", "paused_by": "e2e@tmux"}, {"name": "demo.hourly-cleanup", "paused_by": "e2e@tmux"}]
    audit = conn.execute("SELECT operator, action, target FROM awa.audit_log WHERE action = 'pause' "
                         "ORDER BY target").fetchall()  # one row each; the batch writes in its own order
    assert audit == [{"operator": "e2e@tmux", "action": "pause", "target": "demo.heartbeat"},
                     {"operator": "e2e@tmux", "action": "pause", "target": "demo.hourly-cleanup"}]
    terminal.wait_screen("pause: 2 done")
    terminal.keys("q")
    terminal.wait_screen("Quit the console?")
    terminal.keys("y")
    wait_for(terminal.dead, what="the console to exit")


def test_ctrl_space_through_tmux_range_marks_and_a_bulk_pause_pauses_exactly_those(terminal, dsn, conn):  # noqa: F811
    """tmux sends C-Space as NUL, which Textual reads as ctrl+@: the range mark is bound to it."""
    terminal.start(console(dsn))
    terminal.wait_screen("LEADER")
    terminal.wait_screen("demo.heartbeat")
    first = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name").fetchall()]
    assert first[:3] == ["demo.heartbeat", "demo.hourly-cleanup", "demo.minutely-report"]
    terminal.keys("Space")  # row 1 selected, the cursor on row 2
    terminal.wait_screen("1 SELECTED")
    terminal.keys("j")  # row 3
    terminal.keys("C-Space")
    terminal.wait_screen("3 SELECTED")
    terminal.keys("s")
    dialog = terminal.wait_screen("Pause schedules?")
    assert "3 schedules: demo.heartbeat, demo.hourly-cleanup," in dialog  # wrapped at 80 columns
    assert "demo.minutely-report" in dialog
    terminal.keys("y")
    paused = "SELECT name FROM awa.cron_jobs WHERE paused_at IS NOT NULL ORDER BY name"
    wait_for(lambda: len(conn.execute(paused).fetchall()) == 3, what="three paused in the database")
    terminal.wait_screen("pause: 3 done")
    assert [r["name"] for r in conn.execute(paused).fetchall()] == first[:3]
    terminal.keys("q")
    terminal.wait_screen("Quit the console?")
    terminal.keys("y")
    wait_for(terminal.dead, what="the console to exit")
