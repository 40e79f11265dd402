"""Live run: the sandbox runs in a worker thread while its events.jsonl is tailed as it grows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from rich.markup import escape
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Static

from codebox_tui.bundle import layout
from codebox_tui.contracts.exec import ExecRequest
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import RunControl, RunRequest, RunService
from codebox_tui.lifecycle.episode import run_plan
from codebox_tui.recipes.evaluate_patch import evaluate_patch
from codebox_tui.recipes.evaluate_range import evaluate_git_range
from codebox_tui.recipes.run import run_recipe
from codebox_tui.runtime.exec import run_exec
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.dialogs import ConfirmDialog, TextDialog
from codebox_tui.screens.messages import OpenBundle
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader
from widgets.console import ExecConsole
from widgets.event_tail import EventTail
from widgets.run_progress import RunProgress

PROGRESS_TICK_S = 0.2
MAX_REPLAY = 2000  # on a huge events file, the progress line is derived from the last lines only


class LiveRunScreen(CodeboxScreen[None]):
    CSS_PATH = "live_run.tcss"
    HELP = """\
# Live run
Events appear as the sandbox boots and runs. Scroll up to pause following; `End` follows again.
- `x`: cancel the run (asks first) · `↑`/`↓` on the log: select an event · `enter`: show it in full
- `o`: the stdout and stderr of the selected event's command (or the last command) · `r`: review the bundle when done
- `c`: close a held preview now (the run was launched with a hold; the bundle is captured when it ends)

## The console of a held preview
When a held run's command has finished, an exec console appears under the log with the focus in its input:
type a command and press `enter` (`f2` / `f3` grant write / eval; `tab` moves between the log and the
console). `escape` goes back to Home while the run goes on: Home names the live runs and `l` (or the
palette's "Return to live run") brings this screen back, console and all.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "cancel_run", "Cancel run", id="live.cancel"),
        Binding("r", "review", "Review bundle", id="live.review"),
        Binding("o", "command_output", "Output", id="live.output"),
        Binding("c", "release_hold", "Close preview", id="live.release_hold"),
        Binding("escape", "back", "Back", id="live.back"),
    ]

    def __init__(
        self,
        request: RunRequest | None = None,
        *,
        run_dir: Path | None = None,
        recipe: Any = None,
        episode: tuple[Any, Path] | None = None,
        evaluation: dict[str, Any] | None = None,
        land_on: str | None = None,
        backend: str | None = None,
    ) -> None:
        """Runs ``request`` through the run lifecycle (lifecycle/service.py), or with ``recipe`` (a valid
        RecipeValidation) the whole recipe, or with ``episode`` (a checked episode plan and its folder) the
        episode, or with ``evaluation`` (evaluate-patch's checked arguments: ``plugin`` and ``patch`` or
        ``git``, plus its options) a patch evaluation; with only ``run_dir``, shows a finished run's events.
        ``land_on``: a Review tab (``tab-tests``…) the bundle opens on by itself when the run ends. ``backend``:
        the recipe's or episode's (None: the recipe's own, else ``CODEBOX_BACKEND``)."""
        super().__init__()
        self.backend = backend
        self.request = request
        self.recipe = recipe
        self.episode = episode
        self.evaluation = evaluation
        self.land_on = land_on
        self.hold_s = request.hold_s if request is not None else None  # keep the preview up after the command
        self.control = RunControl()  # cancel (kills the sandbox) and close a hold early
        self.run_dir = run_dir
        self.session: Any = None
        self.bundle_dir: Path | None = None
        self.state = "starting"  # starting (running) | cancelling | done | failed | cancelled
        self.progress = RunProgress()
        self._consumed = 0  # events fed to the progress line
        self._tick = 0

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        yield Static("starting…", id="progress")
        yield Static("", id="tail-status")
        if self.run_dir is not None:
            yield EventTail(self.run_dir / layout.EVENTS, id="tail")
        yield Footer()

    def on_mount(self) -> None:
        if self.runs_sandbox and self.run_dir is None:
            if self.recipe is not None:
                self.start_recipe()
            elif self.evaluation is not None:
                self.start_evaluation()
            elif self.episode is not None:
                self.start_episode()
            else:
                self.start_run()
            self.set_interval(PROGRESS_TICK_S, self._tick_progress)
            self.app.live_runs[self.control] = self  # quitting the app cancels it (action_quit); Home lists it
            # kept (not removed) when `escape` leaves it while the run goes on, so Home can bring it back
            self.app.install_screen(self, name=self.screen_name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Show only the keys that can act now: cancel while running, close-preview on a held run."""
        if action == "cancel_run":
            return self.live
        if action == "release_hold":
            return bool(self.hold_s) and self.live
        return True

    @property
    def runs_sandbox(self) -> bool:
        """This screen runs a command or a recipe itself (not a replay of a finished run's events)."""
        return (
            self.request is not None
            or self.recipe is not None
            or self.episode is not None
            or self.evaluation is not None
        )

    @property
    def live(self) -> bool:
        """This screen runs the sandbox and it has not finished (the clock is the wall clock)."""
        return self.runs_sandbox and self.state in ("starting", "cancelling")

    def _tick_progress(self) -> None:
        if self.live:
            self._tick += 1
            self._show_progress()

    def _show_progress(self) -> None:
        if self.state not in ("starting", "cancelling"):
            return
        now = datetime.now(UTC) if self.live else None
        text = escape(safe_text(self.progress.line(now, self._tick)))  # event data come from the sandbox
        if self.state == "cancelling":
            text = f"[yellow]cancelling…[/] {text}"
        self.query_one("#progress", Static).update(text)

    def _feed_progress(self, tail: EventTail) -> None:
        """Feed the events the tail has indexed since last time to the progress line."""
        total = len(tail.index.offsets)
        if total < self._consumed:  # the file was replaced
            self.progress, self._consumed = RunProgress(), 0
        start = max(self._consumed, total - MAX_REPLAY)
        for i in range(start, total):
            try:
                event = json.loads(tail.index.read_line(i))
            except (ValueError, OSError):
                continue
            if isinstance(event, dict):
                self.progress.feed(event)
        self._consumed = total
        self._show_progress()

    def _opened(self, session: Any) -> None:
        """The run's session exists (nothing booted yet): tail its events."""
        self.session = session
        self.app.call_from_thread(self._attach_tail, session.run_dir)

    @work(thread=True, exclusive=True, group="run")
    def start_run(self) -> None:
        assert self.request is not None
        try:
            outcome = RunService().run(
                self.request,
                control=self.control,
                on_open=lambda run: self._opened(run.session),
                on_held=lambda run: self.app.call_from_thread(self._attach_console, run.session),
            )
        except CodeboxError as caught:  # found before anything booted
            self.app.call_from_thread(self._finished, None, str(caught), False)
            return
        error = outcome.failure_text() or (outcome.warnings[0] if outcome.warnings else None)
        self.app.call_from_thread(self._finished, outcome.bundle_dir, error, outcome.status == "cancelled")

    @work(thread=True, exclusive=True, group="run")
    def start_recipe(self) -> None:
        validation = self.recipe
        recipe_path = Path(validation.recipe_path)
        error: str | None = None
        outcome: dict[str, Any] | None = None
        try:
            outcome = run_recipe(
                validation,
                recipe_path.parent,
                on_session=self._opened,
                control=self.control,
                recipe_text=recipe_path.read_text(encoding="utf-8"),
                backend=self.backend,
            )
        except (CodeboxError, OSError) as caught:
            error = str(caught)
        cancelled = self.control.cancelled
        bundle = Path(outcome["bundleDir"]) if outcome and outcome.get("bundleId") else None
        if outcome is not None and not outcome.get("success") and not error:
            first = (outcome.get("stepFailures") or [{}])[0]
            where = first.get("command") or first.get("probe") or first.get("artifact") or first.get("phase", "")
            problem = first.get("error")
            message = problem.get("message") if isinstance(problem, dict) else str(problem or "")
            error = f"recipe {outcome.get('status')}: {where} — {message}".strip(" —")[:300]
        self.app.call_from_thread(self._finished, bundle, error, cancelled)

    @work(thread=True, exclusive=True, group="run")
    def start_episode(self) -> None:
        """An episode plan (docs/episodes.md): every step, observation and snapshot is an ``episode.*`` event the
        tail shows as it happens."""
        assert self.episode is not None
        plan, plan_dir = self.episode
        try:
            episode, status = run_plan(
                plan,
                plan_dir,
                artifacts_root=get_settings().artifacts_dir,
                control=self.control,
                on_open=lambda run: self._opened(run.session),
                backend=self.backend,
            )
        except CodeboxError as caught:  # a bad snapshot to restore, found before anything booted
            self.app.call_from_thread(self._finished, None, str(caught), False)
            return
        outcome = episode.outcome
        error = outcome.failure_text() if outcome is not None else "the episode did not finish"
        if not error and status == "failed":
            error = "a step of the episode failed (see its episode.step event)"
        self.app.call_from_thread(
            self._finished, outcome.bundle_dir if outcome is not None else None, error or None, self.control.cancelled
        )

    @work(thread=True, exclusive=True, group="run")
    def start_evaluation(self) -> None:
        """evaluate-patch (docs/evaluate-patch.md): the phases and each side's tests appear as events; the
        bundle opens on its Tests tab, with the verdict, when it is done."""
        assert self.evaluation is not None
        options = dict(self.evaluation)
        plugin, patch, git_range = options.pop("plugin"), options.pop("patch", None), options.pop("git", None)
        options.update(
            control=self.control,
            on_open=lambda run: self._opened(run.session),
            artifacts_dir=get_settings().artifacts_dir,
        )
        try:
            outcome = (
                evaluate_git_range(plugin, git_range, **options)
                if git_range is not None
                else evaluate_patch(plugin, patch, **options)
            )
        except (CodeboxError, OSError) as caught:  # the patch does not apply, a range that cannot be exported…
            self.app.call_from_thread(self._finished, None, str(caught), self.control.cancelled)
            return
        bundle = Path(outcome["bundleDir"]) if outcome.get("bundleId") else None
        tests = outcome.get("tests") or {}
        error = (
            None
            if outcome.get("success")
            else (f"verdict {tests.get('verdict', '?')}" + (f" ({tests['reason']})" if tests.get("reason") else ""))
        )
        self.app.call_from_thread(self._finished, bundle, error, self.control.cancelled)

    def _attach_tail(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        tail = EventTail(run_dir / layout.EVENTS, id="tail")
        self.mount(tail, before=self.query_one(Footer))
        tail.focus()

    def _attach_console(self, session: Any) -> None:
        """While the preview is held: a console running `codebox exec` commands in it (docs/exec.md)."""

        def runner(command: str, caps: list[str]) -> Any:
            return run_exec(session, ExecRequest(command=command, capabilities=caps))

        console = ExecConsole(runner, id="console")
        self.mount(console, before=self.query_one(Footer))
        # what is typed next goes to the console, not to the event log the focus was on
        self.call_after_refresh(lambda: console.query_one("#console-input").focus())

    @property
    def screen_name(self) -> str:
        return f"live-run-{id(self):x}"

    @property
    def title_line(self) -> str:
        """What this run is, for Home's list of live runs and the palette."""
        if self.request is not None and self.request.commands:
            mount = Path(self.request.mounts[0].source).name if self.request.mounts else ""
            what = " · ".join(x for x in (mount, self.request.commands[0].command) if x)
        elif self.recipe is not None:
            what = f"recipe {Path(self.recipe.recipe_path).stem}"
        elif self.episode is not None:
            what = "episode"
        elif self.evaluation is not None:
            source = self.evaluation.get("patch") or self.evaluation.get("git")
            what = f"evaluate {Path(self.evaluation['plugin']).name} + {Path(str(source)).name}"
        else:
            what = "run"
        return what + (" (held)" if self.hold_s else "")

    def _finished(self, bundle_dir: Path | None, error: str | None, cancelled: bool = False) -> None:
        self.app.live_runs.pop(self.control, None)
        if self.app.screen is not self and self not in self.app.screen_stack:
            self.app.uninstall_screen(self)  # left with `escape` earlier: nothing will bring it back now
        for console in self.query(ExecConsole):
            console.close("the sandbox was disposed")
        self.bundle_dir = bundle_dir
        self.state = "cancelled" if cancelled else ("failed" if error else "done")
        self.refresh_bindings()
        took = f" in {self.progress.total_elapsed():.1f} s" if self.progress.started else ""
        if cancelled:
            text = f"[yellow]cancelled[/]{took} — the sandbox was stopped"
        else:
            text = f"[red]failed:[/] {escape(safe_text(error))}" if error else f"[green]done[/]{took}"
        if bundle_dir:
            text += f" — bundle ready, press [b]r[/b] to review ({escape(safe_text(bundle_dir.name))})"
        self.query_one("#progress", Static).update(text)
        if bundle_dir and self.land_on and not cancelled and self.app.screen is self:
            self.post_message(OpenBundle(bundle_dir, tab=self.land_on))

    def on_event_tail_updated(self, message: EventTail.Updated) -> None:
        self._feed_progress(self.query_one(EventTail))
        state = "following" if message.following else f"paused — {message.pending} new"
        self.query_one("#tail-status", Static).update(f" {message.total} events · {state}")

    def on_event_tail_inspect(self, message: EventTail.Inspect) -> None:
        text = json.dumps(message.event, indent=2) if isinstance(message.event, dict) else str(message.event)
        self.app.push_screen(TextDialog("Event", text))

    def action_command_output(self) -> None:
        """stdout and stderr of the command the selected event belongs to (its last one otherwise)."""
        tails = self.query(EventTail)
        if self.run_dir is None or not tails:
            self.notify("No command has run yet.", severity="warning")
            return
        shown = data.command_output(self.run_dir, tails.first().selected_event())
        if shown is None:
            self.notify("No command has finished yet.", severity="warning")
            return
        self.app.push_screen(TextDialog(*shown))

    def action_review(self) -> None:
        if self.bundle_dir is None:
            self.notify("The bundle is not ready yet.", severity="warning")
            return
        self.post_message(OpenBundle(self.bundle_dir))

    def action_cancel_run(self) -> None:
        if self.state != "starting" or self.session is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes and self.state == "starting":
                self.state = "cancelling"
                self._show_progress()
                self._stop_sandbox()
                self.notify("Cancelling: the sandbox is being stopped; evidence so far is kept.")

        self.app.push_screen(
            ConfirmDialog("Cancel this run?", "The sandbox is stopped; evidence so far is kept."), confirmed
        )

    def action_release_hold(self) -> None:
        """End a held preview now: the sandbox is disposed and the bundle captured as usual."""
        if self.hold_s and self.state == "starting" and not self.control.released:
            self.control.release()
            self.notify("Closing the preview; capturing the bundle.")

    @work(thread=True, group="cancel")
    def _stop_sandbox(self) -> None:
        """Cancel the run: no further step starts and the sandbox's sidecar process group is killed (a
        running command fails at once); the run worker then captures what exists and the run is recorded
        as cancelled. A sandbox still booting is stopped once its boot returns."""
        self.control.cancel("was cancelled by the reviewer")

    def action_back(self) -> None:
        """Back to where it was opened from. A run that is still going (or holding its preview) goes on: Home
        lists it and `l` there brings this screen back."""
        live = self.live
        self.app.pop_screen()
        if live:
            self.app.notify("The run goes on; l on Home (or the palette: 'Return to live run') brings it back.")
        elif self.runs_sandbox:
            self.app.uninstall_screen(self)
