// Loaded with `node --import` so it runs in the main thread and in every Playground worker thread
// (workers inherit execArgv), before any PHP instance exists. PHP's file system calls reach the host
// through Emscripten's NODEFS, which calls Node's `fs`; this guard limits what they may do to host
// files (docs/security.md, "What a sandbox may write"):
//  - no setuid, setgid or sticky bit: every mode argument (chmod, fchmod, lchmod, open, mkdir,
//    writeFile) loses its 0o7000 bits, so PHP's chmod($f, 04755) or mkdir($d, 02775) makes a plain
//    file or folder on the host;
//  - a write budget (CODEBOX_WRITE_BUDGET bytes; 0 = none) per PHP worker thread, and so per sandbox
//    (each sandbox runs its PHP in one worker of its own): the bytes by which writes and truncations
//    grow host files are counted (and 4 KiB for each new file, folder or link), and once the next one
//    would pass the budget it fails with EDQUOT
//    ("Disk quota exceeded" in PHP). The main thread is told on a broadcast channel which host file hit
//    the budget, so the sidecar can flag the sandbox that owns it (sidecar.mjs).
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { BroadcastChannel, isMainThread } from 'node:worker_threads';

export const SPECIAL_MODE_BITS = 0o7000;
export const BUDGET_CHANNEL = 'codebox-write-budget';
const ENTRY_BYTES = 4096; // what a new file, folder or link costs the budget, whatever it holds

function plainMode(mode) {
  if (typeof mode === 'number') return mode & ~SPECIAL_MODE_BITS;
  if (typeof mode === 'string' && /^[0-7]+$/.test(mode)) return parseInt(mode, 8) & ~SPECIAL_MODE_BITS;
  return mode;
}

function plainOptions(options) {
  if (options && typeof options === 'object' && !ArrayBuffer.isView(options) && 'mode' in options) {
    return { ...options, mode: plainMode(options.mode) };
  }
  return typeof options === 'object' ? options : plainMode(options);
}

// Replace fs[name] by a function that rewrites argument `index` with `rewrite` first.
function rewriteArgument(target, name, index, rewrite) {
  const original = target[name];
  if (typeof original !== 'function') return;
  target[name] = function guarded(...args) {
    if (args.length > index && typeof args[index] !== 'function') args[index] = rewrite(args[index]);
    return original.apply(this, args);
  };
}

for (const target of [fs, fs.promises]) {
  const sync = target === fs;
  for (const base of ['chmod', 'lchmod', 'fchmod']) {
    rewriteArgument(target, base, 1, plainMode);
    if (sync) rewriteArgument(target, `${base}Sync`, 1, plainMode);
  }
  for (const base of ['open']) {
    rewriteArgument(target, base, 2, plainMode);
    if (sync) rewriteArgument(target, `${base}Sync`, 2, plainMode);
  }
  for (const base of ['mkdir']) {
    rewriteArgument(target, base, 1, plainOptions);
    if (sync) rewriteArgument(target, `${base}Sync`, 1, plainOptions);
  }
  for (const base of ['writeFile', 'appendFile']) {
    rewriteArgument(target, base, 2, (options) => (typeof options === 'string' ? options : plainOptions(options)));
    if (sync) rewriteArgument(target, `${base}Sync`, 2, (options) => (typeof options === 'string' ? options : plainOptions(options)));
  }
}

function parseBudget(raw) {
  const value = Number(raw || 0);
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

function parseRoots(raw) {
  try {
    const roots = JSON.parse(raw || '[]');
    return Array.isArray(roots) ? roots.filter((root) => typeof root === 'string' && root.startsWith('/')) : [];
  } catch {
    return [];
  }
}

const budget = parseBudget(process.env.CODEBOX_WRITE_BUDGET);
// Only the sandbox's host folders count (CODEBOX_WRITE_BUDGET_ROOTS, runtime/sidecar.py): not Playground's
// own temp folder, where it unpacks ~30 MB of ICU data at every boot.
const roots = parseRoots(process.env.CODEBOX_WRITE_BUDGET_ROOTS).map((root) => (root.endsWith('/') ? root : `${root}/`));
// Playground's own folders of a sandbox (/internal with the prepend, php.ini and shared state; /tmp; /home) are
// host folders of their own, added once the sandbox has booted (budgetPlaygroundFiles): host folder/ -> the
// path PHP sees and the sandbox's site folder, which tells the sidecar whose budget it was.
const playgroundRoots = new Map();
const budgeted = (file) => typeof file === 'string' && (roots.some((root) => file.startsWith(root))
  || [...playgroundRoots.keys()].some((root) => file.startsWith(root)));
// The path to name and the host path that identifies the sandbox, for a budgeted host file.
function attributed(file) {
  for (const [root, { vfs, owner }] of playgroundRoots) {
    if (file.startsWith(root)) return { shown: `${vfs}/${file.slice(root.length)}`, owner };
  }
  return { shown: file, owner: file };
}
// Count `growth` bytes against this worker's budget, or throw naming `where` (set in a worker with a budget).
let chargeBudget = null;
if (budget && roots.length && !isMainThread) {
  let written = 0;
  let reported = false;
  const paths = new Map(); // fd -> host path, to name the file that hit the budget
  const sizes = new Map(); // fd -> the file's size as last known through that fd
  const channel = new BroadcastChannel(BUDGET_CHANNEL);
  channel.unref();

  const sizeOf = (stat) => {
    try { return stat().size; } catch { return 0; }
  };
  // Count `growth` bytes against the budget, or fail the call with EDQUOT naming `where`; `owner` is the host
  // path that tells the sidecar which sandbox it was (a file in PHP's memory has none of its own).
  const charge = (growth, where, owner = null) => {
    if (growth <= 0) return;
    if (written + growth > budget) {
      if (!reported) {
        reported = true;
        const named = owner === null ? attributed(String(where || '')) : { shown: String(where || ''), owner };
        process.stderr.write(`codebox write budget of ${budget} bytes exceeded writing ${named.shown}\n`);
        channel.postMessage({ path: named.shown, owner: String(named.owner || ''), budget, written });
      }
      throw Object.assign(new Error(`codebox write budget of ${budget} bytes exceeded (${where})`), { code: 'EDQUOT' });
    }
    written += growth;
  };
  chargeBudget = charge;

  const { openSync, closeSync, writeSync, ftruncateSync, truncateSync, writeFileSync, appendFileSync, mkdirSync,
    symlinkSync } = fs;
  // Each new file, folder or link costs ENTRY_BYTES (a block and an inode on the host), charged before it is
  // made: a flood of empty files or folders would otherwise cost nothing (docs/security.md, attack round three).
  const isNew = (file) => budgeted(file) && !fs.existsSync(file);
  const creates = (flags) => (typeof flags === 'number' ? (flags & fs.constants.O_CREAT) !== 0
    : typeof flags === 'string' && /[wax]/.test(flags));
  fs.mkdirSync = function (dir, ...rest) {
    if (isNew(dir)) charge(ENTRY_BYTES, dir);
    return mkdirSync.call(this, dir, ...rest);
  };
  fs.symlinkSync = function (target, link, ...rest) {
    if (isNew(link)) charge(ENTRY_BYTES, link);
    return symlinkSync.call(this, target, link, ...rest);
  };
  fs.openSync = function (file, ...rest) {
    if (creates(rest[0]) && isNew(file)) charge(ENTRY_BYTES, file);
    const fd = openSync.call(this, file, ...rest);
    sizes.delete(fd);
    if (budgeted(file)) paths.set(fd, file);
    return fd;
  };
  fs.closeSync = function (fd) {
    paths.delete(fd);
    sizes.delete(fd);
    return closeSync.call(this, fd);
  };
  fs.writeSync = function (fd, buffer, ...rest) {
    if (!paths.has(fd)) return writeSync.call(this, fd, buffer, ...rest);
    let length;
    let position = null;
    if (typeof buffer === 'string') {
      length = Buffer.byteLength(buffer, typeof rest[1] === 'string' ? rest[1] : 'utf8');
      position = typeof rest[0] === 'number' ? rest[0] : null;
    } else {
      const [offset, len, pos] = rest;
      length = typeof len === 'number' ? len : buffer.byteLength - (typeof offset === 'number' ? offset : 0);
      position = typeof pos === 'number' || typeof pos === 'bigint' ? Number(pos) : null;
    }
    // Only growth counts: rewriting a page of the site's SQLite database adds nothing to the disk. The
    // size is read once per descriptor and then kept: a stale (larger) size after another descriptor
    // shrank the file only lets the file regrow to bytes already charged; a smaller one over-charges.
    const size = sizes.has(fd) ? sizes.get(fd) : sizeOf(() => fs.fstatSync(fd));
    const end = position === null ? size + length : position + length;
    charge(end - size, paths.get(fd));
    sizes.set(fd, Math.max(size, end));
    return writeSync.call(this, fd, buffer, ...rest);
  };
  fs.ftruncateSync = function (fd, len = 0) {
    if (paths.has(fd)) {
      charge(Number(len) - sizeOf(() => fs.fstatSync(fd)), paths.get(fd));
      sizes.set(fd, Number(len));
    }
    return ftruncateSync.call(this, fd, len);
  };
  fs.truncateSync = function (file, len = 0) {
    if (budgeted(file)) charge(Number(len) - sizeOf(() => fs.statSync(file)), file);
    return truncateSync.call(this, file, len);
  };
  const dataLength = (data) => (typeof data === 'string' ? Buffer.byteLength(data) : (data && data.byteLength) || 0);
  fs.writeFileSync = function (file, data, ...rest) {
    if (budgeted(file)) charge(dataLength(data) - sizeOf(() => fs.statSync(file)) + (isNew(file) ? ENTRY_BYTES : 0), file);
    else if (paths.has(file)) charge(dataLength(data), paths.get(file));
    return writeFileSync.call(this, file, data, ...rest);
  };
  fs.appendFileSync = function (file, data, ...rest) {
    const where = budgeted(file) ? file : paths.get(file);
    if (where) charge(dataLength(data), where);
    return appendFileSync.call(this, file, data, ...rest);
  };
}

// What PHP writes in Playground's own folders counts against the same budget: /internal (the prepend, php.ini,
// the shared state), /tmp and /home are host temp folders of the sandbox, mounted by Playground outside the
// sandbox's folder. probeguard.mjs calls this (through globalThis.__codeboxWriteGuard) before every request of a
// PHP runtime (a rotation makes a new file system), so they join once the sandbox has booted: what Playground
// unpacked there at boot (~30 MB of ICU data) is not counted.
const PLAYGROUND_FOLDERS = ['/internal', '/tmp', '/home'];
function budgetPlaygroundFiles(FS) {
  if (!chargeBudget || !FS) return;
  let owner = '';
  try { owner = String(FS.lookupPath('/wordpress').node.mount.opts.root || ''); } catch { /* no site mounted */ }
  try {
    for (const mount of FS.getMounts(FS.root.mount)) {
      const root = mount.opts && mount.opts.root;
      if (mount.type === FS.filesystems.NODEFS && PLAYGROUND_FOLDERS.includes(mount.mountpoint)
          && typeof root === 'string' && root.startsWith('/') && owner) {
        const key = root.endsWith('/') ? root : `${root}/`;
        if (!playgroundRoots.has(key)) playgroundRoots.set(key, { vfs: mount.mountpoint, owner });
      }
    }
  } catch { /* no mounts to list */ }
}

syncBuiltinESMExports();
globalThis.__codeboxWriteGuard = { budget, budgetPlaygroundFiles };
