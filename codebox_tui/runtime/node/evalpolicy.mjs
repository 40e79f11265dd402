// Static policy for `wp eval` / `wp eval-file` code (docs/exec.md, "Eval policy"): the code is parsed
// with a real PHP parser (npm `php-parser`) and rejected on the first disallowed construct, before
// it runs. Ordinary WordPress API calls pass; anything whose target cannot be resolved statically
// is refused rather than guessed.
import Engine from 'php-parser';

export const DATA_ROOT = '/wordpress';

const parser = new Engine({
  parser: { php8: true, suppressErrors: false, extractDoc: false },
  ast: { withPositions: true },
});

const SHELL_FUNCTIONS = ['exec', 'shell_exec', 'system', 'passthru', 'popen', 'proc_open', 'proc_close',
  'proc_terminate', 'proc_get_status', 'proc_nice', 'pcntl_exec', 'pcntl_fork', 'pcntl_signal', 'posix_kill',
  'posix_setuid', 'posix_setgid', 'posix_mkfifo', 'dl', 'putenv', 'ini_set', 'ini_alter', 'ini_restore',
  'set_include_path', 'apache_setenv', 'chdir', 'chroot'];
const DYNAMIC_FUNCTIONS = ['eval', 'assert', 'create_function', 'call_user_func', 'call_user_func_array',
  'forward_static_call', 'forward_static_call_array', 'register_shutdown_function', 'register_tick_function',
  'header_register_callback', 'stream_wrapper_register', 'spl_autoload_register', 'set_error_handler',
  'set_exception_handler', 'iterator_apply', 'ob_start', 'preg_replace_callback_array', 'get_defined_vars',
  'extract', 'parse_str', 'func_get_args', 'class_alias', 'filter_var_array', 'filter_input_array',
  'session_set_save_handler', 'stream_context_set_params', 'stream_context_create', 'stream_filter_register'];
const ENDING_FUNCTIONS = ['wp_die', 'wp_send_json', 'wp_send_json_success', 'wp_send_json_error', 'exit', 'die'];
const MULTISITE_FUNCTIONS = ['wpmu_create_blog', 'wp_insert_site', 'wp_update_site', 'wp_delete_site',
  'wpmu_delete_blog', 'wp_initialize_site', 'wp_uninitialize_site', 'switch_to_blog', 'restore_current_blog',
  'install_network', 'populate_network', 'update_blog_status', 'wpmu_activate_signup', 'create_empty_blog',
  'insert_blog', 'wp_install', 'wpmu_create_user', 'grant_super_admin', 'revoke_super_admin'];
const BANNED_FUNCTIONS = new Map([
  ...SHELL_FUNCTIONS.map((n) => [n, 'shell or process function']),
  ...DYNAMIC_FUNCTIONS.map((n) => [n, 'dynamic or deferred dispatch']),
  ...ENDING_FUNCTIONS.map((n) => [n, 'ends the request']),
  ...MULTISITE_FUNCTIONS.map((n) => [n, 'multisite lifecycle call']),
]);

// Functions taking a callback, with the index of that argument: the callback must be a closure, an
// arrow function or the literal name of an allowed function.
// -1 is the last argument.
const CALLBACK_ARG = new Map([['array_map', 0], ['array_filter', 1], ['array_walk', 1],
  ['array_walk_recursive', 1], ['array_reduce', 1], ['usort', 1], ['uasort', 1], ['uksort', 1],
  ['add_action', 1], ['add_filter', 1], ['preg_replace_callback', 1], ['add_shortcode', 1],
  ['mb_ereg_replace_callback', 1], ['is_callable', 0],
  ...['array_udiff', 'array_udiff_assoc', 'array_udiff_uassoc', 'array_diff_uassoc', 'array_diff_ukey',
    'array_intersect_ukey', 'array_intersect_uassoc', 'array_uintersect', 'array_uintersect_assoc',
    'array_uintersect_uassoc'].map((n) => [n, -1])]);
// filter_var and filter_input: the filter must be a named constant, never FILTER_CALLBACK (a callback).
const FILTER_ARG = new Map([['filter_var', 1], ['filter_input', 2]]);

// File functions and the indexes of their path arguments: each path must resolve statically to a
// place below the data root, never `.git`.
const FILE_FUNCTIONS = new Map([
  ...['file_get_contents', 'file_put_contents', 'fopen', 'file', 'readfile', 'unlink', 'mkdir', 'rmdir',
    'touch', 'chmod', 'chown', 'chgrp', 'lchown', 'lchgrp', 'is_file', 'is_dir', 'file_exists', 'is_readable',
    'is_writable', 'is_writeable', 'is_link', 'is_executable', 'filesize', 'filemtime', 'fileatime',
    'filectime', 'fileinode', 'fileowner', 'filegroup', 'fileperms', 'filetype', 'stat', 'lstat', 'scandir',
    'opendir', 'dir', 'glob', 'realpath', 'readlink', 'parse_ini_file', 'highlight_file', 'show_source',
    'php_strip_whitespace', 'md5_file', 'sha1_file', 'simplexml_load_file', 'gzopen', 'gzfile', 'readgzfile',
    'getimagesize', 'exif_read_data', 'disk_free_space', 'disk_total_space', 'tempnam', 'opcache_compile_file',
    'opcache_invalidate', 'wp_delete_file', 'wp_mkdir_p', 'unzip_file', 'copy_dir', 'move_dir']
    .map((n) => [n, [0]]),
  ...['copy', 'rename', 'symlink', 'link', 'move_uploaded_file'].map((n) => [n, [0, 1]]),
  ['hash_file', [1]],
]);

const BANNED_CLASSES = new Map([
  ...['splfileobject', 'splfileinfo', 'spltempfileobject', 'directoryiterator', 'filesystemiterator',
    'recursivedirectoryiterator', 'globiterator', 'wp_filesystem_direct', 'wp_filesystem_base',
    'wp_filesystem_ftpext', 'wp_filesystem_ftpsockets', 'wp_filesystem_ssh2'].map((n) => [n, 'filesystem class']),
  ...['ziparchive', 'phar', 'phardata', 'pharfileinfo', 'pclzip'].map((n) => [n, 'archive class']),
  ...['pdo', 'mysqli', 'sqlite3', 'wpdb'].map((n) => [n, 'database class']),
  ...['domdocument', 'simplexmlelement', 'xmlreader', 'xmlwriter', 'xsltprocessor'].map((n) => [n, 'XML class']),
  ...['soapclient', 'soapserver'].map((n) => [n, 'SOAP class']),
  ...['imagick', 'imagickdraw', 'gmagick'].map((n) => [n, 'image class']),
  ['ffi', 'FFI class'],
  ...['reflectionclass', 'reflectionfunction', 'reflectionmethod', 'reflectionobject', 'closure']
    .map((n) => [n, 'dynamic dispatch (reflection)']),
]);

const KNOWN_CONSTANTS = {
  abspath: `${DATA_ROOT}/`, wp_content_dir: `${DATA_ROOT}/wp-content`,
  wp_plugin_dir: `${DATA_ROOT}/wp-content/plugins`, wpmu_plugin_dir: `${DATA_ROOT}/wp-content/mu-plugins`,
  wpinc: 'wp-includes',
};
const SAFE_WRAPPERS = ['php://memory', 'php://temp', 'php://output', 'php://stdout', 'php://stderr'];

const bare = (name) => String(name).replace(/^\\+/, '').toLowerCase();

function staticString(node) {
  if (!node) return null;
  switch (node.kind) {
    case 'string': return node.value;
    case 'nowdoc': return node.value;
    case 'number': return String(node.value);
    case 'name': {
      const value = KNOWN_CONSTANTS[bare(node.name)];
      return value === undefined ? null : value;
    }
    case 'bin': {
      if (node.type !== '.') return null;
      const left = staticString(node.left);
      const right = staticString(node.right);
      return left === null || right === null ? null : left + right;
    }
    case 'encapsed': {
      let out = '';
      for (const part of node.value) {
        const text = staticString(part.expression);
        if (text === null) return null;
        out += text;
      }
      return out;
    }
    default: return null;
  }
}

function normalizePath(path) {
  const absolute = path.startsWith('/') ? path : `${DATA_ROOT}/${path}`;
  const out = [];
  for (const part of absolute.split('/')) {
    if (!part || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

function checkPath(node, what) {
  const text = staticString(node);
  if (text === null) return `${what}: the path cannot be resolved statically`;
  if (SAFE_WRAPPERS.includes(text.toLowerCase())) return null;
  if (/^[a-z][a-z0-9+.-]*:/i.test(text)) return `${what}: stream wrappers are not allowed (${text})`;
  const path = normalizePath(text);
  if (path.split('/').includes('.git')) return `${what}: .git is not accessible (${text})`;
  if (path !== DATA_ROOT && !path.startsWith(DATA_ROOT + '/')) {
    return `${what}: ${text} is outside the sandbox data root ${DATA_ROOT}`;
  }
  return null;
}

function location(node) {
  return node && node.loc ? { line: node.loc.start.line, column: node.loc.start.column } : null;
}

function checkCallback(node, fn) {
  if (!node) return null;
  if (['closure', 'arrowfunc'].includes(node.kind)) return null;
  if (node.kind === 'string') {
    const reason = callableRisk(node.value);
    return reason ? `${fn}: callback ${node.value} names ${reason}` : null;
  }
  return `${fn}: the callback cannot be resolved statically`;
}

// Why a function name (as PHP would call it) is not allowed, or null.
function functionRisk(name) {
  const fn = bare(name);
  if (BANNED_FUNCTIONS.has(fn)) return `a ${BANNED_FUNCTIONS.get(fn)}`;
  if (FILE_FUNCTIONS.has(fn)) return 'a file function (its path cannot be checked when it is called by name)';
  return null;
}

// File functions whose names are everyday words in WordPress arrays ('type' => 'file'): refused as
// callbacks, but not as any string (the run-time wall stops what such a callback could reach).
const COMMON_WORDS = new Set(['file', 'dir', 'link', 'copy', 'stat', 'touch', 'glob', 'rename', 'unlink',
  'readlink', 'symlink', 'realpath', 'chmod', 'mkdir', 'rmdir', 'fopen', 'system', 'exec']);

// Why a string used as a callable (a function name, or 'Class::method') is not allowed, or null.
function callableRisk(text) {
  const value = String(text).trim();
  const risk = functionRisk(value);
  if (risk) return risk;
  const owner = bare(value.split('::')[0]);
  if (BANNED_CLASSES.has(owner)) return `a ${BANNED_CLASSES.get(owner)}`;
  return null;
}

// `use function X as y;` and `use X as Y;` of the code: calls and classes are checked under the names
// PHP resolves them to.
let aliases = null;
function collectAliases(ast) {
  const functions = new Map();
  const classes = new Map();
  const visit = (node) => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) { node.forEach(visit); return; }
    if (node.kind === 'usegroup') {
      for (const item of node.items || []) {
        const type = item.type || node.type;
        const full = bare(node.name ? `${node.name}\\${item.name}` : item.name);
        const alias = bare(item.alias ? item.alias.name : full.split('\\').pop());
        if (type === 'function') functions.set(alias, full);
        else if (type !== 'const') classes.set(alias, full);
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (key !== 'loc' && value && typeof value === 'object') visit(value);
    }
  };
  visit(ast);
  const resolve = (map, name) => {
    const text = String(name);
    const plain = bare(text);
    if (text.startsWith('\\')) return plain;
    const [first, ...rest] = plain.split('\\');
    const target = map.get(first);
    if (!target) return plain;
    return rest.length ? [target, ...rest].join('\\') : target;
  };
  return {
    functionOf: (name) => resolve(functions, name),
    classOf: (name) => resolve(classes, name),
  };
}

function violation(node, parentStack) {
  switch (node.kind) {
    case 'eval': return 'eval() is not allowed';
    case 'exit': return `${node.useDie ? 'die' : 'exit'} ends the request`;
    case 'encapsed': return node.type === 'shell' ? 'backtick shell execution is not allowed' : null;
    case 'include': {
      const what = node.require ? (node.once ? 'require_once' : 'require') : (node.once ? 'include_once' : 'include');
      return checkPath(node.target, what);
    }
    case 'string':
    case 'bin': {
      // a string naming a disallowed or file function or class can be called or made through any
      // callback-taking API (array_map('file_get_contents', …)), whatever the function
      const text = node.kind === 'string' ? node.value : (node.type === '.' ? staticString(node) : null);
      const reason = text === null || COMMON_WORDS.has(text.trim().toLowerCase()) ? null : callableRisk(text);
      return reason ? `the string '${text}' names ${reason}` : null;
    }
    case 'name':
      return bare(node.name) === 'filter_callback' ? 'FILTER_CALLBACK runs a callback' : null;
    case 'usegroup': {
      for (const item of node.items || []) {
        const type = item.type || node.type;
        const full = bare(node.name ? `${node.name}\\${item.name}` : item.name);
        const reason = type === 'function' ? functionRisk(full) : type === 'const' ? null : BANNED_CLASSES.get(full);
        if (reason) return `use ${item.name}: ${reason}`;
      }
      return null;
    }
    case 'class': {
      const parent = node.extends && aliases.classOf(node.extends.name);
      const reason = parent && BANNED_CLASSES.get(parent);
      return reason ? `a class extending ${node.extends.name}: ${reason}` : null;
    }
    case 'new': {
      if (node.what.kind === 'class') return null; // an anonymous class, checked as a class
      if (node.what.kind !== 'name') return 'new with a class that cannot be resolved statically';
      const reason = BANNED_CLASSES.get(aliases.classOf(node.what.name));
      return reason ? `new ${node.what.name}: ${reason}` : null;
    }
    case 'staticlookup': {
      if (node.what.kind !== 'name' && node.what.kind !== 'selfreference' && node.what.kind !== 'staticreference'
          && node.what.kind !== 'parentreference') {
        return 'a static call on a class that cannot be resolved statically';
      }
      if (node.offset && node.offset.kind !== 'identifier') return 'a static member that cannot be resolved statically';
      const reason = node.what.kind === 'name' && BANNED_CLASSES.get(aliases.classOf(node.what.name));
      return reason ? `${node.what.name}::${node.offset.name}: ${reason}` : null;
    }
    case 'call': {
      const what = node.what;
      if (what.kind === 'propertylookup' || what.kind === 'nullsafepropertylookup') {
        return what.offset.kind === 'identifier' ? null : 'a method call whose name cannot be resolved statically';
      }
      if (what.kind === 'staticlookup') return null; // checked as a staticlookup node
      if (what.kind !== 'name') return 'a call whose target cannot be resolved statically';
      const fn = aliases.functionOf(what.name);
      const reason = BANNED_FUNCTIONS.get(fn);
      if (reason) return `${fn}(): ${reason}`;
      const args = node.arguments || [];
      if (FILE_FUNCTIONS.has(fn)) {
        for (const index of FILE_FUNCTIONS.get(fn)) {
          if (index < args.length) {
            const problem = checkPath(args[index], `${fn}()`);
            if (problem) return problem;
          }
        }
      }
      if (FILTER_ARG.has(fn)) {
        const filter = args[FILTER_ARG.get(fn)];
        if (filter && filter.kind !== 'name') return `${fn}(): the filter must be a named FILTER_* constant`;
      }
      if (CALLBACK_ARG.has(fn)) {
        const index = CALLBACK_ARG.get(fn);
        return checkCallback(args[index < 0 ? args.length - 1 : index], `${fn}()`);
      }
      return null;
    }
    default: return null;
  }
}

function walk(node, stack, found) {
  if (!node || typeof node !== 'object' || found.length) return;
  if (Array.isArray(node)) {
    for (const child of node) walk(child, stack, found);
    return;
  }
  if (typeof node.kind === 'string') {
    const problem = violation(node, stack);
    if (problem) {
      found.push({ message: problem, location: location(node) });
      return;
    }
  }
  stack.push(node);
  for (const [key, value] of Object.entries(node)) {
    if (key === 'loc' || key === 'leadingComments' || key === 'trailingComments') continue;
    if (value && typeof value === 'object') walk(value, stack, found);
  }
  stack.pop();
}

// Returns null when the code may run, else {message, location}. `file` selects a whole PHP file
// (eval-file, with its `<?php` tag) instead of a code fragment (eval).
export function checkPhp(code, { file = false } = {}) {
  let ast;
  try {
    ast = file ? parser.parseCode(code, 'eval-file.php') : parser.parseEval(code);
  } catch (err) {
    return { message: `the PHP code does not parse: ${err && err.message || err}`, location: null };
  }
  const found = [];
  aliases = collectAliases(ast);
  try {
    walk(ast, [], found);
  } finally {
    aliases = null;
  }
  return found[0] || null;
}
