// The run-time wall around `wp eval` / `wp eval-file` requests (docs/exec.md, "Eval policy"). Used by
// probeguard.mjs, which owns PHP.prototype.runStream in every Playground worker thread: a request marked
// `codeboxEval` runs with this wall on the PHP instance's file system (the Emscripten FS every file
// system call of PHP goes through, whatever the PHP source looks like) and with the instance's lock
// held, so no other request runs under it or around it.
//
// While the wall is up:
// - nothing is created, written, truncated, renamed, removed, linked or has its mode/owner/times changed
//   outside the site (/wordpress) and the temp folder (/tmp), nor inside any `.git`; the path is the one
//   the file system resolves (through every symbolic link), not the one PHP asked for;
// - no file or folder is opened or listed inside a `.git` (reads elsewhere are PHP's open_basedir's to
//   refuse: the runtime itself reads outside the site during a request, and refusing those here made
//   WordPress's load stall);
// - the working directory can only be the site root (PHP resolves relative `open_basedir` entries
//   against it: the known way to loosen `open_basedir` at run time needs a deeper working directory).
// The request's trusted header (exec.mjs) also narrows PHP's own `open_basedir` to the site and the temp
// folder before the eval'd code runs; PHP lets a running script tighten it, never loosen it.

export const SITE_ROOT = '/wordpress';
export const TEMP_ROOT = '/tmp';
const WRITE_ROOTS = [SITE_ROOT, TEMP_ROOT];
// Written by PHP itself during any request: the request's own output (/request/stdout, stderr, headers;
// never carried over to another request or a new runtime) and the opcache file cache (probes never use a
// compiled copy of the prepend, see probeguard.mjs).
// Playground's preload also records WordPress's environment in wp-env.php at the end of a request (no
// request runs that file; probeguard.mjs leaves it out of the control files).
const WP_ENV_RECORD = '/internal/shared/wp-env.php';
const RUNTIME_WRITES = ['/request/stdout', '/request/stderr', '/request/headers', '/internal/shared/opcache',
  WP_ENV_RECORD];

const EACCES = 2;  // Emscripten's errno
const O_ACCMODE = 3;
const O_CREAT = 64;
const O_TRUNC = 512;
const O_APPEND = 1024;

const inside = (path, root) => path === root || path.startsWith(root + '/');
const underAny = (path, roots) => roots.some((root) => inside(path, root));
const inGit = (path) => path.split('/').includes('.git');

function normalize(path) {
  const out = [];
  for (const part of path.split('/')) {
    if (!part || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

// Where `path` really is: every symbolic link resolved, the last component included when it exists (a
// dangling link counts as its target). Null when the file system cannot say (then the call is refused).
function resolved(FS, path) {
  if (typeof path !== 'string') return null;
  const absolute = path.startsWith('/') ? path : `${FS.cwd()}/${path}`;
  try {
    const lookup = FS.lookupPath(absolute, { follow: true, noent_okay: true });
    if (lookup && typeof lookup.path === 'string') return normalize(lookup.path);
  } catch { /* below */ }
  // Older runtimes without `noent_okay`: the parent resolved, the last name as given (not a link).
  const clean = normalize(absolute);
  const cut = clean.lastIndexOf('/');
  try {
    FS.lstat(clean);
    return null;  // it exists (a dangling link) but could not be followed
  } catch { /* does not exist */ }
  try {
    const parent = FS.lookupPath(clean.slice(0, cut) || '/', { follow: true });
    return normalize(`${FS.getPath(parent.node)}/${clean.slice(cut + 1)}`);
  } catch {
    return null;
  }
}

function mayWrite(path) {
  return path !== null && !inGit(path) && (underAny(path, WRITE_ROOTS) || underAny(path, RUNTIME_WRITES));
}

// Raises the wall on `FS` and returns the function that takes it down again.
export function raiseEvalWall(FS) {
  const mayRead = (path) => path === null || !inGit(path);  // unresolvable: the file system fails it anyway
  const saved = {};
  const refuse = () => { throw new FS.ErrnoError(EACCES); };
  const guard = (name, check) => {
    const original = FS[name];
    if (typeof original !== 'function') return;
    saved[name] = original;
    FS[name] = function guarded(...args) {
      if (!check(...args)) refuse();
      return original.apply(this, args);
    };
  };
  const writable = (path) => mayWrite(resolved(FS, path));
  // Paths named without following the last link (the entry itself changes, not its target).
  const entry = (path) => {
    if (typeof path !== 'string') return false;
    const absolute = normalize(path.startsWith('/') ? path : `${FS.cwd()}/${path}`);
    const cut = absolute.lastIndexOf('/');
    const parent = resolved(FS, absolute.slice(0, cut) || '/');
    return parent !== null && mayWrite(normalize(`${parent}/${absolute.slice(cut + 1)}`));
  };
  guard('open', (path, flags) => {
    if (typeof path !== 'string') return true;  // an already resolved node: the runtime's own call
    const bits = typeof flags === 'number' ? flags : 0;
    const writes = typeof flags === 'string' ? !/^r$/.test(flags)
      : (bits & O_ACCMODE) !== 0 || (bits & (O_CREAT | O_TRUNC | O_APPEND)) !== 0;
    const where = resolved(FS, path);
    return writes ? mayWrite(where) : mayRead(where);
  });
  guard('mknod', entry);
  guard('mkdir', entry);
  guard('create', entry);
  guard('symlink', (_target, path) => entry(path));
  guard('unlink', entry);
  guard('rmdir', entry);
  guard('rename', (from, to) => entry(from) && entry(to));
  for (const name of ['chmod', 'chown', 'truncate', 'utime']) guard(name, (path) => typeof path !== 'string' || writable(path));
  for (const name of ['lchmod', 'lchown']) guard(name, entry);
  for (const name of ['fchmod', 'fchown', 'ftruncate']) {
    guard(name, (fd) => {
      const stream = FS.getStream ? FS.getStream(fd) : null;
      return Boolean(stream && stream.path && mayWrite(resolved(FS, stream.path)));
    });
  }
  guard('readdir', (path) => mayRead(resolved(FS, path)));
  guard('chdir', (path) => resolved(FS, path) === SITE_ROOT);
  guard('mount', () => false);
  guard('unmount', () => false);
  return () => {
    for (const [name, original] of Object.entries(saved)) FS[name] = original;
  };
}

// PHP run by trusted code at the top of an eval request, after WordPress has loaded and before the
// eval'd code: narrows open_basedir to the site and the temp folder, and stops if that did not hold.
const OPEN_BASEDIR = `${SITE_ROOT}/:${TEMP_ROOT}/:${WP_ENV_RECORD}`;
// Playground's record is written first (open_basedir takes only an existing file by its own name).
// `basedir`: what the eval'd code may open (default Playground's; the native shell passes the site and /tmp, the
// narrowing of its own command-line open_basedir, native-shell.mjs).
export function openBasedirGuard(basedir = OPEN_BASEDIR) {
  return "if (function_exists('playground_save_wp_env_info')) playground_save_wp_env_info();"
    + ` ini_set('open_basedir', '${basedir}');`
    + ` if (ini_get('open_basedir') !== '${basedir}') {`
    + ` error_log('codebox: the eval wall (open_basedir) could not be set'); exit(70); }`;
}
