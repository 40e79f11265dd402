"""The "Evaluate a patch" and "Reproduce a bug" forms as a user meets them: `e` / `R` on Home (and the palette)
open them, the fields are typed in, and bad input is refused under the field at fault before anything boots."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.evaluate import EvaluatePatchScreen, PathSuggester, ReproduceScreen
from tests.factories.tui import screen_lines, type_into, type_text
from tests.factories.widget_hosts import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLUGIN = EXAMPLES / "plugins-for-recipes" / "buggy-counter"
PATCH = EXAMPLES / "patches" / "buggy-counter-fix.patch"


def shown_problems(screen: EvaluatePatchScreen | ReproduceScreen) -> dict[str, str]:
    """Each field's error line that is on screen (id without ``-error`` → text)."""
    return {
        str(label.id).removesuffix("-error"): str(label.render())
        for label in screen.query(".field-error").results(Label)
        if label.has_class("-shown")
    }


async def open_evaluate_form(app: CodeboxApp, pilot: object) -> EvaluatePatchScreen:
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press("e")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: isinstance(app.screen, EvaluatePatchScreen))
    assert isinstance(app.screen, EvaluatePatchScreen)
    return app.screen


async def test_a_missing_plugin_folder_is_named_under_the_plugin_field(tmp_path: Path) -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_evaluate_form(app, pilot)
        assert "Evaluate a patch" in "\n".join(screen_lines(app))
        await type_into(pilot, "plugin", str(tmp_path / "no-such-plugin"))
        await type_into(pilot, "patch", str(PATCH))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen  # refused: nothing boots
        problems = shown_problems(screen)
        assert list(problems) == ["plugin"]
        assert "plugin directory not found" in problems["plugin"] and "no-such-plugin" in problems["plugin"]


async def test_neither_or_both_of_patch_and_range_is_refused_under_the_patch_field() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_evaluate_form(app, pilot)
        await type_into(pilot, "plugin", str(PLUGIN))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        assert "exactly one of --patch FILE and --git" in shown_problems(screen)["patch"]
        await type_into(pilot, "patch", str(PATCH))
        await type_into(pilot, "git", "main..fix")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        assert list(shown_problems(screen)) == ["patch"]
        assert "exactly one" in shown_problems(screen)["patch"]


async def test_a_bad_range_and_bad_versions_are_named_under_their_fields(tmp_path: Path) -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_evaluate_form(app, pilot)
        await type_into(pilot, "plugin", str(PLUGIN))
        await type_into(pilot, "git", "a...b")
        await pilot.press("enter")
        await pilot.pause()
        assert "symmetric range" in shown_problems(screen)["git"]
        await type_into(pilot, "git", "HEAD")
        await type_into(pilot, "php", "5.6")
        await pilot.press("enter")
        await pilot.pause()
        assert list(shown_problems(screen)) == ["php"] and "5.6" in shown_problems(screen)["php"]
        await type_into(pilot, "php", "8.3")
        await type_into(pilot, "wp", "1.0")
        await pilot.press("enter")
        await pilot.pause()
        assert list(shown_problems(screen)) == ["wp"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EvaluatePatchScreen))


async def test_the_palette_opens_both_forms() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for query, form in (("Evaluate a patch", EvaluatePatchScreen), ("Reproduce a bug", ReproduceScreen)):
            await pilot.press("ctrl+p")
            await pilot.pause()
            await type_text(pilot, query)
            await wait_for(pilot, lambda q=query: q in "\n".join(screen_lines(app)))
            await pilot.press("enter")
            await wait_for(pilot, lambda f=form: isinstance(app.screen, f))
            await pilot.press("escape")
            await wait_for(pilot, lambda f=form: not isinstance(app.screen, f))


async def test_reproduce_refuses_an_invalid_recipe_naming_its_json_path(tmp_path: Path) -> None:
    recipe = tmp_path / "repro.json"
    recipe.write_text('{"schema": "wp-codebox/workspace-recipe/v1", "steps": 3}')
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReproduceScreen))
        screen = app.screen
        assert isinstance(screen, ReproduceScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert "is required" in shown_problems(screen)["recipe"]
        await type_into(pilot, "recipe", str(recipe))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        problem = shown_problems(screen)["recipe"]
        assert "repro.json: invalid recipe" in problem and "nothing was run" in problem


async def test_path_completion_suggests_the_folder_entries(tmp_path: Path) -> None:
    (tmp_path / "buggy-counter").mkdir()
    (tmp_path / "fix.patch").write_text("")
    suggester = PathSuggester()
    assert await suggester.get_suggestion(f"{tmp_path}/bu") == f"{tmp_path}/buggy-counter/"
    assert await suggester.get_suggestion(f"{tmp_path}/fi") == f"{tmp_path}/fix.patch"
    assert await suggester.get_suggestion(f"{tmp_path}/zz") is None
