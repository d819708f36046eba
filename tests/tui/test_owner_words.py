"""The owners panel's GRACE column counts down only when the grace holds back a retirement:
with nothing to retire there is no clock to watch."""

from __future__ import annotations

from awa_tui.engine.ownership.plans import OwnerCounts, OwnerSummary
from awa_tui.tui.panels.owners import grace_text


def owner(retirements: int, remaining: float | None) -> OwnerSummary:
    return OwnerSummary(owner="billing", fresh_runtimes=1, manifest_hashes=["ab" * 32], certificate_hash=None,
                        certified_at=None, certified=False, schedules_owned=3, schedules_retired=0,
                        agreement_since=None, grace_required_s=600.0, grace_remaining_s=remaining,
                        pending=OwnerCounts(inserts=0, updates=1, retirements=retirements), blockers=[])


def test_grace_counts_down_only_with_something_to_retire() -> None:
    assert grace_text(owner(retirements=2, remaining=125.0)) == "2m05s left"
    assert grace_text(owner(retirements=0, remaining=125.0)) == "-"
    assert grace_text(owner(retirements=2, remaining=0.0)) == "met"
    assert grace_text(owner(retirements=2, remaining=None)) == "-"
