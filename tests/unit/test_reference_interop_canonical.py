"""stableJson must print numbers and strings exactly as JavaScript's JSON.stringify does (spec §1.1), also for
the values the reference's own JSON.parse produces: doubles past 2**53, small exponents, lone surrogates.

Expected strings are ECMAScript facts (Number::toString and well-formed JSON.stringify), not captured output.
"""

from __future__ import annotations

import json

import pytest

from codebox_tui.contracts.canonical import stable_json

JS_NUMBERS = [
    (1.5e-5, "0.000015"),  # JS uses plain notation down to 1e-6
    (-1.5e-5, "-0.000015"),
    (1e-6, "0.000001"),
    (0.000001234, "0.000001234"),
    (1e-7, "1e-7"),
    (5e-7, "5e-7"),
    (5e-324, "5e-324"),
    (0.1 + 0.2, "0.30000000000000004"),
    (100.0, "100"),
    (-0.0, "0"),
    (1e21, "1e+21"),
    (123e20, "1.23e+22"),
    (123456789012345680000.0, "123456789012345680000"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (float("inf"), "null"),
    (12345678901234567890, "12345678901234567000"),  # an int past 2**53 is a double in JS
    (2**60, "1152921504606847000"),
    (2**53, "9007199254740992"),
    (2**53 + 2, "9007199254740994"),
    (-(2**60), "-1152921504606847000"),
]


@pytest.mark.parametrize(("value", "expected"), JS_NUMBERS, ids=[e for _, e in JS_NUMBERS])
def test_numbers_print_like_javascript(value: float, expected: str) -> None:
    assert stable_json(value) == expected
    assert stable_json({"n": value}) == '{"n":' + expected + "}"  # the fast path must agree


def test_parsed_numbers_round_like_javascript() -> None:
    """What JSON.parse then JSON.stringify gives for these literals."""
    parsed = json.loads("[12345678901234567890, 9007199254740993, 1.0, -0.0, 1E400, 2.5e-5]")
    assert stable_json(parsed) == "[12345678901234567000,9007199254740992,1,0,null,0.000025]"


def test_lone_surrogates_are_escaped_like_well_formed_json_stringify() -> None:
    assert stable_json("\ud800x") == '"\\ud800x"'
    assert stable_json({"t": "a\udfffb\U0001f600"}) == '{"t":"a\\udfffb\U0001f600"}'
    # keys too, and the key sorts by its UTF-16 code unit (0xDC00 > "t")
    assert stable_json({"\udc00k": 1, "t": 2}) == '{"t":2,"\\udc00k":1}'
    assert stable_json({"\udc00k": 1.5, "t": 2}) == '{"t":2,"\\udc00k":1.5}'  # slow path
