"""Which recorded PHP versions a run's PHP request matches (snapshots and sites restored into a sandbox)."""

from __future__ import annotations

import pytest

from codebox_tui.versions import same_php


@pytest.mark.parametrize(
    ("recorded", "wanted", "same"),
    [
        ("8.2.29", "8.2", True),  # a natively taken snapshot, a run asking for the series
        ("8.2", "8.2", True),  # Playground records the series
        ("8.2", "8.2.29", True),
        ("8.2.29", "8.2.29", True),
        ("8.2.28", "8.2.29", False),  # two full versions: exact
        ("8.2.29", "8.3", False),
        ("8.20.1", "8.2", False),  # a series is a whole component, not a text prefix
        ("8", "8.2", False),  # a major version alone names no series
    ],
)
def test_same_php(recorded: str, wanted: str, same: bool) -> None:
    assert same_php(recorded, wanted) is same
