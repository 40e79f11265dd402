"""stableJson: the fast path (C encoder) must give byte-identical output to the reference algorithm."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import codebox_tui.contracts.canonical as canonical
from codebox_tui.contracts.canonical import pretty_json, stable_json

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**15), 10**15) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5),
    max_leaves=40,
)


def _reference(value: object, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(canonical, "_plain", lambda _value: False)  # force the recursive reference path
        return stable_json(value)


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_fast_path_matches_the_reference_algorithm(value: object) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert stable_json(value) == _reference(value, monkeypatch)


def test_known_vectors() -> None:
    assert stable_json({"b": 1, "a": [True, None, "x"]}) == '{"a":[true,null,"x"],"b":1}'
    assert stable_json({"f": 1.0, "g": 0.5}) == '{"f":1,"g":0.5}'  # JS number formatting (slow path)
    assert stable_json({"\U0001f600": 1, "\uffff": 2}) == '{"\U0001f600":1,"\uffff":2}'  # UTF-16 code-unit order
    assert stable_json(list(range(2005))).count(",") == 1999  # arrays cut at 2,000 items
    assert stable_json({"q": 'say "hi"\n'}) == '{"q":"say \\"hi\\"\\n"}'


def test_pretty_json_indents_small_documents_and_compacts_large_ones() -> None:
    assert pretty_json({"a": 1}) == '{\n  "a": 1\n}\n'
    big = {"files": [{"path": f"f{i}.php", "status": "modified"} for i in range(3000)]}
    text = pretty_json(big)
    assert "\n" not in text[:-1] and text.endswith("\n")
