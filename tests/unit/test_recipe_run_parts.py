"""Pure parts of recipe-run and evaluate-patch: scaffolds, bounded site seeds, test delta."""

from __future__ import annotations

from pathlib import Path

from codebox_tui.contracts.bundle import TestCase, TestSuite
from codebox_tui.contracts.recipe import SiteSeed
from codebox_tui.recipes.evaluate_patch import test_delta as compute_delta
from codebox_tui.recipes.scaffolds import write_plugin_scaffold, write_theme_scaffold
from codebox_tui.recipes.seeds import select_records, site_seed_php

FIXTURE = {
    "posts": [
        {"id": i, "slug": f"p{i}", "title": f"P{i}", "status": "publish" if i % 2 else "draft"} for i in range(1, 300)
    ],
    "pages": [{"id": 1000, "slug": "about", "title": "About"}, {"id": 1001, "slug": "secret", "title": "S"}],
    "options": {"blogname": "X", "admin_email": "private@example.org"},
    "users": [{"login": "alice", "email": "alice@private.example", "role": "editor"}],
    "activePlugins": ["a/a.php"],
    "activeTheme": "twentytwentyfour",
}


def test_plugin_and_theme_scaffolds(tmp_path: Path) -> None:
    files = write_plugin_scaffold(tmp_path / "p", "my-plugin")
    main = (tmp_path / "p" / "my-plugin.php").read_text()
    assert "Plugin Name: My Plugin" in main and "do_action( 'my_plugin_loaded' )" in main
    assert [f.name for f in files] == ["my-plugin.php", "README.md"]
    write_theme_scaffold(tmp_path / "t", "my-theme", "Mine")
    assert "Theme Name: Mine" in (tmp_path / "t" / "style.css").read_text()
    assert (tmp_path / "t" / "index.php").is_file()


def test_site_seed_is_bounded_and_anonymised() -> None:
    seed = SiteSeed.model_validate(
        {
            "name": "s",
            "source": "x.json",
            "scopes": {
                "posts": {"statuses": ["publish"]},
                "pages": {"slugs": ["about"]},
                "options": {"names": ["blogname"]},
                "users": {"maxRecords": 5},
            },
        }
    )
    chosen = select_records(FIXTURE, seed)
    posts = [p for p in chosen["posts"] if p["type"] == "post"]
    assert len(posts) == 100 and all(p["status"] == "publish" for p in posts)  # default cap of 100
    assert [p["slug"] for p in chosen["posts"] if p["type"] == "page"] == ["about"]
    assert chosen["options"] == {"blogname": "X"}
    assert chosen["users"][0]["login"] == "seed-user-1" and "alice" not in str(chosen)
    assert "activePlugins" not in chosen and "activeTheme" not in chosen
    assert chosen["counts"]["posts"] == {"included": 100, "excluded": 199}
    php = site_seed_php(seed, FIXTURE)
    assert "private@example.org" not in php and "wp_insert_post" in php


def _suite(**statuses: str) -> TestSuite:
    cases = [TestCase(name=n, classname="T", status=s) for n, s in statuses.items()]  # type: ignore[arg-type]
    failed = sum(1 for c in cases if c.status in ("failed", "error"))
    return TestSuite(
        name="s",
        status="failed" if failed else "passed",
        tests=len(cases),
        failed=failed,
        passed=len(cases) - failed,
        cases=cases,
    )


def test_delta_classifies_cases() -> None:
    before = _suite(a="passed", b="failed", c="error", d="passed", gone="passed")
    after = _suite(a="passed", b="passed", c="failed", d="failed", new="passed")
    delta = compute_delta(before, after)
    assert delta["fixed"] == ["T::b"] and delta["broken"] == ["T::d"] and delta["stillFailing"] == ["T::c"]
    assert delta["added"] == ["T::new"] and delta["removed"] == ["T::gone"]
    assert delta["verdict"] == "regression"
    assert compute_delta(_suite(x="failed"), _suite(x="passed"))["verdict"] == "improvement"
    # tests ran on both sides and nothing changed: neutral, even with a test failing on both
    assert compute_delta(_suite(x="failed"), _suite(x="failed"))["verdict"] == "neutral"
    assert (
        compute_delta(_suite(x="passed"), _suite(x="passed", y="failed"))["verdict"] == "regression"
    )  # new test fails


def test_delta_never_claims_more_than_was_checked() -> None:
    untested = compute_delta(None, None, untested_reason="No tests executed!")
    assert untested["verdict"] == "untested" and untested["reason"] == "No tests executed!"
    assert compute_delta(None, None)["verdict"] == "untested"
    empty = TestSuite(name="s", status="unknown")
    assert compute_delta(empty, empty)["verdict"] == "untested"
    assert compute_delta(_suite(x="passed"), empty)["verdict"] == "regression"  # the suite stopped running
    assert compute_delta(empty, _suite(x="passed"))["verdict"] == "untested"  # nothing to compare with
    broken = compute_delta(_suite(x="failed"), _suite(x="passed"), plugin_broken="Fatal error: boom")
    assert broken["verdict"] == "plugin-broken" and broken["reason"] == "Fatal error: boom"


def test_every_delta_is_a_valid_patch_evaluation_part() -> None:
    """The deltas the verdict logic produces are what the patch-evaluation/v1 contract declares (the writer
    validates through it), and a verdict outside the contract is refused."""
    import pytest
    from pydantic import ValidationError

    from codebox_tui.contracts.evaluation import VERDICTS, TestDelta

    deltas = [
        compute_delta(_suite(a="passed", b="failed"), _suite(a="failed", b="passed", c="failed")),
        compute_delta(_suite(x="failed"), _suite(x="passed")),
        compute_delta(_suite(x="passed"), _suite(x="passed")),
        compute_delta(None, None),
        compute_delta(_suite(x="failed"), None, plugin_broken="Fatal error"),
    ]
    seen = {TestDelta.model_validate(delta).verdict for delta in deltas}
    assert seen == set(VERDICTS)
    dumped = TestDelta.model_validate(deltas[3]).model_dump(mode="json", exclude_unset=True)
    assert dumped == deltas[3]  # the written shape survives the contract: explicit nulls kept, no keys added
    with pytest.raises(ValidationError, match="verdict"):
        TestDelta.model_validate({**deltas[1], "verdict": "partial"})
