"""The engine never imports Textual; the console never writes SQL (house rule)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_engine_import_does_not_load_textual():
    code = (
        "import sys, awa_tui.engine.client, awa_tui.engine.runtime, awa_tui.engine.views, awa_tui.engine.ops;"
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_engine_sources_never_import_textual():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "awa_tui" / "engine").rglob("*.py")
        if re.search(r"^\s*(from|import)\s+textual", p.read_text(), re.MULTILINE)
    ]
    assert offenders == []


def test_console_sources_contain_no_sql():
    sql = re.compile(r"\b(SELECT|INSERT INTO|UPDATE awa\.|DELETE FROM)\b")
    tui = ROOT / "awa_tui" / "tui"
    offenders = [str(p.relative_to(ROOT)) for p in tui.rglob("*.py") if sql.search(p.read_text())]
    assert offenders == []
