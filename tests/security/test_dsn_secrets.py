"""A DSN's password is never shown: not in a parse error, not in "cannot connect", not in
the console header, not in log lines, whatever its shape; --dsn-file keeps it out of argv."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import until
from security_helpers import (
    SHAPE_IDS,
    SHAPES,
    Shape,
    assert_no_secret,
    awa,
    cannot_connect,
    cli_env,
    free_port,
    one_line_error,
)

from awa_tui.engine.core.db import UNPARSEABLE, describe_dsn
from awa_tui.engine.core.errors import AwaError
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import build_config, console_client, create_app


def expected_error(shape: Shape, port: int) -> str:
    return shape.parse_error or cannot_connect(port)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_cli_errors_never_show_the_password(shape: Shape, tmp_path: Path) -> None:
    port = free_port()
    dsn = shape.dsn(port)
    path = tmp_path / "dsn"
    path.write_text(dsn + "\n")
    path.chmod(0o600)
    runs: list[tuple[tuple[str, ...], dict[str, str]]] = [
        (("cron", "list", "--dsn", dsn), cli_env()),
        (("cron", "pause", "x", "--dsn-file", str(path)), cli_env()),
        (("audit",), cli_env(AWA_DATABASE_URL=dsn)),
        (("migrate", "--dsn", dsn), cli_env()),
    ]
    if shape.parse_error:  # the console refuses it before starting (else it starts: see the pilot test)
        runs.append((("--dsn", dsn), cli_env()))
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda run: awa(*run[0], env=run[1]), runs))
    for (args, _), result in zip(runs, results, strict=True):
        assert one_line_error(result) == expected_error(shape, port), args
        assert_no_secret(result.stderr)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_log_lines_never_show_the_password(shape: Shape) -> None:
    """The headless runtime logs as it starts; its last line is the one-line error."""
    port = free_port()
    result = awa("run", "--demo", "--dsn", shape.dsn(port))
    assert result.returncode == 1 and result.stdout == ""
    assert_no_secret(result.stderr)
    assert result.stderr.splitlines()[-1] == expected_error(shape, port)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_describe_dsn_is_built_from_the_parsed_form(shape: Shape) -> None:
    port = free_port()
    assert describe_dsn(shape.dsn(port)) == (UNPARSEABLE if shape.parse_error else f"app@127.0.0.1:{port}/db")


def screen_text(app: Any) -> str:
    return re.sub(r"<[^>]+>", "", app.export_screenshot()).replace("&#160;", " ")


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
async def test_the_console_header_never_shows_the_password(shape: Shape) -> None:
    port = free_port()
    dsn = shape.dsn(port)
    if shape.parse_error:  # the launcher refuses it in one line
        with pytest.raises(AwaError) as refused:
            build_config(dsn=dsn, lead=False, app_ref=None, demo=False, read_only=True, operator="op@test",
                         refresh=2.0, say=print)
        assert f"error: {refused.value}" == shape.parse_error
    # Given straight to the console (as a library user may), the header still hides it.
    client = console_client(dsn, "op@test", True)
    try:
        app = create_app(ConsoleConfig(client=client))
        async with app.run_test(size=(120, 36)) as pilot:
            where = UNPARSEABLE if shape.parse_error else f"app@127.0.0.1:{port}/db"
            assert app.sub_title == f"{where} · operator op@test"
            await until(pilot, lambda: "database not answering" in screen_text(app), what="the failed poll")
            text = screen_text(app)
            assert f"{where} · operator op@test" in text
            assert_no_secret(text)
    finally:
        client.close()


def test_dsn_file_reaches_every_kind_of_command(dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "dsn"
    path.write_text(f"  {dsn}\n")
    path.chmod(0o600)
    listed = awa("cron", "list", "--dsn-file", str(path), "--json")
    assert (listed.returncode, listed.stdout.strip(), listed.stderr) == (0, "[]", "")
    migrated = awa("migrate", "--dsn-file", str(path))
    assert (migrated.returncode, migrated.stderr) == (0, "")
    assert migrated.stdout.startswith("up to date (schema version ")


def test_dsn_file_errors_are_one_line_naming_the_path(tmp_path: Path) -> None:
    empty, binary, missing = tmp_path / "empty", tmp_path / "binary", tmp_path / "missing"
    empty.write_text(" \n\n")
    binary.write_bytes(b"postgresql://app:\xff\xfe@h/db")
    empty.chmod(0o600)
    binary.chmod(0o600)
    cases = {
        str(missing): f"error: --dsn-file {str(missing)!r}: no such file",
        str(empty): f"error: --dsn-file {str(empty)!r}: the file is empty",
        str(binary): f"error: --dsn-file {str(binary)!r}: not UTF-8 text",
        str(tmp_path): f"error: --dsn-file {str(tmp_path)!r}: is a directory, not a file",
    }
    for path, expected in cases.items():
        assert one_line_error(awa("queue", "list", "--dsn-file", path)) == expected
        assert one_line_error(awa("--dsn-file", path)) == expected  # the console too
    both = awa("cron", "list", "--dsn", "postgresql://x@h/db", "--dsn-file", str(empty))
    assert one_line_error(both) == "error: --dsn and --dsn-file: pass one of them, not both"


SECRET_LINE = "Hunter2-S3cret"


def test_a_dsn_file_every_user_may_read_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "dsn"
    path.write_text(f"postgresql://app:{SECRET_LINE}@127.0.0.1:1/db\n")
    path.chmod(0o644)
    result = awa("queue", "list", "--dsn-file", str(path))
    assert one_line_error(result) == (f"error: --dsn-file {str(path)!r}: readable by every user of this host; "
                                      f"make it private first (chmod o-r {path})")
    assert SECRET_LINE not in result.stdout + result.stderr
    path.chmod(0o640)  # group-readable, as a mounted secret for the service's group: read (nothing listens)
    unreachable = awa("queue", "list", "--dsn-file", str(path))
    assert "readable by every user" not in unreachable.stderr and SECRET_LINE not in unreachable.stderr


def test_a_dsn_file_of_two_lines_is_refused_without_showing_either(tmp_path: Path) -> None:
    """Before, the second line reached a connection error; the help promises the file's
    content is never shown."""
    path = tmp_path / "dsn"
    path.write_text(f"postgresql://app@127.0.0.1:1/db\npassword={SECRET_LINE}\n")
    path.chmod(0o600)
    result = awa("queue", "list", "--dsn-file", str(path))
    assert one_line_error(result) == (f"error: --dsn-file {str(path)!r}: 2 lines; it must hold the database URL "
                                      "alone, on one line")
    assert SECRET_LINE not in result.stdout + result.stderr


def test_a_dsn_file_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    assert one_line_error(awa("queue", "list", "--dsn-file", str(fifo))) == (
        f"error: --dsn-file {str(fifo)!r}: not a regular file")  # no writer: reading would hang
    assert one_line_error(awa("queue", "list", "--dsn-file", "/dev/zero")) == (
        "error: --dsn-file '/dev/zero': not a regular file")


def test_help_warns_that_a_dsn_password_shows_in_ps() -> None:
    for args in (("--help",), ("cron", "list", "--help"), ("run", "--help")):
        result = awa(*args, env=cli_env(COLUMNS="400"))
        assert result.returncode == 0, result.stderr
        flat = " ".join(result.stdout.split())
        assert "A password in it is visible to every local user in `ps`: prefer --dsn-file" in flat, args
        assert ("--dsn-file PATH Read the database URL from this file, one line (0600, or 0640 for a service's "
                "group; a file every user may read is refused); its content is never shown.") in flat, args


def test_describe_dsn_of_a_multi_host_dsn_pairs_each_host_with_its_port() -> None:
    """S58: the failover DSN lists two servers; each is named with its own port."""
    dsn = ("host=127.0.0.1,db-b port=5432,5433 user=app dbname=db password=hunter2 "
           "target_session_attrs=read-write")
    assert describe_dsn(dsn) == "app@127.0.0.1:5432,db-b:5433/db"
    assert describe_dsn("host=a,b port=6432 user=app dbname=db") == "app@a:6432,b:6432/db"
