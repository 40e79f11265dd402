// `codebox exec`: a command line run by just-bash (a bash interpreter with no processes behind it)
// over the sandbox's own file system, classified and checked against the caller's capabilities
// before anything runs (docs/exec.md). Imported by sidecar.mjs, which adds the `exec` op.
import { Bash, defineCommand } from 'just-bash';
import { SandboxFs, hostApi, normalize } from './sandboxfs.mjs';
import { classifyScript, classifyWp, missingCapabilities, ExecRefused, RANK, NEEDS, WP_READONLY,
  READ_COMMANDS, WRITE_COMMANDS } from './classify.mjs';
import { checkPhp, DATA_ROOT } from './evalpolicy.mjs';
import { openBasedirGuard } from './evalwall.mjs';

export const WP_CLI_PHAR = '/codebox-tools/wp-cli/wp-cli.phar';
// The capability names and the limits' values are Python's (codebox_tui/contracts/exec.py: CAPABILITIES and
// ExecLimits, one definition for both backends): every request carries `capabilityNames` and all four limits.
const LIMIT_NAMES = ['timeoutMs', 'maxOutputBytes', 'maxLoopIterations', 'maxCallDepth'];

function limitsOf(requested) {
  const limits = {};
  for (const key of LIMIT_NAMES) {
    const value = Number((requested || {})[key]);
    if (!Number.isFinite(value) || value <= 0) {
      throw new ExecRefused('invalid-limits', `limits.${key} must be a positive number (the caller's ExecLimits)`);
    }
    limits[key] = Math.floor(value);
  }
  return limits;
}

// Which limit a failed run hit, from just-bash's message (it names the resource).
function limitHit(stderr, timedOut) {
  if (timedOut) return 'timeoutMs';
  const text = String(stderr || '').toLowerCase();
  if (/output size|output limit|maxoutputsize/.test(text)) return 'maxOutputBytes';
  if (/loop iteration|iteration limit|maxloopiterations|too many iterations/.test(text)) return 'maxLoopIterations';
  if (/call depth|recursion|maxcalldepth/.test(text)) return 'maxCallDepth';
  if (/execution time|timed out|deadline|maxexecutiontimems/.test(text)) return 'timeoutMs';
  return null;
}

const ok = (stdout = '', stderr = '', exitCode = 0) => ({ stdout, stderr, exitCode });
const utf8 = (bytes) => new TextDecoder().decode(bytes);

function phpFailure(err) {
  const message = String(err && err.message || err);
  const code = Number((message.match(/exit code (\d+)/) || [])[1] || 255);
  let stdout = '';
  let stderr = message;
  if (message.includes('=== Stdout ===')) {
    const rest = message.split('=== Stdout ===')[1];
    [stdout, stderr] = rest.split('=== Stderr ===');
    stdout = (stdout || '').replace(/^\s+|\s+$/g, '');
    stderr = (stderr || '').replace(/^\s+|\s+$/g, '');
  }
  return ok(stdout, stderr, code || 255);
}

// ---------------------------------------------------------------------------------------------
// `wp`: WP-CLI in this sandbox, the site locked; eval and eval-file run after the static policy.
function wpCommand(state) {
  return defineCommand('wp', async (args, ctx) => {
    let needed;
    try {
      needed = classifyWp(args).classification;
    } catch (err) {
      if (err instanceof ExecRefused) return ok('', `wp: ${err.message}\n`, 2);
      throw err;
    }
    // Run-time guard behind the static classification: never more than was classified and granted.
    const missing = missingCapabilities(needed, state.capabilities);
    if (RANK[needed] > RANK[state.classification] || missing.length) {
      return ok('', `wp: refused: this call needs ${NEEDS[needed].join('+')} but the command was classified `
        + `${state.classification} with capabilities ${state.capabilities.join(',') || 'none'}\n`, 126);
    }
    const words = args.filter((a) => !a.startsWith('-'));
    if (words[0] === 'eval' || words[0] === 'eval-file') return wpEval(state, ctx, args, words);
    if (!(await state.pg.fileExists(WP_CLI_PHAR))) {
      // the same advice as WP_CLI_HINT in runtime/commands.py
      return ok('', 'wp: WP-CLI is not available in this sandbox: pass --wp-cli-phar PATH or set CODEBOX_WP_CLI_PHAR '
        + 'to a wp-cli.phar, or put WP-CLI on PATH as `wp` (the phar itself or a link to it); get the phar from '
        + 'https://wp-cli.org/#installing (wp eval and wp eval-file work without it)\n', 127);
    }
    const proc = await state.pg.cli(['php', WP_CLI_PHAR, `--path=${DATA_ROOT}`, '--no-color', ...args],
      { env: state.env });
    const [exitCode, stdout, stderr] = await Promise.all([proc.exitCode, proc.stdoutText, proc.stderrText]);
    state.ranPhp = true;
    const out = stdout.startsWith('#!/usr/bin/env php') ? stdout.split('\n').slice(1).join('\n') : stdout;
    return ok(out, stderr, exitCode);
  });
}

async function wpEval(state, ctx, args, words) {
  const isFile = words[0] === 'eval-file';
  if (words.length < 2) return ok('', `wp ${words[0]}: missing ${isFile ? 'the file' : 'the code'}\n`, 1);
  let code = words[1];
  if (isFile) {
    const file = ctx.fs.resolvePath(ctx.cwd, words[1]);
    try {
      code = await ctx.fs.readFile(file);
    } catch (err) {
      return ok('', `wp eval-file: ${err.message}\n`, 1);
    }
  }
  const problem = checkPhp(code, { file: isFile });
  if (problem) {
    state.policyViolation = problem;
    const where = problem.location ? ` (line ${problem.location.line})` : '';
    return ok('', `wp ${words[0]}: refused by the eval policy: ${problem.message}${where}\n`, 126);
  }
  // Relative paths resolve against the data root, as the policy resolved them; once WordPress has loaded,
  // open_basedir is narrowed to the site before the eval'd code runs, and the whole request runs under
  // the eval wall (evalwall.mjs; docs/exec.md, "Eval policy").
  const loader = `chdir('${DATA_ROOT}');` + (args.includes('--skip-wordpress') ? ''
    : ` define('WP_USE_THEMES', false); require_once '${DATA_ROOT}/wp-load.php';`) + ` ${openBasedirGuard(state.evalBasedir)}`;
  const source = isFile ? `<?php ${loader} ?>${code}` : `<?php ${loader}\n${code}`;
  state.ranPhp = true;
  try {
    const res = await state.pg.run({ code: source, env: state.env, codeboxEval: true });
    return ok(res.text, res.errors || '', res.exitCode ?? 0);
  } catch (err) {
    return phpFailure(err);
  }
}

// ---------------------------------------------------------------------------------------------
// `on`: WordPress-aware commands.
const ON_HELP = {
  help: 'on help [COMMAND]\n  List the on commands, or print one command\'s usage.\n',
  rg: 'on rg [OPTIONS] PATTERN\n'
    + '  Search files by WordPress scope (default --content). .git is never searched.\n'
    + '  Scopes: --core (WordPress core files), --plugins, --themes, --content (plugins + themes),\n'
    + '          --all (core + content), --scope NAME (core|plugins|themes|content|all or a plugin/theme slug),\n'
    + '          --path PATH (a folder or file in the sandbox; repeatable)\n'
    + '  Options: -F fixed string, -i ignore case, -w whole words, -n line numbers, -H/-I with/without file\n'
    + '           names, -l files with matches, -c counts, -m/--max-count N matches per file,\n'
    + '           -g/--glob GLOB (repeatable, !GLOB excludes), --files (list the files searched),\n'
    + '           --hidden (include dot files), --no-ignore (accepted; nothing is ignored but .git)\n',
};

function globToRegExp(glob) {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') { out += '.*'; i++; if (glob[i + 1] === '/') i++; } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '{') out += '(?:';
    else if (c === '}') out += ')';
    else if (c === ',' ) out += '|';
    else out += c.replace(/[.+^$()|[\]\\]/g, '\\$&');
  }
  return new RegExp(glob.includes('/') ? `^${out}$` : `(^|/)${out}$`);
}

async function scopeRoots(fs, scopes) {
  const roots = [];
  const content = `${DATA_ROOT}/wp-content`;
  for (const scope of scopes) {
    if (scope.kind === 'path') roots.push({ path: scope.path });
    else if (scope.name === 'core') roots.push({ path: DATA_ROOT, exclude: [content] });
    else if (scope.name === 'plugins') roots.push({ path: `${content}/plugins` }, { path: `${content}/mu-plugins` });
    else if (scope.name === 'themes') roots.push({ path: `${content}/themes` });
    else if (scope.name === 'content') {
      roots.push({ path: `${content}/plugins` }, { path: `${content}/mu-plugins` }, { path: `${content}/themes` });
    } else if (scope.name === 'all') {
      roots.push({ path: DATA_ROOT, exclude: [content] }, { path: `${content}/plugins` },
        { path: `${content}/mu-plugins` }, { path: `${content}/themes` });
    } else {
      const slug = scope.name.replace(/^(plugin|theme):/, '');
      const candidates = scope.name.startsWith('theme:') ? [`${content}/themes/${slug}`]
        : scope.name.startsWith('plugin:') ? [`${content}/plugins/${slug}`]
          : [`${content}/plugins/${slug}`, `${content}/themes/${slug}`, `${content}/plugins/${slug}.php`];
      let found = false;
      for (const candidate of candidates) {
        if (!slug.includes('/') && slug !== '..' && (await fs.exists(candidate))) {
          roots.push({ path: candidate });
          found = true;
          break;
        }
      }
      if (!found) throw new Error(`no scope, plugin or theme named ${scope.name}`);
    }
  }
  return roots;
}

async function onRg(state, args, ctx) {
  const o = { fixed: false, ignoreCase: false, word: false, lineNumbers: false, withName: null, filesWithMatches: false,
    count: false, maxCount: Infinity, globs: [], files: false, hidden: false };
  const scopes = [];
  let pattern = null;
  const need = (i, flag) => {
    if (i >= args.length) throw new Error(`${flag} needs a value`);
    return args[i];
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') { if (pattern === null && i + 1 < args.length) pattern = args[++i]; continue; }
    if (a === '-F' || a === '--fixed-strings') o.fixed = true;
    else if (a === '-i' || a === '--ignore-case') o.ignoreCase = true;
    else if (a === '-w' || a === '--word-regexp') o.word = true;
    else if (a === '-n' || a === '--line-number') o.lineNumbers = true;
    else if (a === '-H' || a === '--with-filename') o.withName = true;
    else if (a === '-I' || a === '--no-filename') o.withName = false;
    else if (a === '-l' || a === '--files-with-matches') o.filesWithMatches = true;
    else if (a === '-c' || a === '--count') o.count = true;
    else if (a === '--files') o.files = true;
    else if (a === '--hidden') o.hidden = true;
    else if (a === '--no-ignore') { /* nothing is ignored but .git */ }
    else if (a === '-m' || a === '--max-count') o.maxCount = Number(need(++i, a));
    else if (a.startsWith('--max-count=')) o.maxCount = Number(a.slice(12));
    else if (a === '-g' || a === '--glob') o.globs.push(need(++i, a));
    else if (a.startsWith('--glob=')) o.globs.push(a.slice(7));
    else if (['--core', '--plugins', '--themes', '--content', '--all'].includes(a)) scopes.push({ name: a.slice(2) });
    else if (a === '--scope') scopes.push({ name: need(++i, a) });
    else if (a.startsWith('--scope=')) scopes.push({ name: a.slice(8) });
    else if (a === '--path') scopes.push({ kind: 'path', path: ctx.fs.resolvePath(ctx.cwd, need(++i, a)) });
    else if (a.startsWith('--path=')) scopes.push({ kind: 'path', path: ctx.fs.resolvePath(ctx.cwd, a.slice(7)) });
    else if (a.startsWith('-') && a.length > 1) throw new Error(`unknown option ${a} (see on help rg)`);
    else if (pattern === null) pattern = a;
    else throw new Error(`unexpected argument ${a}: give folders with --path`);
  }
  if (!Number.isFinite(o.maxCount) && o.maxCount !== Infinity || o.maxCount < 0) throw new Error('--max-count needs a number');
  if (pattern === null && !o.files) throw new Error('missing PATTERN (see on help rg)');
  if (!scopes.length) scopes.push({ name: 'content' });
  let regex = null;
  if (pattern !== null) {
    let source = o.fixed ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern;
    if (o.word) source = `\\b(?:${source})\\b`;
    try {
      regex = new RegExp(source, o.ignoreCase ? 'i' : '');
    } catch (err) {
      throw new Error(`invalid pattern: ${err.message}`);
    }
  }
  // PHP narrows the files to those that may match (fixed strings exactly; a pattern through PCRE,
  // whose errors keep the file); JavaScript decides on each line (docs/exec.md, "on rg").
  let prefilter = null;
  if (pattern !== null && !o.files) {
    const fixedOk = o.fixed && !o.word && (!o.ignoreCase || /^[\x00-\x7f]*$/.test(pattern));
    prefilter = fixedOk ? { fixed: pattern, icase: o.ignoreCase, regex: null }
      : { fixed: null, icase: o.ignoreCase, regex: `~${regex.source.replace(/~/g, '\\~')}~${o.ignoreCase ? 'i' : ''}` };
  }
  const include = o.globs.filter((g) => !g.startsWith('!')).map(globToRegExp);
  const exclude = o.globs.filter((g) => g.startsWith('!')).map((g) => globToRegExp(g.slice(1)));
  const files = [];
  const seen = new Set();
  for (const root of await scopeRoots(state.fs, scopes)) {
    if (!(await state.fs.exists(root.path))) continue; // also false for .git and links to it
    if (!(await state.pg.isDir(root.path))) {
      if (!seen.has(root.path)) { seen.add(root.path); files.push(root.path); }
      continue;
    }
    const base = normalize(root.path);
    for (const [file] of await state.fs.walk(base, 200000, { exclude: root.exclude || [], grep: prefilter })) {
      const rel = file.slice(base.length + 1);
      if (!o.hidden && rel.split('/').some((part) => part.startsWith('.'))) continue;
      if (include.length && !include.some((re) => re.test(rel))) continue;
      if (exclude.some((re) => re.test(rel))) continue;
      if (!seen.has(file)) { seen.add(file); files.push(file); }
    }
  }
  files.sort();
  if (o.files) return ok(files.map((f) => f + '\n').join(''), '', files.length ? 0 : 1);
  const withName = o.withName ?? true;
  const out = [];
  let matched = false;
  const batch = 32;
  for (let start = 0; start < files.length; start += batch) {
    const slice = files.slice(start, start + batch);
    const contents = await Promise.all(slice.map((f) => state.pg.readFileAsBuffer(f).catch(() => null)));
    for (let k = 0; k < slice.length; k++) {
      const bytes = contents[k];
      if (!bytes) continue;
      const head = bytes.subarray(0, 8192);
      if (head.includes(0)) continue; // binary
      const text = utf8(bytes);
      if (!regex.test(text)) continue;
      let count = 0;
      const lines = text.split('\n');
      for (let n = 0; n < lines.length && count < o.maxCount; n++) {
        if (!regex.test(lines[n])) continue;
        count++;
        if (!o.filesWithMatches && !o.count) {
          out.push(`${withName ? slice[k] + ':' : ''}${o.lineNumbers ? (n + 1) + ':' : ''}${lines[n]}\n`);
        }
      }
      if (!count) continue;
      matched = true;
      if (o.filesWithMatches) out.push(slice[k] + '\n');
      else if (o.count) out.push(`${withName ? slice[k] + ':' : ''}${count}\n`);
    }
  }
  return ok(out.join(''), '', matched ? 0 : 1);
}

function onCommand(state) {
  return defineCommand('on', async (args, ctx) => {
    const [sub, ...rest] = args;
    if (!sub || sub === 'help' || sub === '--help' || sub === '-h') {
      const topic = rest[0];
      if (topic) {
        if (!ON_HELP[topic]) return ok('', `on help: no on command named ${topic}\n`, 1);
        return ok(ON_HELP[topic]);
      }
      return ok('on commands:\n  on help [COMMAND]   this list, or one command\'s usage\n'
        + '  on rg PATTERN       search by WordPress scope (--core --plugins --themes --content --all ...)\n'
        + 'Also: wp ...          WP-CLI bound to this sandbox (wp eval needs the eval capability)\n');
    }
    if (sub === 'rg') {
      try {
        return await onRg(state, rest, ctx);
      } catch (err) {
        return ok('', `on rg: ${err.message}\n`, 2);
      }
    }
    return ok('', `on: unknown command ${sub} (see on help)\n`, 127);
  });
}

// ---------------------------------------------------------------------------------------------
export function parseCapabilities(list, names) {
  if (!Array.isArray(names) || !names.length) {
    throw new ExecRefused('invalid-capability', 'the request names no capabilityNames (the caller\'s CAPABILITIES)');
  }
  const caps = new Set();
  for (const raw of list || []) {
    const cap = String(raw).replace(/^execute_/, '');
    if (!names.includes(cap)) {
      throw new ExecRefused('invalid-capability', `unknown capability ${raw}; expected ${names.join(', ')}`);
    }
    caps.add(cap);
  }
  return names.filter((c) => caps.has(c));
}

// The `exec` op. Always resolves to a structured result; refusals carry `error`.
// `options.evalBasedir`: the folders `wp eval` code may open, when they are not Playground's (evalwall.mjs).
export async function runExec(rawPg, p, options = {}) {
  const pg = hostApi(rawPg);
  const started = Date.now();
  const command = String(p.command || '');
  let capabilities;
  let limits;
  try {
    capabilities = parseCapabilities(p.capabilities && p.capabilities.length ? p.capabilities : ['read'],
      p.capabilityNames);
    limits = limitsOf(p.limits);
  } catch (err) {
    if (!(err instanceof ExecRefused)) throw err;
    return { command, cwd: String(p.cwd || DATA_ROOT), capabilities: [], limits: p.limits || {}, classification: null,
      reason: null, stdout: '', stderr: err.message + '\n', exitCode: 2, limitExceeded: null,
      error: { code: err.code, message: err.message, details: {} }, durationMs: Date.now() - started,
      changedFiles: false };
  }
  const requestedCwd = String(p.cwd || DATA_ROOT);
  const cwd = normalize(requestedCwd.startsWith('/') ? requestedCwd : `${DATA_ROOT}/${requestedCwd}`);
  const base = { command, cwd, capabilities, limits, classification: null, reason: null, stdout: '', stderr: '',
    exitCode: null, limitExceeded: null, error: null, durationMs: 0, changedFiles: false };
  const refuse = (code, message, details = {}, exitCode = 126) => ({ ...base, exitCode, stderr: message + '\n',
    error: { code, message, details }, durationMs: Date.now() - started });
  if (!command.trim()) return refuse('empty-command', 'the command is empty', {}, 2);
  if (await new SandboxFs(pg).concealed(cwd)) return refuse('invalid-cwd', `cwd ${p.cwd}: .git is not accessible`, {}, 2);
  if (!(await pg.isDir(cwd))) return refuse('invalid-cwd', `cwd ${p.cwd} is not a folder in the sandbox`, {}, 2);
  let classified;
  try {
    classified = classifyScript(command);
  } catch (err) {
    if (err instanceof ExecRefused) return refuse(err.code, err.message, err.details, 2);
    throw err;
  }
  base.classification = classified.classification;
  base.reason = classified.reason;
  const missing = missingCapabilities(classified.classification, capabilities);
  if (missing.length) {
    return refuse('capability-denied',
      `denied: this command is classified ${classified.classification} (${classified.reason}) and needs the `
      + `${missing.join(' and ')} capabilit${missing.length > 1 ? 'ies' : 'y'}`,
      { needed: NEEDS[classified.classification], missing });
  }
  // Literal `wp eval` code is checked before anything runs (run-time code is checked by `wp` itself).
  const fs = new SandboxFs(pg, { readOnly: classified.classification === 'read_only' || !capabilities.includes('write') });
  for (const item of classified.evals || []) {
    let code = item.code;
    if (item.file !== undefined) {
      try {
        code = await fs.readFile(fs.resolvePath(cwd, item.file));
      } catch {
        continue; // reported by `wp eval-file` when it runs
      }
    }
    const problem = checkPhp(code, { file: item.file !== undefined });
    if (problem) {
      return refuse('eval-policy', `refused by the eval policy: ${problem.message}`
        + (problem.location ? ` (line ${problem.location.line})` : ''), { location: problem.location });
    }
  }
  const state = { pg, fs, capabilities, classification: classified.classification, env: p.env || {}, ranPhp: false,
    policyViolation: null, evalBasedir: options.evalBasedir };
  const bash = new Bash({
    fs,
    cwd,
    env: { HOME: DATA_ROOT, USER: 'codebox', PATH: '/usr/bin:/bin', ...(p.shellEnv || {}) },
    commands: [...READ_COMMANDS, ...WRITE_COMMANDS].filter((name) => !['help'].includes(name)),
    customCommands: [wpCommand(state), onCommand(state)],
    executionLimits: {
      maxExecutionTimeMs: limits.timeoutMs,
      maxOutputSize: limits.maxOutputBytes,
      maxLoopIterations: limits.maxLoopIterations,
      maxAwkIterations: limits.maxLoopIterations,
      maxSedIterations: limits.maxLoopIterations,
      maxJqIterations: limits.maxLoopIterations,
      maxCallDepth: limits.maxCallDepth,
    },
    processInfo: { pid: 1, ppid: 0, uid: 1000, gid: 1000 },
  });
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; controller.abort(); }, limits.timeoutMs + 1000);
  let result;
  try {
    result = await bash.exec(command, { cwd, signal: controller.signal });
  } catch (err) {
    result = { stdout: '', stderr: `${err && err.message || err}\n`, exitCode: 2 };
  } finally {
    clearTimeout(timer);
  }
  const limitExceeded = result.exitCode !== 0 ? limitHit(result.stderr, timedOut) : null;
  return {
    ...base,
    stdout: result.stdout || '',
    stderr: result.stderr || '',
    exitCode: result.exitCode ?? 0,
    limitExceeded,
    error: state.policyViolation ? { code: 'eval-policy', message: state.policyViolation.message,
      details: { location: state.policyViolation.location } } : null,
    changedFiles: fs.changed,
    ranPhp: state.ranPhp,
    durationMs: Date.now() - started,
  };
}

export function classifyOnly(p) {
  const capabilities = parseCapabilities(p.capabilities && p.capabilities.length ? p.capabilities : ['read'],
    p.capabilityNames);
  const classified = classifyScript(String(p.command || ''));
  return { ...classified, capabilities, needed: NEEDS[classified.classification],
    missing: missingCapabilities(classified.classification, capabilities) };
}

export { WP_READONLY };
