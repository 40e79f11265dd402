// `codebox exec` on the native backend (docs/exec.md, "On the native backend"). This script runs inside the
// sandbox's own bubblewrap wall (runtime/native_shell.py builds it: the sandbox's binds, an empty network
// namespace, only the sandbox's writable folders writable, nothing else of the host), reads one request as
// JSON on stdin and prints one exec result as JSON on stdout.
//
// It is the same shell as on Playground: exec.mjs's runExec (classification, capabilities, limits, `wp`,
// `on`, the eval policy) over sandboxfs.mjs's SandboxFs. Only the small file and PHP API that SandboxFs and
// `wp` call is different: here it is the real file system the wall shows, and PHP is the host's binary run
// as a child process inside the same wall, with the settings the host chose (`php.runArgs` for the
// sandbox's own code, `php.probeArgs` for Codebox's file helper).
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import { runExec } from './exec.mjs';

// Bytes of one PHP child's output kept (the file helper's answers for large trees are the biggest).
const CHILD_OUTPUT_LIMIT = 64 * 1024 * 1024;

function collect(stream) {
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    stream.on('data', (chunk) => {
      if (size < CHILD_OUTPUT_LIMIT) chunks.push(chunk.subarray(0, CHILD_OUTPUT_LIMIT - size));
      size += chunk.length;
    });
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', () => resolve(Buffer.concat(chunks)));
  });
}

function phpProcess(php, args, { env = {}, stdin = '' } = {}) {
  const child = spawn(php.binary, args, {
    cwd: php.cwd, env: { ...php.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const exitCode = new Promise((resolve) => {
    child.on('error', () => resolve(127));
    child.on('close', (code, signal) => resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)));
  });
  child.stdin.on('error', () => {});
  child.stdin.end(stdin);
  return { exitCode, stdout, stderr };
}

// Where a path really leads (every link resolved; for a path that does not exist yet, its folder resolved),
// when that is inside one of `roots` (PHP's open_basedir: the site, /tmp, Codebox's own folder, mount
// targets); null otherwise, or for a dangling link. So the shell sees what PHP sees, as on Playground, and
// never follows a link the sandbox planted out of the site (the wall around this process is the other line).
async function within(roots, path) {
  let real;
  try {
    real = await fsp.realpath(path);
  } catch {
    try {
      if ((await fsp.lstat(path)).isSymbolicLink()) return null; // dangling: it would be created where it points
    } catch { /* does not exist */ }
    const slash = path.lastIndexOf('/');
    try {
      real = `${await fsp.realpath(path.slice(0, slash) || '/')}/${path.slice(slash + 1)}`.replace(/^\/\//, '/');
    } catch {
      return null;
    }
  }
  return roots.some((root) => real === root || real.startsWith(root.endsWith('/') ? root : `${root}/`)) ? real : null;
}

function refused(path) {
  return Object.assign(new Error(`ENOENT: no such file or directory (outside the sandbox's folders), '${path}'`),
    { code: 'ENOENT' });
}

// The API exec.mjs and sandboxfs.mjs call (Playground's names), over the wall's real file system, limited to
// the folders PHP may open.
function nativeApi(php) {
  const roots = php.roots;
  const real = async (path) => {
    const found = await within(roots, path);
    if (found === null) throw refused(path);
    return found;
  };
  // the entry itself (a link stays a link): its folder resolved inside the roots, then its own name
  const entry = async (path) => {
    const slash = path.lastIndexOf('/');
    const name = path.slice(slash + 1);
    if (!name || name === '.' || name === '..') throw refused(path);
    return `${(await real(path.slice(0, slash) || '/')).replace(/\/$/, '')}/${name}`;
  };
  // the folders that lead to a root (`/workspace` above `/workspace/plugin`): seen as folders, nothing more
  // (the file helper lists them: its open_basedir has them, native_shell.folders_above)
  const above = new Set(php.above || []);
  const kind = async (path) => {
    if (above.has(path)) return { isDirectory: () => true, isFile: () => false };
    const found = await within(roots, path);
    if (found === null) return null;
    try {
      return await fsp.stat(found);
    } catch {
      return null;
    }
  };
  return {
    async run({ code, env, codeboxEval }) {
      // Codebox's file helper runs with the probe settings (no compiled-script cache the sandbox could have
      // written); `wp eval` is the sandbox's own code, with its cache, as every native command
      const args = codeboxEval ? php.runArgs : php.probeArgs;
      const proc = phpProcess(php, args, { env: codeboxEval ? env : {}, stdin: code });
      const [exitCode, out, err] = await Promise.all([proc.exitCode, proc.stdout, proc.stderr]);
      return { text: out.toString('utf8'), errors: err.toString('utf8'), exitCode };
    },
    async cli(argv, { env } = {}) {
      if (argv[0] !== 'php') throw new Error(`the native shell runs PHP command lines only, not ${argv[0]}`);
      const proc = phpProcess(php, [...php.runArgs, ...argv.slice(1)], { env });
      return { exitCode: proc.exitCode, stdoutText: proc.stdout.then((b) => b.toString('utf8')),
        stderrText: proc.stderr.then((b) => b.toString('utf8')) };
    },
    fileExists: async (path) => (await kind(path)) !== null,
    isDir: async (path) => !!(await kind(path))?.isDirectory(),
    isFile: async (path) => !!(await kind(path))?.isFile(),
    readFileAsBuffer: async (path) => new Uint8Array(await fsp.readFile(await real(path))),
    writeFile: async (path, data) => fsp.writeFile(await real(path), data),
    mkdir: async (path) => fsp.mkdir(await entry(path)),
    mkdirTree: async (path) => {
      const parts = path.split('/').filter(Boolean);
      for (let i = 1; i <= parts.length; i++) {
        const step = `/${parts.slice(0, i).join('/')}`;
        if (!(await kind(step))) await fsp.mkdir(await entry(step));
      }
    },
    mv: async (from, to) => fsp.rename(await entry(from), await entry(to)),
    rmdir: async (path, { recursive = false } = {}) => {
      const found = await entry(path);
      return recursive ? fsp.rm(found, { recursive: true }) : fsp.rmdir(found);
    },
    unlink: async (path) => fsp.unlink(await entry(path)),
  };
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  let result;
  try {
    // `wp eval` code may open the site and /tmp only (narrowed from the command line's open_basedir)
    result = await runExec(nativeApi(request.php), request, { evalBasedir: '/wordpress/:/tmp/' });
  } catch (err) {
    result = { exitCode: 1, stdout: '', stderr: `${err && err.message || err}\n`,
      error: { code: 'exec-failed', message: String(err && err.message || err), details: {} } };
  }
  process.stdout.write(JSON.stringify(result), () => process.exit(0));
}

main();
