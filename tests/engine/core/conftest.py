"""Fixtures of the audit-trail and role-layout tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from audit_helpers import Logins, applied_layout


@pytest.fixture
def logins(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[Logins]:
    """The role layout applied to this test's database, one login per role."""
    yield from applied_layout(dsn, conn)
