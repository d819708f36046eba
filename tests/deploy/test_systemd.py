"""deploy/systemd/awa-tui.service: verified by systemd's own `systemd-analyze verify` and
scored by `systemd-analyze security` (offline: no systemd needs to run), its command line
parsed by the real CLI, and the settings that matter asserted."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from deploy_files import DEPLOY, split, unit, values

UNIT = DEPLOY / "systemd" / "awa-tui.service"
INSTALLED = "/opt/awa-tui/bin/awa-tui"
HARDENING = {
    "DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
    "PrivateTmp": "yes", "PrivateDevices": "yes", "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "MemoryDenyWriteExecute": "yes", "CapabilityBoundingSet": "", "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes", "SystemCallArchitectures": "native",
}


def analyze() -> str:
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze is missing: `make test-tools` installs it (Debian package systemd)"
    return found


def local_copy(tmp_path: Path, text: str | None = None) -> Path:
    """The unit with its ExecStart pointing at this checkout's awa-tui, which verify needs
    to exist; nothing else changes."""
    here = str(Path(sys.executable).with_name("awa-tui"))
    path = tmp_path / "awa-tui.service"
    path.write_text((text if text is not None else UNIT.read_text()).replace(INSTALLED, here))
    return path


def verify(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([analyze(), "verify", str(path)], capture_output=True, text=True, timeout=60)


def test_systemd_verifies_the_unit_without_a_warning(tmp_path: Path) -> None:
    result = verify(local_copy(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_verify_would_catch_a_misspelt_setting(tmp_path: Path) -> None:
    """The negative control: systemd does read our file, and complains about a typo."""
    broken = local_copy(tmp_path, UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystm=strict"))
    assert "Unknown key 'ProtectSystm'" in verify(broken).stderr


def test_systemd_rates_the_exposure_low(tmp_path: Path) -> None:
    result = subprocess.run([analyze(), "security", "--offline=yes", str(local_copy(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    level = re.search(r"Overall exposure level for awa-tui\.service: ([\d.]+) (\w+)", result.stdout)
    assert level is not None, result.stdout[-500:]
    assert float(level.group(1)) <= 2.0 and level.group(2) == "OK", level.group(0)


def test_hardening_settings() -> None:
    service = dict(unit()["Service"])
    for key, value in HARDENING.items():
        assert service.get(key) == value, key
    assert values(unit()["Service"], "SystemCallFilter") == ["@system-service", "~@privileged"]


def exec_start() -> list[str]:
    (command,) = values(unit()["Service"], "ExecStart")
    return split(command)


def test_the_dsn_is_a_credential_read_from_a_file_never_an_argument() -> None:
    service = unit()["Service"]
    assert values(service, "LoadCredential") == ["dsn:/etc/awa-tui/dsn"]
    argv = exec_start()
    assert argv[argv.index("--dsn-file") + 1] == "%d/dsn"  # the service's credentials directory
    assert "--dsn" not in argv and not any("postgres" in a for a in argv)
    assert values(service, "Environment") == []  # nothing secret inline; AWA_APP is in the EnvironmentFile


def test_the_command_line_parses_as_the_runtime_with_metrics() -> None:
    from deploy_files import parse_argv

    argv = exec_start()
    assert argv[0] == INSTALLED
    # systemd's expansion: %d the credentials directory, ${AWA_APP} one word, $AWA_RUN_ARGS split.
    expanded = [{"%d/dsn": "/run/credentials/awa-tui.service/dsn", "${AWA_APP}": "billing.schedules:setup"}.get(a, a)
                for a in argv[1:] if a != "$AWA_RUN_ARGS"]
    name, params = parse_argv(["awa-tui", *expanded, "--owner", "billing", "--authoritative"])
    assert (name, params["app_ref"], params["dsn_file"], params["metrics_addr"]) == (
        "run", "billing.schedules:setup", "/run/credentials/awa-tui.service/dsn", "127.0.0.1:9464")
    assert (params["owner"], params["authoritative"]) == ("billing", True)


def test_stops_on_sigterm_in_time_and_restarts_on_failure() -> None:
    service = dict(unit()["Service"])
    assert (service["Type"], service["KillSignal"], service["Restart"]) == ("exec", "SIGTERM", "on-failure")
    # The runtime stops in a few seconds; each loop is given 10 s to finish its step.
    assert 15 <= int(service["TimeoutStopSec"]) <= 90
    assert dict(unit()["Install"])["WantedBy"] == "multi-user.target"


def test_migration_runs_before_the_runtime_which_never_migrates() -> None:
    from deploy_files import parse_argv

    (pre,) = values(unit()["Service"], "ExecStartPre")
    argv = split(pre)
    assert argv[0] == INSTALLED
    name, params = parse_argv(["awa-tui", *[a.replace("%d", "/run/credentials/awa-tui.service") for a in argv[1:]]])
    assert (name, params["dsn_file"]) == ("migrate", "/run/credentials/awa-tui.service/dsn")
    assert "--no-migrate" in exec_start()
