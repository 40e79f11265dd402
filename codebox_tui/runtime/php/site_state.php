<?php
// The sandbox side of Codebox's site state (docs/site-state.md): the compact summary, the
// wordpress-state export, runtime snapshots and their restore, and in-sandbox checkpoints.
//
// The Python caller (codebox_tui/runtime/site_state.py) prepends `$codebox_state_request = [...]`
// and reads one JSON document from stdout. Everything here runs inside the sandbox; the host treats
// what it prints as hostile input and validates it with the pydantic models.
//
// The summary, snapshot and restore read the SQLite database with PDO and never load WordPress:
// they are fast, and no plugin code runs (a plugin's option filters cannot hide what it changed).

error_reporting(E_ALL & ~E_DEPRECATED & ~E_NOTICE & ~E_WARNING);

class CbsFailure extends Exception {
    public string $failCode;

    public function __construct(string $code, string $message) {
        parent::__construct($message);
        $this->failCode = $code;
    }
}

function cbs_fail(string $code, string $message): void {
    throw new CbsFailure($code, $message);
}

function cbs_pdo(array $req): PDO {
    $path = $req['database'] ?? '/wordpress/wp-content/database/.ht.sqlite';
    if (!is_file($path)) {
        cbs_fail('database-missing', "the site database $path does not exist");
    }
    $pdo = new PDO('sqlite:' . $path);
    $pdo->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);
    $pdo->setAttribute(PDO::ATTR_DEFAULT_FETCH_MODE, PDO::FETCH_ASSOC);
    return $pdo;
}

function cbs_qi(string $name): string {
    return '"' . str_replace('"', '""', $name) . '"';
}

// The table prefix: the one the host names in the request (the sandbox's own, as its wp-config.php sets it;
// docs/site-state.md). Its `<prefix>options` table must hold `siteurl`, else this fails closed; tables under
// any other prefix are never read, so decoys planted under another one (`wp_` on native) cannot take over.
function cbs_prefix(PDO $pdo, array $req): string {
    $p = $req['tablePrefix'] ?? null;
    if (!is_string($p) || !preg_match('/^[A-Za-z0-9_]*_$/', $p)) {
        cbs_fail('table-prefix-invalid', 'the request names no valid table prefix');
    }
    $found = false;
    try {
        $st = $pdo->prepare('SELECT 1 FROM ' . cbs_qi($p . 'options') . " WHERE option_name = 'siteurl'");
        $st->execute();
        $found = (bool) $st->fetchColumn();
    } catch (Throwable $e) {
        $found = false;
    }
    if (!$found) {
        cbs_fail('options-table-missing', "the site's options table {$p}options with a siteurl row was not found");
    }
    return $p;
}

function cbs_unserialize($value) {
    if (!is_string($value)) {
        return $value;
    }
    $trimmed = trim($value);
    if ($trimmed === 'b:0;') {
        return false;
    }
    if (!preg_match('/^(a|O|s|i|d|b|N):/', $trimmed)) {
        return $value;
    }
    $out = @unserialize($trimmed, ['allowed_classes' => false]);
    return $out === false ? $value : $out;
}

function cbs_option(PDO $pdo, string $p, string $name) {
    $st = $pdo->prepare('SELECT option_value FROM ' . cbs_qi($p . 'options') . ' WHERE option_name = ?');
    $st->execute([$name]);
    $value = $st->fetchColumn();
    return $value === false ? null : cbs_unserialize($value);
}

function cbs_is_utf8($value): bool {
    return !is_string($value) || preg_match('//u', $value) === 1;
}

function cbs_preview($value, int $limit): ?string {
    if (!is_string($value)) {
        return $value === null ? null : (string) $value;
    }
    if (!cbs_is_utf8($value)) {
        return null;
    }
    return strlen($value) <= $limit ? $value : mb_strcut($value, 0, $limit, 'UTF-8') . '…';
}

function cbs_true_keys($caps): array {
    $out = [];
    if (is_array($caps)) {
        foreach ($caps as $cap => $granted) {
            if ($granted) {
                $out[] = (string) $cap;
            }
        }
    }
    sort($out);
    return $out;
}

function cbs_internal_table(string $name): bool {
    return strncmp($name, 'sqlite_', 7) === 0 || strncmp($name, '_wp_sqlite_', 11) === 0
        || strncmp($name, '_mysql_', 7) === 0;
}

// ---------------------------------------------------------------- summary
function cbs_summary(array $req): array {
    $started = microtime(true);
    $pdo = cbs_pdo($req);
    $p = cbs_prefix($pdo, $req);
    $limit = (int) ($req['maxRows'] ?? 5000);
    $previewBytes = (int) ($req['previewBytes'] ?? 200);
    $skipOptions = ['cron', 'rewrite_rules', $p . 'user_roles'];
    $out = ['tablePrefix' => $p, 'truncated' => []];

    $options = [];
    $transients = 0;
    $st = $pdo->query('SELECT option_name, option_value, autoload FROM ' . cbs_qi($p . 'options')
        . ' ORDER BY option_name LIMIT ' . ($limit + 1));
    foreach ($st as $row) {
        $name = (string) $row['option_name'];
        if (strncmp($name, '_transient_', 11) === 0 || strncmp($name, '_site_transient_', 16) === 0) {
            $transients++;
            continue;
        }
        if (in_array($name, $skipOptions, true)) {
            continue;
        }
        if (count($options) >= $limit) {
            $out['truncated'][] = 'options';
            break;
        }
        $value = (string) $row['option_value'];
        $options[$name] = ['sha256' => hash('sha256', $value), 'bytes' => strlen($value),
            'autoload' => (string) $row['autoload'], 'preview' => cbs_preview($value, $previewBytes)];
    }
    $out['options'] = (object) $options;
    $out['transients'] = $transients;

    $tables = [];
    foreach ($pdo->query("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name") as $row) {
        if (cbs_internal_table($row['name'])) {
            continue;
        }
        $columns = [];
        foreach ($pdo->query('PRAGMA table_info(' . cbs_qi($row['name']) . ')') as $col) {
            $columns[] = $col['name'];
        }
        $count = (int) $pdo->query('SELECT COUNT(*) FROM ' . cbs_qi($row['name']))->fetchColumn();
        $tables[$row['name']] = ['sha256' => hash('sha256', (string) $row['sql']), 'columns' => $columns,
            'rows' => $count];
    }
    $out['tables'] = (object) $tables;

    $posts = [];
    $st = $pdo->query('SELECT * FROM ' . cbs_qi($p . 'posts') . ' ORDER BY ID LIMIT ' . ($limit + 1));
    foreach ($st as $row) {
        if (count($posts) >= $limit) {
            $out['truncated'][] = 'posts';
            break;
        }
        $posts[(string) $row['ID']] = ['type' => (string) $row['post_type'], 'status' => (string) $row['post_status'],
            'title' => cbs_preview((string) $row['post_title'], $previewBytes), 'name' => (string) $row['post_name'],
            'author' => (int) $row['post_author'], 'sha256' => hash('sha256', serialize($row))];
    }
    $out['posts'] = (object) $posts;

    $terms = [];
    $st = $pdo->query('SELECT tt.term_taxonomy_id AS id, tt.taxonomy, tt.description, tt.parent, tt.count, t.name, '
        . 't.slug, t.term_group FROM ' . cbs_qi($p . 'term_taxonomy') . ' tt JOIN ' . cbs_qi($p . 'terms')
        . ' t ON t.term_id = tt.term_id ORDER BY tt.term_taxonomy_id LIMIT ' . ($limit + 1));
    foreach ($st as $row) {
        if (count($terms) >= $limit) {
            $out['truncated'][] = 'terms';
            break;
        }
        $terms[(string) $row['id']] = ['taxonomy' => (string) $row['taxonomy'], 'slug' => (string) $row['slug'],
            'name' => cbs_preview((string) $row['name'], $previewBytes), 'sha256' => hash('sha256', serialize($row))];
    }
    $out['terms'] = (object) $terms;

    $users = [];
    $meta = $pdo->prepare('SELECT meta_value FROM ' . cbs_qi($p . 'usermeta') . ' WHERE user_id = ? AND meta_key = ?');
    $st = $pdo->query('SELECT ID, user_login, user_registered, user_status FROM ' . cbs_qi($p . 'users')
        . ' ORDER BY ID LIMIT ' . ($limit + 1));
    foreach ($st as $row) {
        if (count($users) >= $limit) {
            $out['truncated'][] = 'users';
            break;
        }
        $meta->execute([$row['ID'], $p . 'capabilities']);
        $caps = cbs_unserialize($meta->fetchColumn());
        $users[(string) $row['ID']] = ['login' => (string) $row['user_login'], 'capabilities' => cbs_true_keys($caps)];
    }
    $out['users'] = (object) $users;

    $roles = [];
    $userRoles = cbs_option($pdo, $p, $p . 'user_roles');
    if (is_array($userRoles)) {
        foreach ($userRoles as $role => $info) {
            $roles[(string) $role] = cbs_true_keys(is_array($info) ? ($info['capabilities'] ?? []) : []);
        }
    }
    ksort($roles);
    $out['roles'] = (object) $roles;

    $cron = [];
    $events = cbs_option($pdo, $p, 'cron');
    if (is_array($events)) {
        foreach ($events as $timestamp => $hooks) {
            if (!is_array($hooks)) {
                continue;
            }
            foreach ($hooks as $hook => $instances) {
                foreach ((array) $instances as $key => $event) {
                    $cron[] = ['hook' => (string) $hook, 'timestamp' => (int) $timestamp,
                        'schedule' => is_array($event) && is_string($event['schedule'] ?? null) ? $event['schedule'] : null,
                        'argsSha256' => hash('sha256', serialize(is_array($event) ? ($event['args'] ?? []) : []))];
                }
            }
        }
    }
    $out['cron'] = $cron;

    $rules = cbs_option($pdo, $p, 'rewrite_rules');
    $keys = is_array($rules) ? array_map('strval', array_keys($rules)) : [];
    sort($keys);
    $out['rewriteRules'] = $keys;

    $plugins = cbs_option($pdo, $p, 'active_plugins');
    $out['activePlugins'] = is_array($plugins) ? array_values(array_map('strval', $plugins)) : [];
    $out['theme'] = ['stylesheet' => (string) cbs_option($pdo, $p, 'stylesheet'),
        'template' => (string) cbs_option($pdo, $p, 'template')];
    $out['siteurl'] = (string) cbs_option($pdo, $p, 'siteurl');
    $out['home'] = (string) cbs_option($pdo, $p, 'home');
    $out['controlFiles'] = cbs_control_files();
    $out['phpMs'] = (int) round((microtime(true) - $started) * 1000);
    return $out;
}

// Files that run before a request or inside WordPress without being a plugin (docs/security.md, "What the
// sandbox can and cannot forge"): Playground's /internal/shared, as the probe guard recorded it before this
// request (node/probeguard.mjs puts `$codebox_control_files` in front of a probe's code; the prepend is set
// aside during a probe, so this request cannot read it itself), and WordPress's drop-ins and mu-plugins.
const CBS_DROPINS = ['advanced-cache.php', 'db.php', 'db-error.php', 'install.php', 'maintenance.php',
    'object-cache.php', 'php-error.php', 'fatal-error-handler.php', 'sunrise.php', 'blog-deleted.php',
    'blog-inactive.php', 'blog-suspended.php'];

function cbs_file_digest(string $path): ?string {
    if (is_link($path)) {
        return 'link:' . (string) readlink($path);
    }
    if (is_dir($path)) {
        return 'dir';
    }
    if (is_file($path)) {
        return 'sha256:' . (string) hash_file('sha256', $path);
    }
    return file_exists($path) ? 'other' : null;
}

function cbs_control_files(): array {
    global $codebox_control_files;
    $out = [];
    foreach (is_array($codebox_control_files ?? null) ? $codebox_control_files : [] as $path => $digest) {
        if (is_string($path) && is_string($digest)) {
            $out[$path] = $digest;
        }
    }
    $content = '/wordpress/wp-content';
    foreach (CBS_DROPINS as $name) {
        $digest = cbs_file_digest("$content/$name");
        if ($digest !== null) {
            $out["$content/$name"] = $digest;
        }
    }
    $mu = "$content/mu-plugins";
    $digest = cbs_file_digest($mu);
    if ($digest !== null) {
        $out[$mu] = $digest;
    }
    if ($digest === 'dir') {
        $names = array_values(array_diff((array) scandir($mu), ['.', '..']));
        sort($names);
        foreach (array_slice($names, 0, 200) as $name) {
            $out["$mu/$name"] = (string) cbs_file_digest("$mu/$name");
        }
    }
    // The site's configuration and core (docs/site-state.md, "Files outside the mounts"): wp-config.php and
    // every other file at the site root, each by digest; wp-includes and wp-admin each as one fingerprint of
    // every entry's path, type, size, mtime and ctime (hashing all of core twice a run would be slow); any
    // SQLite file in the site besides the database the summary reads (a DB_FILE/DB_DIR copy).
    $root = '/wordpress';
    foreach (array_slice(cbs_names($root), 0, 500) as $name) {
        if (!is_dir("$root/$name") || is_link("$root/$name")) {
            $out["$root/$name"] = (string) cbs_file_digest("$root/$name");
        }
    }
    foreach (['wp-includes', 'wp-admin'] as $core) {
        $out["$root/$core/"] = cbs_tree_fingerprint("$root/$core");
    }
    foreach (cbs_sqlite_files("$content/database") as $path) {
        $out[$path] = (string) cbs_file_digest($path);
    }
    ksort($out);
    return $out;
}

function cbs_names(string $dir): array {
    $names = @scandir($dir);
    $names = is_array($names) ? array_values(array_diff($names, ['.', '..'])) : [];
    sort($names);
    return $names;
}

// One digest over a tree's entries (links never followed); at most 20000 entries, then a marker.
function cbs_tree_fingerprint(string $dir): string {
    if (!is_dir($dir) || is_link($dir)) {
        return (string) cbs_file_digest($dir);
    }
    $hash = hash_init('sha256');
    $stack = [$dir];
    $count = 0;
    while ($stack && $count < 20000) {
        $current = array_pop($stack);
        foreach (cbs_names($current) as $name) {
            $path = "$current/$name";
            $stat = @lstat($path);
            $count++;
            if ($stat === false) {
                hash_update($hash, "$path\0?\n");
                continue;
            }
            hash_update($hash, sprintf("%s\0%o\0%d\0%d\0%d\n", $path, $stat['mode'], $stat['size'],
                                       $stat['mtime'], $stat['ctime']));
            if (is_dir($path) && !is_link($path)) {
                $stack[] = $path;
            }
        }
    }
    return 'tree:' . hash_final($hash) . ($count >= 20000 ? ':truncated' : '');
}

// SQLite files other than the site database in wp-content/database (where a DB_FILE copy is made).
function cbs_sqlite_files(string $dir): array {
    $out = [];
    foreach (array_slice(cbs_names($dir), 0, 200) as $name) {
        // the site's database, and the WordPress test site's own file (made by Codebox's wordpress.phpunit)
        if (!preg_match('/^\.ht\.(wptests\.)?sqlite(-journal|-wal|-shm)?$/', $name)
            && !is_dir("$dir/$name")) {
            $out[] = "$dir/$name";
        }
    }
    return $out;
}

// ---------------------------------------------------------------- snapshot / restore
function cbs_match(string $name, array $patterns): bool {
    foreach ($patterns as $pattern) {
        if (fnmatch($pattern, $name)) {
            return true;
        }
    }
    return false;
}

function cbs_table_in_scope(string $name, array $scope): bool {
    if ($name === 'sqlite_sequence' || strncmp($name, 'sqlite_stat', 11) === 0) {
        return false;
    }
    if (!empty($scope['tables']) && !cbs_match($name, $scope['tables'])) {
        return false;
    }
    return !cbs_match($name, $scope['excludeTables'] ?? []);
}

function cbs_encode_value($value) {
    return cbs_is_utf8($value) ? $value : ['base64' => base64_encode($value)];
}

function cbs_decode_value($value) {
    return is_array($value) ? base64_decode((string) ($value['base64'] ?? ''), true) : $value;
}

// Files under wp-content in scope: relative path => absolute path; $skipped collects what is left out.
function cbs_walk_content(string $root, array $scope, array &$skipped, array &$dirs): array {
    $files = [];
    $exclude = $scope['excludeContent'] ?? [];
    $include = $scope['includeContent'] ?? [];
    $stack = [''];
    while ($stack) {
        $rel = array_pop($stack);
        $abs = $rel === '' ? $root : "$root/$rel";
        $entries = @scandir($abs);
        if ($entries === false) {
            $skipped[] = ['path' => $rel, 'reason' => 'unreadable'];
            continue;
        }
        foreach ($entries as $entry) {
            if ($entry === '.' || $entry === '..') {
                continue;
            }
            $child = $rel === '' ? $entry : "$rel/$entry";
            $full = "$root/$child";
            if ($entry === '.git' || cbs_match($child, $exclude)) {
                $skipped[] = ['path' => $child, 'reason' => $entry === '.git' ? 'git-metadata' : 'excluded'];
                continue;
            }
            if (is_link($full)) {
                $skipped[] = ['path' => $child, 'reason' => 'symlink'];
                continue;
            }
            if (is_dir($full)) {
                $dirs[] = $child;
                $stack[] = $child;
                continue;
            }
            if ($include && !cbs_match($child, $include)) {
                continue;
            }
            $files[$child] = $full;
        }
    }
    ksort($files, SORT_STRING);
    sort($dirs, SORT_STRING);
    return $files;
}

function cbs_snapshot(array $req): array {
    $started = microtime(true);
    $scope = $req['scope'] ?? [];
    $content = $req['content'] ?? 'inline';  // inline: base64 in the document; blobs: into $req['blobDir']
    $pdo = cbs_pdo($req);
    $p = cbs_prefix($pdo, $req);
    $tables = [];
    $master = $pdo->query("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")->fetchAll();
    $extra = $pdo->prepare("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
        . 'AND sql IS NOT NULL ORDER BY type, name');
    $rowFilters = [];
    if (!empty($scope['optionNames'])) {
        $like = [];
        foreach ($scope['optionNames'] as $pattern) {
            $like[] = 'option_name LIKE ' . $pdo->quote(str_replace('*', '%', $pattern));
        }
        $rowFilters[$p . 'options'] = '(' . implode(' OR ', $like) . ')';
    }
    if (!empty($scope['postTypes'])) {
        $rowFilters[$p . 'posts'] = 'post_type IN (' . implode(', ', array_map([$pdo, 'quote'], $scope['postTypes'])) . ')';
    }
    foreach ($master as $row) {
        $name = $row['name'];
        if (!cbs_table_in_scope($name, $scope)) {
            continue;
        }
        $extra->execute([$name]);
        $where = $rowFilters[$name] ?? null;
        $rows = [];
        foreach ($pdo->query('SELECT * FROM ' . cbs_qi($name) . ($where ? " WHERE $where" : '')) as $r) {
            $rows[] = array_map('cbs_encode_value', $r);
        }
        $table = ['name' => $name, 'createSql' => $row['sql'], 'extraSql' => $extra->fetchAll(PDO::FETCH_COLUMN),
            'rows' => $rows, 'rowCount' => count($rows)];
        if ($where) {
            $table['rowFilter'] = $where;
        }
        $tables[] = $table;
    }
    $sequence = [];
    if ($pdo->query("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'")->fetchColumn()) {
        $names = array_column($tables, 'name');
        foreach ($pdo->query('SELECT name, seq FROM sqlite_sequence') as $r) {
            if (in_array($r['name'], $names, true)) {
                $sequence[] = ['name' => $r['name'], 'seq' => (int) $r['seq']];
            }
        }
    }

    $root = $req['wpContent'] ?? '/wordpress/wp-content';
    $skipped = [];
    $dirs = [];
    $files = [];
    $bytes = 0;
    foreach (cbs_walk_content($root, $scope, $skipped, $dirs) as $rel => $full) {
        $data = @file_get_contents($full);
        if ($data === false) {
            $skipped[] = ['path' => $rel, 'reason' => 'unreadable'];
            continue;
        }
        $sha = hash('sha256', $data);
        $entry = ['scope' => 'wp-content', 'path' => $rel, 'bytes' => strlen($data), 'sha256' => $sha];
        if ($content === 'inline') {
            $entry['base64'] = base64_encode($data);
        } else {
            $blob = $req['blobDir'] . '/' . $sha;
            if (!is_file($blob)) {
                @mkdir($req['blobDir'], 0700, true);
                file_put_contents($blob, $data);
            }
        }
        $bytes += strlen($data);
        $files[] = $entry;
    }
    $doc = [
        'metadata' => [
            'activeTheme' => (string) cbs_option($pdo, $p, 'stylesheet'),
            'activePlugins' => array_values((array) (cbs_option($pdo, $p, 'active_plugins') ?: [])),
            'wpContentPath' => $root,
            'tablePrefix' => $p,
            'directories' => $dirs,
            'skippedWpContentPaths' => $skipped,
            'scope' => (object) $scope,
            'sqliteSequence' => $sequence,
        ],
        'database' => ['tables' => $tables],
        'files' => $files,
    ];
    $stats = ['tables' => count($tables), 'rows' => array_sum(array_column($tables, 'rowCount')),
        'files' => count($files), 'bytes' => $bytes, 'phpMs' => (int) round((microtime(true) - $started) * 1000)];
    if (!empty($req['checkpointMeta'])) {
        @mkdir(dirname($req['checkpointMetaPath']), 0700, true);
        file_put_contents($req['checkpointMetaPath'], json_encode($req['checkpointMeta'] + ['summary' => $stats],
            JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE));
    }
    if (!empty($req['writeTo'])) {
        @mkdir(dirname($req['writeTo']), 0700, true);
        file_put_contents($req['writeTo'], json_encode($doc, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE));
        return ['written' => $req['writeTo'], 'stats' => $stats];
    }
    return ['document' => $doc, 'stats' => $stats];
}

function cbs_restore(array $req): array {
    $started = microtime(true);
    if (!empty($req['checkpointName']) && !is_file($req['readFrom'])) {
        $names = array_column(cbs_checkpoint_list($req)['checkpoints'], 'name');
        cbs_fail('checkpoint-missing', 'no checkpoint named ' . $req['checkpointName'] . ' in this sandbox'
            . ($names ? ' (existing: ' . implode(', ', $names) . ')' : ' (none exist)'));
    }
    $raw = @file_get_contents($req['readFrom']);
    $doc = $raw === false ? null : json_decode($raw, true);
    if (!is_array($doc)) {
        cbs_fail('snapshot-unreadable', 'the snapshot document ' . $req['readFrom'] . ' is missing or not JSON');
    }
    $scope = $doc['metadata']['scope'] ?? [];
    $pdo = cbs_pdo($req);
    $pdo->exec('PRAGMA foreign_keys = OFF');
    $pdo->beginTransaction();
    $wanted = [];
    foreach ($doc['database']['tables'] as $table) {
        $wanted[$table['name']] = $table;
    }
    $master = $pdo->query("SELECT name FROM sqlite_master WHERE type = 'table'")->fetchAll(PDO::FETCH_COLUMN);
    foreach ($master as $name) {
        if (!cbs_table_in_scope($name, $scope)) {
            continue;
        }
        $filter = $wanted[$name]['rowFilter'] ?? null;
        if ($filter !== null) {
            $pdo->exec('DELETE FROM ' . cbs_qi($name) . " WHERE $filter");
        } else {
            $pdo->exec('DROP TABLE ' . cbs_qi($name));
        }
    }
    $rows = 0;
    foreach ($wanted as $name => $table) {
        if (!isset($table['rowFilter'])) {
            $pdo->exec($table['createSql']);
            foreach ($table['extraSql'] ?? [] as $sql) {
                $pdo->exec($sql);
            }
        }
        $insert = null;
        $columns = null;
        foreach ($table['rows'] as $row) {
            $keys = array_keys($row);
            if ($keys !== $columns) {
                $columns = $keys;
                $insert = $pdo->prepare('INSERT INTO ' . cbs_qi($name) . ' (' . implode(', ', array_map('cbs_qi', $keys))
                    . ') VALUES (' . implode(', ', array_fill(0, count($keys), '?')) . ')');
            }
            $insert->execute(array_map('cbs_decode_value', array_values($row)));
            $rows++;
        }
    }
    if ($pdo->query("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'")->fetchColumn()) {
        $seq = $pdo->prepare('DELETE FROM sqlite_sequence WHERE name = ?');
        foreach (array_keys($wanted) as $name) {
            $seq->execute([$name]);
        }
        $ins = $pdo->prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)');
        foreach ($doc['metadata']['sqliteSequence'] ?? [] as $s) {
            $ins->execute([$s['name'], $s['seq']]);
        }
    }
    $pdo->commit();

    $root = $doc['metadata']['wpContentPath'] ?? '/wordpress/wp-content';
    $skipped = [];
    $dirs = [];
    $current = cbs_walk_content($root, $scope, $skipped, $dirs);
    $written = 0;
    $deleted = 0;
    $keep = [];
    foreach ($doc['files'] as $file) {
        $rel = $file['path'];
        if ($rel === '' || strpos($rel, '..') !== false || $rel[0] === '/') {
            continue;
        }
        $keep[$rel] = true;
        $full = "$root/$rel";
        if (isset($current[$rel]) && @hash_file('sha256', $full) === $file['sha256']) {
            continue;
        }
        $data = isset($file['base64']) ? base64_decode($file['base64'], true)
            : @file_get_contents($req['blobDir'] . '/' . $file['sha256']);
        if ($data === false || $data === null) {
            cbs_fail('snapshot-file-missing', "the snapshot has no content for $rel");
        }
        @mkdir(dirname($full), 0755, true);
        file_put_contents($full, $data);
        $written++;
    }
    foreach ($current as $rel => $full) {
        if (!isset($keep[$rel])) {
            @unlink($full);
            $deleted++;
        }
    }
    $wantedDirs = array_flip($doc['metadata']['directories'] ?? []);
    foreach (array_reverse($dirs) as $dir) {
        if (!isset($wantedDirs[$dir])) {
            @rmdir("$root/$dir");
        }
    }
    foreach (array_keys($wantedDirs) as $dir) {
        if (!is_dir("$root/$dir")) {
            @mkdir("$root/$dir", 0755, true);
        }
    }
    $stats = ['tables' => count($wanted), 'rows' => $rows, 'filesWritten' => $written,
        'filesDeleted' => $deleted, 'phpMs' => (int) round((microtime(true) - $started) * 1000)];
    $out = ['restored' => true, 'stats' => $stats];
    if (!empty($req['checkpointMetaPath'])) {
        $meta = json_decode((string) @file_get_contents($req['checkpointMetaPath']), true);
        if (is_array($meta)) {
            $meta['restoredAt'] = $req['restoredAt'];
            file_put_contents($req['checkpointMetaPath'], json_encode($meta, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE));
            $out['meta'] = $meta;
        }
    }
    return $out;
}

// ---------------------------------------------------------------- wordpress-state export (loads WordPress)
function cbs_export(array $req): array {
    require_once '/wordpress/wp-load.php';
    $config = $req['config'];
    $safe = ($config['redaction'] ?? 'safe') === 'safe';
    $secret = $req['secretPattern'];
    $max = (int) ($req['maxItems'] ?? 1000);
    $sections = [];
    foreach ($config['sections'] as $section) {
        switch ($section) {
            case 'summary':
                $counts = [];
                foreach (get_post_types([], 'names') as $type) {
                    $c = wp_count_posts($type);
                    $counts[$type] = array_sum(array_map('intval', (array) $c));
                }
                $sections[$section] = ['wordpressVersion' => get_bloginfo('version'), 'phpVersion' => PHP_VERSION,
                    'siteUrl' => get_option('siteurl'), 'home' => get_option('home'), 'blogName' => get_option('blogname'),
                    'activeTheme' => get_stylesheet(), 'activePlugins' => array_values((array) get_option('active_plugins')),
                    'postCounts' => $counts, 'userCount' => (int) count_users()['total_users'],
                    'termCount' => (int) wp_count_terms(['hide_empty' => false]),
                    'multisite' => is_multisite()];
                break;
            case 'posts':
                $items = [];
                $query = get_posts(['post_type' => 'any', 'post_status' => 'any', 'numberposts' => $max,
                    'orderby' => 'ID', 'order' => 'ASC', 'suppress_filters' => true]);
                foreach ($query as $post) {
                    $item = ['id' => $post->ID, 'type' => $post->post_type, 'status' => $post->post_status,
                        'title' => $post->post_title, 'slug' => $post->post_name, 'author' => (int) $post->post_author,
                        'date' => $post->post_date_gmt, 'modified' => $post->post_modified_gmt,
                        'parent' => (int) $post->post_parent];
                    if (!empty($config['includeContent'])) {
                        $item['content'] = $post->post_content;
                    }
                    $items[] = $item;
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'terms':
                $items = [];
                $terms = get_terms(['hide_empty' => false, 'number' => $max, 'orderby' => 'term_id']);
                foreach (is_array($terms) ? $terms : [] as $term) {
                    $items[] = ['id' => $term->term_id, 'taxonomy' => $term->taxonomy, 'name' => $term->name,
                        'slug' => $term->slug, 'parent' => $term->parent, 'count' => $term->count];
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'menus':
                $items = [];
                foreach (wp_get_nav_menus() as $menu) {
                    $entries = [];
                    foreach ((array) wp_get_nav_menu_items($menu->term_id) as $entry) {
                        $entries[] = ['id' => $entry->ID, 'title' => $entry->title, 'url' => $entry->url,
                            'parent' => (int) $entry->menu_item_parent, 'order' => (int) $entry->menu_order];
                    }
                    $items[] = ['id' => $menu->term_id, 'name' => $menu->name, 'slug' => $menu->slug, 'items' => $entries];
                }
                $sections[$section] = ['items' => $items,
                    'locations' => (object) get_nav_menu_locations()];
                break;
            case 'templates':
                $items = [];
                if (function_exists('get_block_templates')) {
                    foreach (['wp_template', 'wp_template_part'] as $type) {
                        foreach (get_block_templates([], $type) as $template) {
                            $items[] = ['id' => $template->id, 'type' => $type, 'slug' => $template->slug,
                                'source' => $template->source, 'theme' => $template->theme,
                                'title' => is_string($template->title) ? $template->title : '',
                                'sha256' => hash('sha256', (string) $template->content)];
                        }
                    }
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'media':
                $items = [];
                foreach (get_posts(['post_type' => 'attachment', 'post_status' => 'any', 'numberposts' => $max,
                    'orderby' => 'ID', 'order' => 'ASC']) as $post) {
                    $items[] = ['id' => $post->ID, 'title' => $post->post_title, 'mimeType' => $post->post_mime_type,
                        'file' => (string) get_post_meta($post->ID, '_wp_attached_file', true)];
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'options':
                global $wpdb;
                $patterns = $config['optionNames'] ?? [];
                $items = [];
                $rows = $wpdb->get_results("SELECT option_name, option_value, autoload FROM {$wpdb->options} "
                    . "WHERE option_name NOT LIKE '\\_transient\\_%' AND option_name NOT LIKE '\\_site\\_transient\\_%' "
                    . 'ORDER BY option_name', ARRAY_A);
                foreach ((array) $rows as $row) {
                    $name = $row['option_name'];
                    if ($patterns && !cbs_match($name, $patterns)) {
                        continue;
                    }
                    if (!$patterns && $row['autoload'] !== 'yes' && $row['autoload'] !== 'on') {
                        continue;
                    }
                    $item = ['name' => $name, 'autoload' => $row['autoload'], 'bytes' => strlen($row['option_value'])];
                    if ($safe && preg_match($secret, $name)) {
                        $item['redacted'] = true;
                    } else {
                        $item['value'] = cbs_is_utf8($row['option_value']) ? maybe_unserialize($row['option_value']) : null;
                    }
                    $items[] = $item;
                    if (count($items) >= $max) {
                        break;
                    }
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'users':
                $fields = $config['userFields'] ?? [];
                $items = [];
                foreach (get_users(['number' => $max, 'orderby' => 'ID']) as $user) {
                    // safe (docs/site-state.md): no login, nor what WordPress derives from it (display name,
                    // nicename), no password hash, e-mail or activation key
                    $item = ['id' => $user->ID, 'roles' => array_values($user->roles),
                        'registered' => $user->user_registered];
                    if (!$safe) {
                        $item += ['login' => $user->user_login, 'displayName' => $user->display_name];
                    }
                    foreach ($fields as $field) {
                        if ($safe && in_array($field, ['user_pass', 'user_email', 'user_activation_key', 'user_nicename'],
                                true)) {
                            continue;
                        }
                        if (in_array($field, ['user_url', 'user_nicename', 'user_status', 'user_email'], true)) {
                            $item[$field] = $user->$field;
                        }
                    }
                    $items[] = $item;
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'rest-routes':
                $items = [];
                foreach (rest_get_server()->get_routes() as $route => $handlers) {
                    $methods = [];
                    foreach ($handlers as $handler) {
                        $methods = array_merge($methods, array_keys((array) ($handler['methods'] ?? [])));
                    }
                    $methods = array_values(array_unique($methods));
                    sort($methods);
                    $items[] = ['route' => $route, 'methods' => $methods];
                }
                $sections[$section] = ['items' => $items];
                break;
            case 'abilities':
                $items = [];
                $available = function_exists('wp_get_abilities');
                if ($available) {
                    if (!did_action('wp_abilities_api_init')) {
                        do_action('wp_abilities_api_init');
                    }
                    foreach (wp_get_abilities() as $ability) {
                        $items[] = ['name' => $ability->get_name(), 'label' => $ability->get_label(),
                            'description' => $ability->get_description()];
                    }
                }
                $sections[$section] = ['available' => $available, 'items' => $items];
                break;
        }
    }
    return ['sections' => $sections];
}

// ---------------------------------------------------------------- checkpoints
function cbs_checkpoint_list(array $req): array {
    $out = [];
    foreach (glob($req['checkpointDir'] . '/*.meta.json') ?: [] as $path) {
        $meta = json_decode((string) file_get_contents($path), true);
        if (is_array($meta)) {
            $out[] = $meta;
        }
    }
    usort($out, fn($a, $b) => strcmp((string) $a['createdAt'], (string) $b['createdAt']));
    return ['checkpoints' => $out];
}

// The active_plugins option alone (evaluate-patch's front-end probe: is the plugin still active after the request).
function cbs_active_plugins(array $req): array {
    $pdo = cbs_pdo($req);
    $plugins = cbs_option($pdo, cbs_prefix($pdo, $req), 'active_plugins');
    return ['activePlugins' => array_values(array_filter(is_array($plugins) ? $plugins : [], 'is_string'))];
}

$codebox_state_actions = ['summary' => 'cbs_summary', 'snapshot' => 'cbs_snapshot', 'restore' => 'cbs_restore',
    'export' => 'cbs_export', 'checkpoint-list' => 'cbs_checkpoint_list', 'active-plugins' => 'cbs_active_plugins'];
$codebox_state_action = $codebox_state_request['action'] ?? '';
if (!isset($codebox_state_actions[$codebox_state_action])) {
    cbs_fail('unknown-action', "unknown site-state action $codebox_state_action");
}
try {
    $codebox_state_result = $codebox_state_actions[$codebox_state_action]($codebox_state_request);
} catch (CbsFailure $e) {
    $codebox_state_result = ['error' => ['code' => $e->failCode, 'message' => $e->getMessage()]];
} catch (Throwable $e) {
    $codebox_state_result = ['error' => ['code' => 'php-error', 'message' => get_class($e) . ': ' . $e->getMessage()]];
}
echo json_encode($codebox_state_result, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PARTIAL_OUTPUT_ON_ERROR
    | JSON_INVALID_UTF8_SUBSTITUTE);
