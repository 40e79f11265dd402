"""A tiny stand-in wp-cli.phar built with the host PHP, for tests of the wp-cli tool mount."""

PHAR_ENTRY = r"""<?php
$path = null; $words = [];
foreach (array_slice($argv, 1) as $arg) {
    if (str_starts_with($arg, '--path=')) { $path = substr($arg, 7); }
    elseif (!str_starts_with($arg, '--')) { $words[] = $arg; }
}
define('WP_USE_THEMES', false);
require $path . '/wp-load.php';
if (($words[0] ?? '') === 'option' && ($words[1] ?? '') === 'get') {
    echo get_option($words[2]), "\n";
    exit(0);
}
fwrite(STDERR, "Error: '" . implode(' ', $words) . "' is not a registered wp command.\n");
exit(1);
"""

PHAR_BUILDER = r"""
$phar = new Phar($argv[1], 0, 'wp-cli-test.phar');
$phar->addFromString('entry.php', file_get_contents($argv[2]));
$phar->setStub("#!/usr/bin/env php\n<?php Phar::mapPhar('wp-cli-test.phar'); require 'phar://wp-cli-test.phar/entry.php'; __HALT_COMPILER();");
"""
