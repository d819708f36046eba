"""Regenerate the console screenshots (SVG and PNG) from a seeded scratch database.

    make screenshots        # = .venv/bin/python screenshots/render.py

The database is AWA_TEST_DATABASE_URL's server if set, else the embedded Postgres (the
same one `make run` uses). A scratch database is created, migrated and seeded with the
tests' deterministic data (tests/tui/tui_seed.py), rendered with a fixed clock through
the CLI's own factory, and dropped. PNGs need rsvg-convert (Debian: librsvg2-bin).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "screenshots"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "tui")]

from lease_seed import leader_lock_held  # noqa: E402
from tui_seed import DB_LABEL, NOW, OPERATOR, RUNTIMES, seed  # noqa: E402

# name, terminal size, keys pressed after the first paint, read-only?
SHOTS = [
    ("schedules", (120, 36), [], False),
    ("schedules-80x24", (80, 24), [], False),
    ("owners", (120, 36), ["2"], False),
    ("runtimes", (120, 36), ["3"], False),
    ("plan", (120, 36), ["4"], False),
    ("queues", (120, 36), ["5"], False),
    ("jobs", (120, 36), ["6"], False),
    ("confirm-pause", (120, 36), ["down", "down", "down", "down", "s"], False),
    ("confirm-retire", (120, 36), ["down", "down", "down", "down", "ctrl+d", *"metrics"], False),
    ("detail", (120, 36), ["enter"], False),
    ("help", (120, 36), ["question_mark"], False),
    ("read-only", (120, 36), [], True),
]


def admin_dsn() -> str:
    external = os.environ.get("AWA_TEST_DATABASE_URL")
    if external:
        return external
    from awa_tui import embedded

    return embedded.ensure_running().dsn("postgres")


def with_db(dsn: str, name: str) -> str:
    return make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})


async def render(dsn: str, name: str, size: tuple[int, int], keys: list[str], read_only: bool) -> Path:
    from tui_helpers import ready, settled

    from awa_tui.tui.config import ConsoleConfig
    from awa_tui.tui.launch import console_client, create_app

    client = console_client(dsn, OPERATOR, read_only)
    app = create_app(ConsoleConfig(client=client, db_label=DB_LABEL, clock=lambda: NOW))
    try:
        async with app.run_test(size=size) as pilot:
            await ready(pilot, app)
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.05)
            if len(app.screen_stack) == 1:
                await settled(pilot, app)
            await pilot.pause(0.5)  # detail and dialogs load on their own threads
            app.clear_notifications()
            await pilot.pause()
            app.save_screenshot(f"{name}.svg", str(OUT))
    finally:
        client.close()
    return OUT / f"{name}.svg"


def to_png(svg: Path, rsvg: str) -> Path:
    # Textual writes spaces as U+00A0, which librsvg draws at another width than the
    # monospace cell: plain spaces with xml:space="preserve" keep the columns aligned.
    text = svg.read_text().replace("&#160;", " ").replace("<svg ", '<svg xml:space="preserve" ', 1)
    fixed = svg.with_suffix(".tmp.svg")
    fixed.write_text(text)
    png = svg.with_suffix(".png")
    try:
        subprocess.run([rsvg, "-z", "1", "-o", str(png), str(fixed)], check=True)
    finally:
        fixed.unlink()
    return png


def main() -> int:
    rsvg = shutil.which("rsvg-convert")
    OUT.mkdir(exist_ok=True)
    admin = admin_dsn()
    scratch = f"awa_screens_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    try:
        dsn = with_db(admin, scratch)
        from awa_tui.engine.migrations import migrate

        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
            seed(conn)
        # app-1 holds the leader lock and its lease, as in the snapshot tests (leadership is read from the lock).
        with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
            for name, size, keys, read_only in SHOTS:
                svg = asyncio.run(render(dsn, name, size, keys, read_only))
                png = to_png(svg, rsvg) if rsvg else None
                print(f"{svg.relative_to(ROOT)}" + (f"  {png.relative_to(ROOT)}" if png else ""))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch)))
    if not rsvg:
        print("rsvg-convert not found: SVGs written, PNGs NOT regenerated. "
              "Install it (Debian/Ubuntu: apt-get install -y librsvg2-bin) and run again.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
