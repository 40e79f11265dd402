"""evaluate-patch's front-end probe: one page request through the sandbox, observed by a must-use plugin of
Codebox's own that records, for that same request, its PHP errors (a fatal one included), whether WordPress
finished loading, and whether the plugin under review was active when the request began and still is at its
end (a single-file must-use plugin: whether WordPress included its file).

The same request therefore answers the "after" load check too (docs/evaluate-patch.md, "The front-end
probe"): a fatal error before ``wp_loaded`` is the plugin failing to load. Whenever the record cannot settle
that (no record, the plugin not active when the request began, WordPress stopping without a fatal error), the
caller runs the full activation check and probes again, as before.

The record is written inside the sandbox, where the code under review runs: it is parsed defensively, a record
that is missing or malformed never passes the probe (fail closed), and whether a regular plugin is still active
is read by Codebox itself from the database after the request (WordPress not loaded), never taken from it.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

from codebox_tui.errors import CodeboxError, SandboxError
from codebox_tui.lifecycle.site_state import SiteStateRecorder
from codebox_tui.runtime.php_literal import php_string
from codebox_tui.runtime.site_state import read_active_plugins

PROBE_MU_PLUGIN = "/wordpress/wp-content/mu-plugins/0-codebox-error-probe.php"  # sorts before any other mu-plugin
PROBE_LOG = "/wordpress/wp-content/codebox-probe-errors.json"
MAX_RECORD_BYTES = 1024 * 1024
MAX_ERRORS = 200

# %(mu_file)s is the must-use plugin's file under review (null for a regular plugin), %(prefix)s the regular
# plugin's entry prefix in active_plugins ("slug/").
PROBE_PHP = r"""<?php
// Codebox evaluate-patch: record this request's PHP errors, whether WordPress finished loading, and whether the
// plugin under review was active when it began and is at its end (docs/evaluate-patch.md, "The front-end probe").
$GLOBALS['codebox_probe'] = array( 'errors' => array() );
$GLOBALS['codebox_probe_active'] = function () {
	$mu_file = %(mu_file)s;
	if ( null !== $mu_file ) {
		return in_array( $mu_file, get_included_files(), true );
	}
	global $wpdb;
	if ( ! isset( $wpdb ) || ! is_object( $wpdb ) || ! function_exists( 'maybe_unserialize' ) ) {
		return null;
	}
	// the database's value, as a separate request would read it (not this request's option cache)
	$value = $wpdb->get_var( $wpdb->prepare( "SELECT option_value FROM {$wpdb->options} WHERE option_name = %%s",
		'active_plugins' ) );
	foreach ( (array) maybe_unserialize( (string) $value ) as $entry ) {
		if ( is_string( $entry ) && 0 === strpos( $entry, %(prefix)s ) ) {
			return true;
		}
	}
	return false;
};
try {
	$GLOBALS['codebox_probe']['activeAtStart'] = null === %(mu_file)s ? $GLOBALS['codebox_probe_active']() : null;
} catch ( Throwable $e ) {
	$GLOBALS['codebox_probe']['activeAtStart'] = null;
}
$GLOBALS['codebox_probe_previous'] = set_error_handler(
	function ( $type, $message, $file, $line ) {
		if ( error_reporting() & $type ) {
			$GLOBALS['codebox_probe']['errors'][] = array( 'type' => $type, 'message' => $message, 'file' => $file,
				'line' => $line );
		}
		$previous = $GLOBALS['codebox_probe_previous'];
		return $previous ? call_user_func( $previous, $type, $message, $file, $line ) : false;
	}
);
register_shutdown_function(
	function () {
		$last = error_get_last();
		if ( $last && in_array( $last['type'], array( E_ERROR, E_PARSE, E_CORE_ERROR, E_COMPILE_ERROR, E_USER_ERROR ),
			true ) ) {
			$GLOBALS['codebox_probe']['errors'][] = $last + array( 'fatal' => true,
				'duringLoad' => ! ( function_exists( 'did_action' ) && did_action( 'wp_loaded' ) ) );
		}
		// registered during shutdown: runs after every other shutdown function, WordPress's own included
		register_shutdown_function(
			function () {
				$loaded = function_exists( 'did_action' ) && did_action( 'wp_loaded' ) > 0;
				$GLOBALS['codebox_probe']['wpLoaded'] = $loaded;
				try {
					$GLOBALS['codebox_probe']['activeAtEnd'] = $GLOBALS['codebox_probe_active']();
				} catch ( Throwable $e ) {
					$GLOBALS['codebox_probe']['activeAtEnd'] = null;
				}
				file_put_contents( %(log)s, json_encode( $GLOBALS['codebox_probe'] ) );
			}
		);
	}
);
"""
READ_BACK_PHP = (
    "<?php $f = %(log)s; echo is_file( $f ) ? file_get_contents( $f ) : ''; @unlink( $f ); @unlink( %(mu)s );"
)

ERROR_TYPES = {
    1: "Fatal error",
    2: "Warning",
    4: "Parse error",
    8: "Notice",
    16: "Fatal error",
    64: "Fatal error",
    256: "Fatal error",
    512: "Warning",
    1024: "Notice",
    2048: "Strict",
    4096: "Recoverable error",
    8192: "Deprecated",
    16384: "Deprecated",
}
RESPONSE_ERRORS = re.compile(
    r"(?:<b>)?(Fatal error|Parse error|Warning|Notice|Deprecated)(?:</b>)?:\s+(.{0,300})"
    r"|There has been a critical error on this website"
)


def plain(text: str) -> str:
    return re.sub(r"[ \t]+", " ", html.unescape(re.sub(r"<[^>]+>", "", text)))


@dataclass
class ProbeRecord:
    """What the probe's must-use plugin wrote, checked field by field; ``None`` where a field was missing or not
    of its type."""

    errors: list[dict[str, Any]] = field(default_factory=list)
    active_at_start: bool | None = None
    active_at_end: bool | None = None
    wp_loaded: bool | None = None


def parse_record(text: str) -> ProbeRecord | None:
    """The record read back from the sandbox, or None when it is not a JSON object (missing, cut, forged into
    another shape). Errors that are not objects are dropped; at most ``MAX_ERRORS`` are kept."""
    try:
        value = json.loads(text.strip())
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None

    def flag(name: str) -> bool | None:
        item = value.get(name)
        return item if isinstance(item, bool) else None

    errors = value.get("errors")
    return ProbeRecord(
        errors=[e for e in errors if isinstance(e, dict)][:MAX_ERRORS] if isinstance(errors, list) else [],
        active_at_start=flag("activeAtStart"),
        active_at_end=flag("activeAtEnd"),
        wp_loaded=flag("wpLoaded"),
    )


def _error_text(error: dict[str, Any]) -> str:
    try:
        kind = ERROR_TYPES.get(int(error.get("type", 0)), "Error")
    except (TypeError, ValueError):
        kind = "Error"
    return f"{kind}: {error.get('message')} in {error.get('file')}:{error.get('line')}"


@dataclass
class FrontEndResult:
    """``front``: the evaluation's ``probe.frontEnd``. ``load_failure``: the fatal error that stopped WordPress
    loading in the request (the plugin fails to load). ``conclusive``: the request settles the "after" load check
    (else the caller runs it in full and probes again)."""

    front: dict[str, Any]
    load_failure: str | None = None
    conclusive: bool = False


def front_end_probe(
    session: Any, site_state: SiteStateRecorder, slug: str, url: str, target: str, mu_file: str | None
) -> FrontEndResult:
    """GET ``url`` through the sandbox with the recording must-use plugin in place: PHP fatal errors, warnings and
    notices (in the response, or raised by the plugin's files) and whether the plugin is still active (a
    single-file must-use plugin: still loaded). The must-use plugin is Codebox's own write, declared to the
    site-state diff (docs/site-state.md, "Attribution") and removed, with its record, by the read-back."""
    out: dict[str, Any] = {"url": url, "status": "passed", "problems": []}
    mu_path = f"{target}/{mu_file}" if mu_file else None
    code = PROBE_PHP % {
        "mu_file": php_string(mu_path) if mu_path else "null",
        "prefix": php_string(slug + "/"),
        "log": php_string(PROBE_LOG),
    }
    active_in_database: bool | None = None
    try:
        site_state.write_setup_file(PROBE_MU_PLUGIN, code.encode("utf-8"), "evaluate-patch: front-end probe", 30.0)
        response = session.sandbox.request(url, 120.0)
        # Codebox's own reads (probe_php: nothing the sandbox planted runs with them), WordPress not loaded
        recorded = session.sandbox.probe_php(
            READ_BACK_PHP % {"log": php_string(PROBE_LOG), "mu": php_string(PROBE_MU_PLUGIN)}, 60.0
        )
        if not mu_file:
            try:
                active_in_database = any(p.startswith(slug + "/") for p in read_active_plugins(session.sandbox))
            except SandboxError as exc:
                session.emit("evaluate.active-plugins-unreadable", exc.to_dict(), level="warning")
    except CodeboxError as exc:
        return FrontEndResult(
            {
                **out,
                "status": "failed",
                "fatal": f"the front-end probe failed: {exc.message}",
                "problems": [exc.message],
            }
        )
    out["httpStatus"] = response.status
    record = parse_record(recorded.text[:MAX_RECORD_BYTES])
    problems: list[str] = []
    fatal: str | None = None
    load_failure: str | None = None
    for error in record.errors if record else []:
        text = _error_text(error)
        if error.get("fatal") is True:
            fatal = fatal or text
            problems.append(text)
            if error.get("duringLoad") is True:
                load_failure = load_failure or text
        elif str(error.get("file", "")).startswith(f"{target}/"):
            problems.append(text)
    for match in RESPONSE_ERRORS.finditer(response.text):
        text = plain(match.group(0)).strip()
        problems.append(f"in the response: {text[:300]}")
        if match.group(1) in ("Fatal error", "Parse error") or match.group(1) is None:
            fatal = fatal or text
    state = "loaded" if mu_file else "active"
    # a regular plugin's state comes from the database, read by Codebox after the request: the record is written
    # where the plugin's own code runs, so a plugin that deactivates itself could forge it (a must-use plugin is
    # not in the database: whether the request included its file is all there is, as it was before)
    active = (record.active_at_end if record else None) if mu_file else active_in_database
    out["pluginLoaded" if mu_file else "pluginActive"] = bool(active)
    if record is None:
        problems.append(f"the front-end probe's record could not be read, so whether {slug} is {state} is unknown")
    elif active is None:
        problems.append(f"whether {slug} is {state} could not be checked")
    elif not active:
        problems.append(f"{slug} is not {state} after the request")
        fatal = fatal or f"{slug} is not {state}"
    if response.status >= 500:
        problems.append(f"HTTP {response.status}")
        fatal = fatal or f"HTTP {response.status} from {url}"
    out["problems"] = problems
    if problems:
        out["status"] = "failed"
    if fatal:
        out["fatal"] = f"front end ({url}): {fatal}"
    # settled by this request when the plugin was active from its start (a must-use plugin is not activated) and
    # WordPress either stopped on a fatal error while loading (the plugin fails to load) or finished loading (a
    # must-use plugin: with its file included)
    started_active = bool(mu_file) or (record is not None and record.active_at_start is True)
    conclusive = (
        record is not None
        and started_active
        and (
            load_failure is not None
            or (record.wp_loaded is True and (record.active_at_end is True if mu_file else True))
        )
    )
    return FrontEndResult(out, load_failure, conclusive)
