// Loaded with `node --import` (like nospawn.mjs) in the sidecar's main thread and in every Playground
// worker thread. Codebox's own measurements inside a sandbox (the site-state summary, snapshots,
// checkpoints and their restore) must not run code the sandbox planted (docs/security.md, "What the
// sandbox can and cannot forge").
//
// What Playground runs before a request's own code, all of it writable by sandboxed PHP:
// - /internal/shared/php.ini and /internal/shared/extensions/*.ini (and the extensions they load), read
//   when a PHP runtime starts (at boot and at each runtime rotation: every 400 requests and after each
//   `pg.cli`), not per request;
// - its `auto_prepend_file`, /internal/shared/auto_prepend_file.php, read by every request; Playground's
//   version loads /internal/shared/consts.json and requires /internal/shared/preload/*.php;
// - the opcache file cache /internal/shared/opcache, from which a compiled script is served instead of
//   the file (checked only against the file's timestamp).
//
// A *probe* is a request the sidecar marks with this process's secret token (sandboxed PHP cannot make a
// request object). It takes the PHP instance's lock, and while it holds it (no other request runs):
// 1. it records the control files (path -> sha256, or what else is there) for the caller;
// 2. if php.ini or the extensions folder (PHP scans its .ini files; they load its .so files) is not what
//    this PHP started with, it moves the sandbox's aside, puts the originals back and restarts the
//    runtime (a rotation), so the probe runs under the original settings and extensions;
// 3. it moves the sandbox's prepend aside (unread) and puts an empty one in its place, drops any cached
//    compile of that path, and writes the probe's code under a fresh random name (never cached);
// 4. it runs the probe, then moves every sandbox file back where it was, and, after a rotation, restarts
//    the runtime again under the sandbox's php.ini. The sandbox's files are not changed: its own
//    requests still see what it wrote.
import { PHP, __private__dont__use } from '@php-wasm/universal';
import { createHash, randomBytes } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';
import { raiseEvalWall } from './evalwall.mjs';

const SHARED = '/internal/shared';
const PHP_INI = `${SHARED}/php.ini`;
const PREPEND = `${SHARED}/auto_prepend_file.php`;
const OPCACHE = `${SHARED}/opcache`;
export const PROBE_PREPEND = '<?php /* codebox probe: the sandbox prepend is set aside for this request */\n';
const MAX_CONTROL_ENTRIES = 200;
const ENOENT = 44;  // Emscripten's errno

// The token crosses to the worker threads through their copy of the environment and is removed there
// at once (PHP's environment is its own, never Node's).
if (isMainThread) {
  process.env.CODEBOX_PROBE_TOKEN = randomBytes(32).toString('hex');
  globalThis.__codeboxProbeToken = process.env.CODEBOX_PROBE_TOKEN;
}
const TOKEN = process.env.CODEBOX_PROBE_TOKEN || '';
if (!isMainThread) delete process.env.CODEBOX_PROBE_TOKEN;

// What a PHP runtime reads when it starts: php.ini and the folder of extensions and the .ini files PHP
// scans (intl.ini loads intl.so from there). Recorded per PHP instance by its first probe (the boot
// check, before any command): path -> digest, and the bytes to put back.
const EXTENSIONS = `${SHARED}/extensions`;
const startFiles = new WeakMap();

function lstat(FS, path) {
  try { return FS.lstat(path); } catch (err) {
    if (err && err.errno === ENOENT) return null;
    throw err;
  }
}

function removeTree(FS, path) {
  const stat = lstat(FS, path);
  if (!stat) return;
  if (FS.isDir(stat.mode)) {
    for (const name of FS.readdir(path)) {
      if (name !== '.' && name !== '..') removeTree(FS, `${path}/${name}`);
    }
    FS.rmdir(path);
  } else {
    FS.unlink(path);
  }
}

// The sha256 of a file's bytes, remembered per file node while its change time and size stay the same
// (every write sets the change time; `touch()` sets only the access and modification times, and a
// rename or a new file is a new node), so the ICU data and intl.so (~12 MB) are hashed once, not per probe.
const digests = new WeakMap();
function fileDigest(FS, path) {
  const node = FS.lookupPath(path, { follow: false }).node;
  const stat = FS.lstat(path);
  const key = `${stat.size}:${stat.ctime?.getTime?.() ?? node.ctime}:${stat.mtime?.getTime?.() ?? node.mtime}`;
  const known = digests.get(node);
  if (known && known.key === key) return known.digest;
  const digest = createHash('sha256').update(FS.readFile(path)).digest('hex');
  digests.set(node, { key, digest });
  return digest;
}

// path -> "sha256:<hex>" | "link:<target>" | "dir" | "other", for every entry of /internal/shared and
// below it, except the opcache file cache (rewritten by every request), wp-env.php (a record Playground's
// preload writes when WordPress first loads; no request runs it) and Codebox's own aside names.
const UNTRACKED = new Set([OPCACHE, `${SHARED}/wp-env.php`]);
function controlFiles(FS) {
  const out = {};
  let count = 0;
  const walk = (dir) => {
    let names;
    try { names = FS.readdir(dir).filter((n) => n !== '.' && n !== '..').sort(); } catch { return; }
    for (const name of names) {
      const path = `${dir}/${name}`;
      if (UNTRACKED.has(path) || name.startsWith('.codebox-probe-')) continue;
      if (++count > MAX_CONTROL_ENTRIES) { out[`${dir}/…`] = 'truncated'; return; }
      const stat = lstat(FS, path);
      if (!stat) continue;
      if (FS.isLink(stat.mode)) out[path] = `link:${FS.readlink(path)}`;
      else if (FS.isDir(stat.mode)) { out[path] = 'dir'; walk(path); }
      else if (FS.isFile(stat.mode)) out[path] = `sha256:${fileDigest(FS, path)}`;
      else out[path] = 'other';
    }
  };
  walk(SHARED);
  return out;
}

function startupFiles(FS) {
  const out = new Map();
  const add = (path) => {
    const stat = lstat(FS, path);
    if (!stat) return;
    if (FS.isDir(stat.mode)) {
      for (const name of FS.readdir(path).filter((n) => n !== '.' && n !== '..').sort()) add(`${path}/${name}`);
    } else {
      out.set(path, FS.isFile(stat.mode) ? fileDigest(FS, path) : `mode:${stat.mode}`);
    }
  };
  add(PHP_INI);
  add(EXTENSIONS);
  return out;
}

function sameFiles(a, b) {
  if (a.size !== b.size) return false;
  for (const [path, digest] of a) {
    if (b.get(path) !== digest) return false;
  }
  return true;
}

function readAll(FS, paths) {
  const out = new Map();
  for (const [path, digest] of paths) {
    if (digest.startsWith('mode:')) continue;  // not a regular file at start: nothing to put back
    out.set(path, Buffer.from(FS.readFile(path)));
  }
  return out;
}

function moveAside(FS, path) {
  if (!lstat(FS, path)) return null;
  const aside = `${SHARED}/.codebox-probe-${randomBytes(12).toString('hex')}`;
  FS.rename(path, aside);
  return aside;
}

function putBack(FS, path, aside) {
  removeTree(FS, path);
  if (aside) FS.rename(aside, path);
}

// Compiled copies of `path` in the opcache file cache (<cache>/<system id>/<path>.bin).
function dropCompiled(FS, path) {
  let ids;
  try { ids = FS.readdir(OPCACHE).filter((n) => n !== '.' && n !== '..'); } catch { return; }
  for (const id of ids) {
    const stat = lstat(FS, `${OPCACHE}/${id}`);
    if (stat && FS.isDir(stat.mode)) removeTree(FS, `${OPCACHE}/${id}${path}.bin`);  // never through a link
  }
}

const originalRunStream = PHP.prototype.runStream;

// A `wp eval` request (exec.mjs marks it; the mark only ever adds restrictions, so it needs no token):
// run under the eval wall (evalwall.mjs), raised and taken down while this request holds the PHP
// instance's lock, so it covers the whole request and no other one.
async function runWalled(php, request) {
  const lock = php.semaphore;
  const release = await lock.acquire();
  let lower = null;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    try {
      if (lower) lower();
      delete php.hotSwapPHPRuntime;
      removeTree(php[__private__dont__use].FS, script);
    } finally {
      release();
    }
  };
  // A runtime rotation (due every 400 requests, done inside runStream) replaces the file system object:
  // the wall comes down on the old one for the swap and goes up on the new one.
  const swap = php.hotSwapPHPRuntime;
  php.hotSwapPHPRuntime = async function hotSwapPHPRuntime(runtime) {
    if (lower) { lower(); lower = null; }
    await swap.call(php, runtime);
    if (!finished) lower = raiseEvalWall(php[__private__dont__use].FS);
  };
  // The code goes in a file of its own written before the wall goes up (runStream would write
  // /internal/eval.php under it), run as the request's script.
  const script = `/internal/codebox-eval-${randomBytes(16).toString('hex')}.php`;
  let pending;
  try {
    if (typeof request.code !== 'string') throw Object.assign(new Error('eval request without code'), { code: 'bad-request' });
    php[__private__dont__use].FS.writeFile(script, request.code);
    lower = raiseEvalWall(php[__private__dont__use].FS);
    php.semaphore = { acquire: async () => finish };
    try {
      const { codeboxEval, code, ...plain } = request;
      pending = originalRunStream.call(php, { ...plain, scriptPath: script });
    } finally {
      php.semaphore = lock;
    }
  } catch (err) {
    finish();
    throw err;
  }
  try {
    return await pending;
  } catch (err) {
    finish();
    throw err;
  }
}
Object.defineProperty(PHP.prototype, 'runStream', {
  value: async function runStream(request) {
    // /internal, /tmp and /home join the write budget (writeguard.mjs, preloaded: the sidecar refuses to start without)
    globalThis.__codeboxWriteGuard?.budgetPlaygroundFiles?.(this[__private__dont__use].FS);
    if (request && Object.prototype.hasOwnProperty.call(request, 'codeboxEval')) {
      return runWalled(this, request);
    }
    if (!request || !Object.prototype.hasOwnProperty.call(request, 'codeboxProbe')) {
      return originalRunStream.call(this, request);
    }
    const probe = request.codeboxProbe;
    if (!TOKEN || !probe || probe.token !== TOKEN || typeof probe.code !== 'string') {
      throw Object.assign(new Error('probe request refused'), { code: 'probe-refused' });
    }
    const php = this;
    const FS = () => php[__private__dont__use].FS;
    const lock = this.semaphore;
    const release = await lock.acquire();  // no other request of this PHP runs until `finish`
    let iniAside = null;
    let extensionsAside = null;
    let prependAside = null;
    let rotated = false;
    const script = `/internal/codebox-probe-${randomBytes(16).toString('hex')}.php`;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      try {
        removeTree(FS(), script);
        putBack(FS(), PREPEND, prependAside);
        if (rotated) {
          putBack(FS(), PHP_INI, iniAside);
          putBack(FS(), EXTENSIONS, extensionsAside);
        }
      } finally {
        release();
      }
    };
    let pending;
    try {
      const control = controlFiles(FS());
      const current = startupFiles(FS());
      if (!startFiles.has(php)) startFiles.set(php, { digests: current, bytes: readAll(FS(), current) });
      const original = startFiles.get(php);
      if (!sameFiles(current, original.digests)) {
        // The sandbox changed what a runtime reads at start: run the probe in a runtime started from the
        // original files (a rotation), the sandbox's set aside meanwhile.
        iniAside = moveAside(FS(), PHP_INI);
        extensionsAside = moveAside(FS(), EXTENSIONS);
        rotated = true;
        for (const [path, bytes] of original.bytes) {
          FS().mkdirTree(path.substring(0, path.lastIndexOf('/')));
          FS().writeFile(path, bytes);
        }
        await php.rotateRuntime();
      }
      prependAside = moveAside(FS(), PREPEND);
      FS().writeFile(PREPEND, PROBE_PREPEND);
      dropCompiled(FS(), PREPEND);
      const header = `<?php $codebox_control_files = json_decode(${JSON.stringify(JSON.stringify(control))}, true); ?>`;
      FS().writeFile(script, header + probe.code);
      // The original runStream takes the lock first thing: hand it the one already held.
      this.semaphore = { acquire: async () => finish };
      try {
        const { codeboxProbe, code, ...plain } = request;
        pending = originalRunStream.call(this, { ...plain, scriptPath: script });
      } finally {
        this.semaphore = lock;
      }
    } catch (err) {
      finish();
      throw err;
    }
    let response;
    try {
      response = await pending;
    } catch (err) {
      finish();
      throw err;
    }
    if (rotated) {
      // Back to the sandbox's php.ini once the probe is over (its own requests keep what it wrote).
      response.finished.then(async () => {
        const again = await lock.acquire();
        try { await php.rotateRuntime(); } catch { /* the next rotation picks it up */ } finally { again(); }
      }, () => {});
    }
    return response;
  },
  writable: false,
  configurable: false,
});
globalThis.__codeboxProbeGuard = true;
