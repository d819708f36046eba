"""A resume's preview stays live while its dialog is open: opened at 12:00:30 and left
open past 12:15, the dialog says what a resume fires at the moment it is confirmed."""

from __future__ import annotations

from datetime import timedelta

from test_health_console import force
from textual.widgets import Static
from tui_helpers import ready, select, until
from tui_seed import NOW

from awa_tui.tui.screens.confirm import ConfirmScreen


def note(app) -> str:
    return str(app.screen.query_one("#dialog-note", Static).render())


async def test_the_resume_preview_follows_the_clock(console_factory):
    clock = [NOW]
    app = console_factory(clock=lambda: clock[0], refresh=0.5)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "cleanup.tmp-files")  # paused at 11:20, */15: 11:30, 11:45 and 12:00 missed so far
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.query("#dialog-note"),
                    what="the resume dialog")
        assert note(app) == ("coalesce: resuming fires once now, for the latest due instant 2025-03-08T12:00:00Z "
                             "(earlier missed instants are not replayed)")
        clock[0] = NOW + timedelta(minutes=15)  # 12:15:30: 12:15 is the latest due instant now
        later = ("coalesce: resuming fires once now, for the latest due instant 2025-03-08T12:15:00Z "
                 "(earlier missed instants are not replayed)")
        await until(pilot, lambda: note(app) == later, what="the preview read again")


async def test_a_bulk_resume_gives_totals(console_factory, conn):
    """Two paused schedules selected: the dialog says how many jobs resuming fires now and
    how (cleanup.tmp-files coalesces its missed 11:30-12:00 into one; metrics.rollup, under
    catch_up since 11:50, replays 11:50, 11:55 and 12:00)."""
    force(conn, "UPDATE awa.cron_jobs SET paused_at = %s, paused_by = 'bob@ops', missed_fire_policy = 'catch_up', "
          "next_fire_at = %s, last_enqueued_at = %s WHERE name = 'metrics.rollup'",
          (NOW - timedelta(minutes=15), NOW.replace(minute=50, hour=11, second=0),
           NOW.replace(minute=45, hour=11, second=0)))
    app = console_factory()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        for name in ("cleanup.tmp-files", "metrics.rollup"):
            select(app, name)
            await pilot.press("space")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.query("#dialog-note"),
                    what="the bulk resume dialog")
        assert app.screen.heading == "Resume schedules?"
        assert note(app) == "Resuming fires 4 jobs now: 1 fire once, 1 catch up."
