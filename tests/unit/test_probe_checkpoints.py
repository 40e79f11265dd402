"""`checkpoint=` of wordpress.browser-probe, parsed before Chromium starts (browser/probe.py): each form, and each
mistake refused naming the argument and what was expected."""

from __future__ import annotations

import pytest

from codebox_tui.browser.checkpoints import MAX_NAMED_CHECKPOINTS, NamedCheckpoint, parse_checkpoints
from codebox_tui.errors import BadInputError


def test_each_form_is_understood_in_order() -> None:
    assert parse_checkpoints(["hero", "menu@selector:nav .open", "after@1.5s"]) == [
        NamedCheckpoint("hero"),
        NamedCheckpoint("menu", "selector:nav .open", selector="nav .open"),
        NamedCheckpoint("after", "1.5s", settle_s=1.5),
    ]


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (["bad name"], "unique NAME"),
        (["menu", "menu"], "unique NAME"),
        (["captured"], "not one the probe records itself"),
        (["menu@selector:"], "after '@' expected selector:<css> or a duration"),
        (["menu@soon"], "after '@' expected selector:<css> or a duration"),
        (["menu@5 parsecs"], "must look like 30s"),
        ([f"c{i}" for i in range(MAX_NAMED_CHECKPOINTS + 1)], f"at most {MAX_NAMED_CHECKPOINTS}"),
    ],
)
def test_mistakes_are_refused_naming_the_argument(values: list[str], says: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_checkpoints(values)
    assert info.value.field == "checkpoint" and says in info.value.message
