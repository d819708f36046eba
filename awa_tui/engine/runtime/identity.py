"""Who a runtime is: the identity its snapshots carry (S21). Apart from the reporter that
writes them, so a Client is built without loading the snapshot machinery
(a short command starts faster)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from awa_tui.engine.ownership.manifest import PROTOCOL_VERSION

# What this release's runtime can do, as the schema's release policy (v019) judges it: 1 is
# every release before the policy existed; 2 leads with exclusions and calendars (v018); 3
# leads with catch-up windows and ends pauses at their end (v025); 4 fires the overlap
# policy `replace` (v031).
RUNTIME_PROTOCOL = 4


@dataclass
class RuntimeIdentity:
    version: str
    snapshot_interval: timedelta = timedelta(seconds=10)
    instance_id: uuid.UUID = field(default_factory=uuid.uuid4)
    hostname: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    protocol_version: int = PROTOCOL_VERSION
    leader_protocol: int = RUNTIME_PROTOCOL
    owner: str | None = None
    authoritative: bool = False
    retire_grace: timedelta | None = None
