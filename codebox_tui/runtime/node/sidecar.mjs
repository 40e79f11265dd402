// Codebox Playground sidecar: one Node process hosting many WordPress Playground sandboxes.
// Protocol: JSON lines. Requests on stdin {id, op, params}; replies on stdout {id, ok, result|error};
// unsolicited progress lines {event, sandbox, data}. Exits when stdin closes.
import { runCLI } from '@wp-playground/cli';
import { jspi } from 'wasm-feature-detect';
import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';

// Defence in depth (docs/security.md, "Layers"): refuse to run without the spawn guard preloaded.
if (!globalThis.__codeboxSpawnRefused) {
  process.stderr.write('nospawn.mjs was not preloaded (node --import ./nospawn.mjs); refusing to start\n');
  process.exit(3);
}
// Codebox's own measurements run as probes that no sandbox-planted file can join (probeguard.mjs).
if (!globalThis.__codeboxProbeGuard || !globalThis.__codeboxProbeToken) {
  process.stderr.write('probeguard.mjs was not preloaded (node --import ./probeguard.mjs); refusing to start\n');
  process.exit(3);
}

// What a sandbox may write (setuid bits, the write budget) is held by writeguard.mjs.
if (!globalThis.__codeboxWriteGuard) {
  process.stderr.write('writeguard.mjs was not preloaded (node --import ./writeguard.mjs); refusing to start\n');
  process.exit(3);
}

const sandboxes = new Map();

// A PHP worker that hit the write budget names the host file (writeguard.mjs); the sandbox whose host
// folders hold it is flagged, and `writeBudget` reports it to Python.
const budgetChannel = new BroadcastChannel('codebox-write-budget');
budgetChannel.unref();
budgetChannel.onmessage = ({ data }) => {
  const file = String(data && data.path || '');
  const owner = String(data && data.owner || file);  // a file in PHP's memory names its site's host folder
  for (const [name, entry] of sandboxes) {
    if (entry.hostPaths.some((root) => owner === root || owner.startsWith(root.endsWith(path.sep) ? root : root + path.sep))) {
      entry.writeBudgetExceeded = { path: file, budget: data.budget };
      process.stderr.write(`sandbox ${name} exceeded its write budget (${file})\n`);
    }
  }
};
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const progress = (sandbox, phase, data = {}) => out({ event: 'progress', sandbox, data: { phase, ...data } });

// Playground logs to console; keep stdout for the protocol only.
console.log = (...args) => process.stderr.write(args.join(' ') + '\n');
console.info = console.log;
console.warn = console.log;
console.debug = () => {};

// Shared machine code for php-wasm. V8 compiles wasm functions lazily and caches compiled modules
// process-wide by their bytes, but only while some isolate still holds the module: each sandbox's
// PHP runs in its own worker thread, so without this the code compiled (and tiered up) by earlier
// sandboxes dies with their workers and every new sandbox's first WordPress load recompiles it.
// Holding one module per PHP version here keeps that code for the next sandbox (~0.5 s of its
// first request). Costs ~100 ms once per PHP version; a failure only loses the optimisation.
const phpModules = new Map();
const nodeModules = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules');
function keepPhpModule(php) {
  if (!php || phpModules.has(php)) return phpModules.get(php);
  const pending = (async () => {
    const variantDir = path.join(nodeModules, '@php-wasm', `node-${php.replace('.', '-')}`,
      (await jspi()) ? 'jspi' : 'asyncify');
    const builds = fs.readdirSync(variantDir).filter((name) => /^\d+_\d+_\d+$/.test(name));
    const modules = [];
    for (const build of builds) {
      const file = path.join(variantDir, build, `php_${php.replace('.', '_')}.wasm`);
      if (fs.existsSync(file)) modules.push(await WebAssembly.compile(fs.readFileSync(file)));
    }
    return modules;
  })().catch((err) => { process.stderr.write(`php module not kept: ${err && err.message || err}\n`); return []; });
  phpModules.set(php, pending);
  return pending;
}
// The default PHP version (codebox_tui/versions.py, passed as --default-php=X.Y), compiled while the
// first sandbox's site is prepared.
const defaultPhp = (process.argv.find((arg) => arg.startsWith('--default-php=')) || '').slice('--default-php='.length);
if (/^\d+\.\d+$/.test(defaultPhp)) keepPhpModule(defaultPhp);

// The preview server: Playground calls `server.listen(port, callback)`, which listens on every
// interface. Each boot runs in an async context that names its bind address (127.0.0.1 unless the
// caller asked for another with --preview-bind); a listen without a host gets that address.
const listenContext = new AsyncLocalStorage();
const originalListen = http.Server.prototype.listen;
http.Server.prototype.listen = function listen(...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') {
    args.splice(1, 0, listenContext.getStore()?.host || '127.0.0.1');
  }
  return originalListen.apply(this, args);
};

// Host folders mounted twice in one sandbox (one inside the other) would give PHP two views of the
// same host directory: a swap made through one view is not seen by the other's cached nodes,
// which would then resolve paths through a host symlink. Refused (docs/security.md).
function checkMountOverlap(hostPaths) {
  const real = hostPaths.map((p) => {
    try { return fs.realpathSync(p); } catch { return path.resolve(p); }
  });
  for (let i = 0; i < real.length; i++) {
    for (let j = 0; j < real.length; j++) {
      if (i !== j && (real[i] === real[j] || real[j].startsWith(real[i] + path.sep))) {
        throw Object.assign(new Error(`host folders ${hostPaths[i]} and ${hostPaths[j]} overlap; mount each host folder once`),
          { code: 'overlapping-mounts' });
      }
    }
  }
}

// Refusal check after every boot: a PHP child must not start (nospawn.mjs); fail closed otherwise.
const SPAWN_PROBE = "<?php $p = @proc_open(['php', '-r', 'echo 1;'], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);"
  + " $out = $p ? stream_get_contents($pipes[1]) : ''; $rc = $p ? proc_close($p) : 127;"
  + " echo ($out === '' && $rc === 127) ? 'refused' : 'spawned';";

// Check after every boot that a probe runs its own code with the sandbox's prepend set aside and that the
// next ordinary request has the sandbox's prepend again; fail closed otherwise (docs/security.md).
const PROBE_CHECK = "<?php echo json_encode([__FILE__, file_get_contents(ini_get('auto_prepend_file')),"
  + " isset($codebox_control_files['/internal/shared/php.ini'])]);";

function probeRequest(code) {
  return { code: '', codeboxProbe: { token: globalThis.__codeboxProbeToken, code } };
}

async function checkProbeGuard(pg) {
  const fail = (err) => String(err && err.message || err);
  const probe = await pg.run(probeRequest(PROBE_CHECK)).then((res) => res.text, fail);
  const after = await pg.run({ code: PROBE_CHECK }).then((res) => res.text, fail);
  let seen = null;
  let next = null;
  try { seen = JSON.parse(probe); next = JSON.parse(after); } catch { /* reported below */ }
  const ok = Array.isArray(seen) && Array.isArray(next)
    && /^\/internal\/codebox-probe-[0-9a-f]{32}\.php$/.test(seen[0]) && String(seen[1]).includes('codebox probe')
    && seen[2] === true && next[0] === '/internal/eval.php' && !String(next[1]).includes('codebox probe');
  if (!ok) {
    throw Object.assign(new Error(`the probe guard did not engage (probe ${probe.slice(0, 200)}; next ${after.slice(0, 200)})`),
      { code: 'probe-guard-inactive' });
  }
}

function need(sandbox) {
  const entry = sandboxes.get(sandbox);
  if (!entry) throw Object.assign(new Error(`no such sandbox: ${sandbox}`), { code: 'no-sandbox' });
  return entry;
}

// Per-command output cap (README "Secrets and limits", docs/security-secrets.md): each stream keeps
// its head and a short tail; what was cut is reported in `truncated` so Python records it.
const TRUNCATION_TAIL = 64 * 1024;
function capOutput(text, max) {
  const limit = Number(max) > 0 ? Number(max) : 0;
  if (!limit || typeof text !== 'string' || text.length * 3 <= limit) {  // UTF-8 needs <= 3 bytes a unit
    return { text, truncated: null };
  }
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return { text, truncated: null };
  const tail = Math.min(TRUNCATION_TAIL, Math.floor(limit / 4));
  const head = limit - tail;
  const omitted = bytes.length - head - tail;
  const marker = `\n[codebox: output truncated: ${omitted} of ${bytes.length} bytes omitted]\n`;
  return {
    text: bytes.subarray(0, head).toString('utf8') + marker + bytes.subarray(bytes.length - tail).toString('utf8'),
    truncated: { totalBytes: bytes.length, keptBytes: head + tail, omittedBytes: omitted, limitBytes: limit },
  };
}
function withCappedOutput(result, streams, max) {
  const truncated = {};
  for (const [key, name] of Object.entries(streams)) {
    const capped = capOutput(result[key], max);
    result[key] = capped.text;
    if (capped.truncated) truncated[name] = capped.truncated;
  }
  if (Object.keys(truncated).length) result.truncated = truncated;
  return result;
}

// A stream's text, each piece also sent as it arrives ({event: 'output', id, text}: the request's own, for a
// live display such as PHPUnit's progress) until `max` characters have been sent; the whole text is returned.
async function streamedText(stream, id, max) {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  const limit = Number.isSafeInteger(max) && max > 0 ? max : 1 << 20;
  let text = '';
  let sent = 0;
  for (;;) {
    const { value, done } = await reader.read();
    const piece = done ? decoder.decode() : decoder.decode(value, { stream: true });
    if (piece) {
      text += piece;
      if (sent < limit) {
        out({ event: 'output', id, text: piece.slice(0, limit - sent) });
        sent += piece.length;
      }
    }
    if (done) return text;
  }
}

let execLoaded = null;
function execModule() {
  if (!execLoaded) {
    execLoaded = import('./exec.mjs').catch((err) => {
      execLoaded = null;
      throw Object.assign(new Error(`codebox exec is not installed in the Node bridge (${err && err.message || err}); `
        + 'run `make setup` (npm ci in codebox_tui/runtime/node)'), { code: 'exec-unavailable' });
    });
  }
  return execLoaded;
}

const ops = {
  ping: async () => ({ pid: process.pid, sandboxes: [...sandboxes.keys()], rss: process.memoryUsage().rss }),

  boot: async (p) => {
    const t0 = Date.now();
    progress(p.sandbox, 'starting-php');
    await keepPhpModule(p.php);
    const hostPaths = [...(p.mountsBeforeInstall || []), ...(p.mounts || [])].map((m) => m.hostPath);
    checkMountOverlap(hostPaths);
    const exit = process.exit;
    process.exit = (code) => { throw Object.assign(new Error(`Playground CLI exited with code ${code}`), { code: 'cli-exit' }); };
    let cli;
    try {
      cli = await listenContext.run({ host: p.bind || '127.0.0.1' }, () => runCLI({
        command: 'server',
        port: p.port || 0,
        // a tunnel's public URL: WordPress's WP_HOME/WP_SITEURL name it (the server still listens locally)
        ...(p.siteUrl ? { 'site-url': p.siteUrl } : {}),
        php: p.php,
        wp: p.wp,
        'mount-before-install': p.mountsBeforeInstall || [],
        mount: p.mounts || [],
        wordpressInstallMode: 'do-not-attempt-installing',
        'define-bool': p.defineBool || {},
        define: p.define || {},
        verbosity: 'quiet',
        quiet: true,
        workers: 1,
        skipBrowser: true,
      }));
    } finally {
      process.exit = exit;
    }
    progress(p.sandbox, 'server-started', { ms: Date.now() - t0, url: cli.serverUrl });
    const entry = { cli, pg: cli.playground, hostPaths };
    sandboxes.set(p.sandbox, entry);
    const probe = await entry.pg.run({ code: SPAWN_PROBE }).catch((err) => ({ text: String(err && err.message || err) }));
    if (probe.text !== 'refused') {
      sandboxes.delete(p.sandbox);
      await cli[Symbol.asyncDispose]().catch(() => {});
      throw Object.assign(new Error(`sandboxed PHP could start a process (${probe.text.slice(0, 200)})`), { code: 'spawn-not-refused' });
    }
    try {
      await checkProbeGuard(entry.pg);
    } catch (err) {
      sandboxes.delete(p.sandbox);
      await cli[Symbol.asyncDispose]().catch(() => {});
      throw err;
    }
    if (p.warm) {
      progress(p.sandbox, 'warming-php');
      await entry.pg.run({ code: "<?php require '/wordpress/wp-load.php';" });
    }
    progress(p.sandbox, 'ready', { ms: Date.now() - t0 });
    return { serverUrl: cli.serverUrl, bootMs: Date.now() - t0 };
  },

  run: async (p) => {
    const { pg } = need(p.sandbox);
    let res;
    try {
      res = await pg.run({ code: p.code, env: p.env || undefined });
    } catch (err) {
      // php-wasm puts the whole output in the message of a failed run: capped like the output
      if (err && typeof err.message === 'string') err.message = capOutput(err.message, p.maxOutputBytes).text;
      throw err;
    }
    return withCappedOutput({ text: res.text, exitCode: res.exitCode ?? 0, errors: res.errors || '' },
      { text: 'stdout', errors: 'stderr' }, p.maxOutputBytes);
  },

  // Codebox's own measurement (site state, snapshots, checkpoints): like `run`, but with Codebox's php.ini
  // instead of the sandbox's, so no planted prepend, preload or compiled script runs (probeguard.mjs).
  probe: async (p) => {
    const { pg } = need(p.sandbox);
    let res;
    try {
      res = await pg.run(probeRequest(p.code));
    } catch (err) {
      if (err && typeof err.message === 'string') err.message = capOutput(err.message, p.maxOutputBytes).text;
      throw err;
    }
    return withCappedOutput({ text: res.text, exitCode: res.exitCode ?? 0, errors: res.errors || '' },
      { text: 'stdout', errors: 'stderr' }, p.maxOutputBytes);
  },

  request: async (p) => {
    const { pg } = need(p.sandbox);
    const res = await pg.request({ url: p.url, method: p.method || 'GET', headers: p.headers || {}, body: p.body });
    return { status: res.httpStatusCode, headers: res.headers, text: res.text };
  },

  // A file the sandbox wrote, bounded: the reply never carries more than maxBytes (the host reads every byte
  // of it, so a hostile site cannot make it read an unbounded document).
  readFile: async (p) => {
    const { pg } = need(p.sandbox);
    const limit = Number(p.maxBytes);
    if (!Number.isSafeInteger(limit) || limit <= 0) throw Object.assign(new Error('readFile needs maxBytes'), { code: 'bad-request' });
    const data = await pg.readFileAsBuffer(p.path);
    if (data.length > limit) {
      throw Object.assign(new Error(`${p.path} is ${data.length} bytes, over the ${limit}-byte limit`), { code: 'file-too-large' });
    }
    return { base64: Buffer.from(data).toString('base64') };
  },

  writeFile: async (p) => {
    const { pg } = need(p.sandbox);
    const dir = p.path.substring(0, p.path.lastIndexOf('/')) || '/';
    await pg.mkdirTree(dir);
    // Copy into a fresh Uint8Array: small Buffers share a pooled ArrayBuffer that would be sent whole.
    await pg.writeFile(p.path, p.base64 !== undefined ? new Uint8Array(Buffer.from(p.base64, 'base64')) : p.text);
    return {};
  },

  cli: async (p, id) => {
    const { pg } = need(p.sandbox);
    const proc = await pg.cli(p.argv, { env: p.env || {} });
    const stderrText = p.streamStderr ? streamedText(proc.stderr, id, p.maxOutputBytes) : proc.stderrText;
    const [exitCode, stdout, stderr] = await Promise.all([proc.exitCode, proc.stdoutText, stderrText]);
    return withCappedOutput({ exitCode, stdout, stderr }, { stdout: 'stdout', stderr: 'stderr' }, p.maxOutputBytes);
  },

  // `codebox exec` (docs/exec.md): classify, check capabilities, run in just-bash over PHP's files.
  // Loaded on first use: runs that never exec do not pay for the interpreter and the PHP parser.
  exec: async (p) => (await execModule()).runExec(need(p.sandbox).pg, p),
  classify: async (p) => (await execModule()).classifyOnly(p),

  // Whether the sandbox's PHP hit the write budget (writeguard.mjs): {exceeded, path, budget}.
  writeBudget: async (p) => {
    const hit = need(p.sandbox).writeBudgetExceeded;
    return hit ? { exceeded: true, ...hit } : { exceeded: false };
  },

  dispose: async (p) => {
    const entry = sandboxes.get(p.sandbox);
    if (!entry) return { disposed: false };
    sandboxes.delete(p.sandbox);
    await entry.cli[Symbol.asyncDispose]();
    return { disposed: true };
  },

  // Attach host directories to a live sandbox (used when a pre-booted spare is handed to a run).
  mount: async (p) => {
    const entry = need(p.sandbox);
    const hostPaths = [...entry.hostPaths, ...(p.mounts || []).map((m) => m.hostPath)];
    checkMountOverlap(hostPaths);
    await entry.pg.mountAfterWordPressInstall(p.mounts || []);
    entry.hostPaths = hostPaths;
    return { mounted: (p.mounts || []).length };
  },

  shutdown: async () => {
    for (const [name, entry] of sandboxes) {
      sandboxes.delete(name);
      try { await entry.cli[Symbol.asyncDispose](); } catch { /* best effort */ }
    }
    setTimeout(() => process.exit(0), 10);
    return {};
  },
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return out({ id: null, ok: false, error: { code: 'bad-json', message: 'request is not JSON' } }); }
  const handler = ops[msg.op];
  if (!handler) return out({ id: msg.id, ok: false, error: { code: 'unknown-op', message: `unknown op ${msg.op}` } });
  try {
    out({ id: msg.id, ok: true, result: await handler(msg.params || {}, msg.id) });
  } catch (err) {
    out({ id: msg.id, ok: false, error: { code: err.code || 'sidecar-error', message: String(err && err.message || err) } });
  }
});
rl.on('close', async () => {
  // The parent is gone (or done): never outlive it. Disposing a Playground can hang (a worker stuck in
  // a request), so a watchdog ends the process if the orderly shutdown has not within a few seconds.
  setTimeout(() => process.exit(0), 3000).unref();
  await ops.shutdown();
  process.exit(0);
});
process.on('unhandledRejection', (err) => process.stderr.write(`unhandled rejection: ${err && err.stack || err}\n`));
out({ event: 'hello', data: { pid: process.pid, node: process.version } });
