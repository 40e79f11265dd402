"""blueprint.after.json from a site-state diff (docs/site-state.md, "The site after the run as a blueprint"):
pure logic on hand-made diffs; the real thing is tests/e2e/test_run_bundle_extras.py and
tests/security/test_blueprint_after_injection.py."""

from __future__ import annotations

from codebox_tui.bundle.blueprint_after import blueprint_after
from codebox_tui.contracts.site_state import OptionChange, RiskFlag, SiteStateDiff, ValueChange


def _diff(**fields: object) -> SiteStateDiff:
    return SiteStateDiff.model_validate({"before": "a", "after": "b", "empty": False, **fields})


def test_an_empty_or_unavailable_diff_has_no_blueprint() -> None:
    assert blueprint_after(_diff(empty=True), wordpress_version="6.5.5", php_version="8.3") is None
    unavailable = _diff(risks=[RiskFlag(code="summary-unavailable", severity="high", message="m", subject="s")])
    assert blueprint_after(unavailable, wordpress_version="6.5.5", php_version="8.3") is None


def test_only_whole_plain_values_become_options_and_the_rest_is_a_limitation() -> None:
    options = [
        OptionChange(name="plain", status="changed", before="a", after="b", beforeBytes=1, afterBytes=1),
        OptionChange(name="cut", status="added", after="x" * 200, afterBytes=500),
        OptionChange(name="packed", status="added", after='a:1:{i:0;s:1:"x";}', afterBytes=18),
        OptionChange(name="auth_key", status="added", redacted=True, afterBytes=64),
        OptionChange(
            name="siteurl", status="changed", before="http://a", after="http://b", beforeBytes=8, afterBytes=8
        ),
    ]
    built = blueprint_after(
        _diff(options=options, theme=ValueChange(before="a", after="../x")), wordpress_version="6.5.5", php_version=None
    )
    assert built is not None
    blueprint, notes = built
    assert blueprint["preferredVersions"] == {"wp": "6.5.5"}
    assert blueprint["steps"] == [{"step": "setSiteOptions", "options": {"plain": "b"}}]
    assert [line.split(":")[0] for line in notes["limitations"]] == ["option cut", "option packed", "option auth_key"]
