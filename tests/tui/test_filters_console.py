"""`/` takes the filter grammar (docs/keys.md): the active filter is shown, esc clears it,
a bad filter is one line and loses nothing."""

from __future__ import annotations

from tui_helpers import settled, table_keys, until

ALL = ["billing.nightly-invoice", "cleanup.tmp-files", "crm.contact-sync", "legacy.export", "metrics.rollup",
       "payments.settlement-reconciliation-eu-west", "reports.hourly", "weekly.digest"]


def title(app, panel: str = "schedules") -> str:
    return str(app.main.panel(panel).query_one(".panel-title").content)


async def test_schedules_filter_takes_the_grammar_and_a_bad_one_loses_nothing(console):
    app, pilot = console
    assert table_keys(app) == ALL
    await pilot.press("slash", *"owner:billing")
    await until(pilot, lambda: table_keys(app) == ["billing.nightly-invoice", "legacy.export"], what="owner filter")
    assert "filter: owner:billing" in title(app)
    box = app.main.panel("schedules").query_one("#filter")
    box.value = "owner:billing colour:red"  # pasted at once (typed, its prefixes are valid free text)
    await until(pilot, lambda: "unknown field 'colour'" in title(app), what="the error")
    assert ("filter: unknown field 'colour' on schedules; fields are name, owner, state, queue, kind, policy, tz, "
            "tag") in title(app)
    await settled(pilot, app)
    assert table_keys(app) == ["billing.nightly-invoice", "legacy.export"]  # the last good filter's rows stay
    await pilot.press("enter")
    assert app.focused is app.main.panel("schedules").query_one("#filter")  # still typing: it is not valid
    box.value = "owner:billing"
    await pilot.press(*" -unowned")
    await until(pilot, lambda: "filter: owner:billing -unowned" in title(app), what="the fixed filter")
    await settled(pilot, app)
    assert table_keys(app) == ["billing.nightly-invoice", "legacy.export"]
    await pilot.press("enter", "escape")
    await until(pilot, lambda: table_keys(app) == ALL, what="cleared")
    assert "filter" not in title(app)
