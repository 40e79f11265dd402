#!/usr/bin/env bash
# Installs the Debian packages Codebox needs, only when something is missing (idempotent).
#   chromium        browser probes (Playwright drives it; it cannot download its own browser here)
#                   and SVG -> PNG screenshots
#   chromium-headless-shell  the same engine without the desktop browser: what browser commands launch
#                   (about half the CPU per launch; docs/browser.md "Which Chromium")
#   phpunit         PHPUnit 9 sources, mounted read-only into sandboxes by wordpress.phpunit
#   tmux            the end-to-end test that drives the real TUI in a terminal
#   git             baselines and the git apply adapter
#   fonts-dejavu-core  monospace font for rendering screenshots
#   bubblewrap      confines the Playground sidecar (namespaces, read-only system, no host pids; docs/security.md)
#                   and every PHP process of the native backend (docs/backends.md)
#   php8.2-cli php8.2-sqlite3  the native backend's PHP (WordPress runs on SQLite; docs/backends.md)
#   php8.2-cgi      the native backend's page requests and preview: one confined CGI process per request
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromium-headless-shell >/dev/null 2>&1 || need+=(chromium-headless-shell)
[ -e /usr/share/php/PHPUnit/Framework/TestCase.php ] || need+=(phpunit)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v git >/dev/null 2>&1 || need+=(git)
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || need+=(fonts-dejavu-core)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v php8.2 >/dev/null 2>&1 || need+=(php8.2-cli)
command -v php-cgi8.2 >/dev/null 2>&1 || need+=(php8.2-cgi)
[ -n "$(compgen -G '/etc/php/8.2/mods-available/pdo_sqlite.ini')" ] || need+=(php8.2-sqlite3)
if [ ${#need[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
echo "system packages: installing ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${need[@]}"
