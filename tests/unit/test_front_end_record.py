"""The front-end probe's record is sandbox output: anything that is not the expected shape gives no answer
(recipes/front_end_probe.parse_record), never a passing one."""

from __future__ import annotations

from codebox_tui.recipes.front_end_probe import parse_record


def test_a_well_formed_record_is_read_field_by_field() -> None:
    record = parse_record(
        '{"errors": [{"type": 2, "message": "m", "file": "f", "line": 3}], "activeAtStart": true,'
        ' "activeAtEnd": false, "wpLoaded": true}'
    )
    assert record is not None
    assert record.errors == [{"type": 2, "message": "m", "file": "f", "line": 3}]
    assert (record.active_at_start, record.active_at_end, record.wp_loaded) == (True, False, True)


def test_records_of_another_shape_give_no_answer() -> None:
    for text in ("", "[]", "null", '"ok"', "{not json", '{"errors": [] '):
        assert parse_record(text) is None, text


def test_fields_of_the_wrong_type_count_as_missing() -> None:
    record = parse_record('{"errors": "none", "activeAtStart": 1, "activeAtEnd": "yes", "wpLoaded": null}')
    assert record is not None
    assert record.errors == [] and record.active_at_start is None and record.active_at_end is None
    assert record.wp_loaded is None
    mixed = parse_record('{"errors": [1, "x", {"type": 8}]}')
    assert mixed is not None and mixed.errors == [{"type": 8}]
