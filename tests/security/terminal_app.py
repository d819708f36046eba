"""The app `awa-tui run --app terminal_app:setup` loads in the log test: a handler for a
hostile job kind that fails with the hostile text from its job's args (a job error)."""

from __future__ import annotations

from typing import Any

from terminal_payload import PAYLOAD

KIND = f"sec.kind{PAYLOAD}"


def fail_with_args(job: Any) -> None:
    raise RuntimeError(job.args["error"])


def setup(client: Any) -> None:
    client.register_handler(KIND, fail_with_args)
