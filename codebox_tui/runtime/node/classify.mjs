// Classification of a `codebox exec` command line from just-bash's parsed AST (docs/exec.md,
// "Classification"), before anything runs. Conservative: every simple command anywhere in the
// tree (pipelines, lists, loops, functions, command and process substitutions) is classified, the
// strongest wins, and whatever cannot be known statically counts as the strongest it could be.
import { parse } from 'just-bash';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const RANK = { read_only: 0, sandbox_write: 1, eval: 2 };
export const NEEDS = { read_only: ['read'], sandbox_write: ['read', 'write'], eval: ['read', 'eval'] };
const stronger = (a, b) => (RANK[b] > RANK[a] ? b : a);

const here = path.dirname(fileURLToPath(import.meta.url));
export const WP_READONLY = JSON.parse(fs.readFileSync(path.join(here, 'wp-readonly-commands.json'), 'utf8'));
const WP_READONLY_WORDS = WP_READONLY.commands.map((entry) => entry.split(' '));

// The commands exec registers (docs/exec.md, "Utilities"); nothing else can run.
export const READ_COMMANDS = ['cat', 'ls', 'find', 'head', 'tail', 'stat', 'wc', 'du', 'tree', 'diff', 'basename',
  'dirname', 'readlink', 'grep', 'egrep', 'fgrep', 'rg', 'sed', 'awk', 'sort', 'uniq', 'cut', 'tr', 'nl', 'rev',
  'tac', 'xargs', 'strings', 'fold', 'expand', 'unexpand', 'jq', 'base64', 'md5sum', 'sha1sum', 'sha256sum',
  'env', 'printenv', 'date', 'whoami', 'hostname', 'seq', 'expr', 'sleep', 'which', 'echo', 'printf', 'pwd',
  'true', 'false', 'file', 'od', 'column', 'comm', 'join', 'paste', 'help'];
export const WRITE_COMMANDS = ['cp', 'mv', 'rm', 'rmdir', 'mkdir', 'touch', 'tee', 'chmod', 'ln', 'split'];
export const CUSTOM_COMMANDS = ['wp', 'on'];
// Shell built-ins handled by the interpreter itself.
const READ_BUILTINS = ['cd', 'export', 'set', 'unset', 'test', '[', 'local', 'declare', 'typeset', 'readonly',
  'shift', 'read', 'return', 'break', 'continue', 'exit', ':', 'let', 'getopts', 'pushd', 'popd', 'dirs', 'type',
  'hash', 'mapfile', 'readarray', 'shopt', 'trap', 'wait', 'umask'];
// Built-ins that run another command named by their arguments.
const WRAPPERS = ['exec', 'command', 'builtin', 'xargs', 'env', 'nice', 'nohup'];

const WP_LOCKED = ['--url', '--blog', '--network', '--network-wide'];
const WP_REFUSED = ['--path', '--ssh', '--http', '--exec', '--require'];

export class ExecRefused extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

// The literal text of a word, or null when it depends on expansion (variables, substitutions, globs).
export function literal(word) {
  if (!word || !Array.isArray(word.parts)) return null;
  let out = '';
  for (const part of word.parts) {
    if (part.type === 'Literal' || part.type === 'SingleQuoted' || part.type === 'Escaped') out += part.value;
    else if (part.type === 'DoubleQuoted') {
      const inner = literal({ parts: part.parts });
      if (inner === null) return null;
      out += inner;
    } else return null;
  }
  return out;
}

// `wp` argv (after the word `wp`) → {classification, reason}; throws ExecRefused on a locked flag.
export function classifyWp(args) {
  for (const arg of args) {
    if (arg === null) return { classification: 'eval', reason: 'wp with an argument known only at run time' };
    if (arg.startsWith('@')) {
      throw new ExecRefused('wp-site-locked', `wp ${arg}: site aliases are not allowed: exec always runs against this sandbox's own site`, { flag: arg });
    }
    const flag = arg.split('=')[0];
    if (WP_LOCKED.includes(flag)) {
      throw new ExecRefused('wp-site-locked', `wp ${flag} is not allowed: exec always runs against this sandbox's own site`, { flag });
    }
    if (WP_REFUSED.includes(flag)) {
      throw new ExecRefused('wp-flag-refused', `wp ${flag} is not allowed in codebox exec`, { flag });
    }
  }
  const words = args.filter((a) => !a.startsWith('-'));
  if (words[0] === 'eval' || words[0] === 'eval-file') {
    const item = words[0] === 'eval' ? { code: words[1] ?? '' } : { file: words[1] ?? '' };
    return { classification: 'eval', reason: `wp ${words[0]}`, evals: [item] };
  }
  if (words.length === 0) return { classification: 'read_only', reason: 'wp (help)' };
  const match = WP_READONLY_WORDS.find((entry) => entry.every((w, i) => words[i] === w));
  if (match) return { classification: 'read_only', reason: `wp ${match.join(' ')} (read-only allow-list)` };
  return { classification: 'sandbox_write', reason: `wp ${words.slice(0, 2).join(' ')} is not on the read-only allow-list` };
}

const SED_WRITE_SCRIPT = /(^|[;\n{}]|\/[gpiIm0-9]*)\s*[wWe](\s|$)/;

// One simple command: name and argument words (null = not literal).
function classifySimple(name, args, functions) {
  const dynamicArgs = args.some((a) => a === null);
  if (functions.has(name)) return { classification: 'read_only', reason: `function ${name}` };
  if (WRITE_COMMANDS.includes(name)) return { classification: 'sandbox_write', reason: `${name} changes files` };
  switch (name) {
    case 'wp': return classifyWp(args);
    case 'on': return { classification: 'read_only', reason: 'on' };
    case 'eval': {
      if (dynamicArgs) return { classification: 'eval', reason: 'eval of text known only at run time' };
      return classifyScript(args.join(' '), functions);
    }
    case 'source': case '.':
      return { classification: 'eval', reason: `${name} runs a script file` };
    case 'sed': {
      if (dynamicArgs) return { classification: 'sandbox_write', reason: 'sed with arguments known only at run time' };
      for (const arg of args) {
        if (/^-[a-zA-Z]*f/.test(arg) && !arg.startsWith('--') || arg.startsWith('--file')) {
          return { classification: 'sandbox_write', reason: 'sed -f runs a script file that may write' };
        }
        if (/^-[a-zA-Z]*i/.test(arg) && !arg.startsWith('--') || arg.startsWith('--in-place')) {
          return { classification: 'sandbox_write', reason: 'sed -i edits files in place' };
        }
        if (SED_WRITE_SCRIPT.test(arg)) return { classification: 'sandbox_write', reason: 'sed script writes files or runs commands' };
      }
      return { classification: 'read_only', reason: 'sed without -i' };
    }
    case 'awk': {
      if (dynamicArgs) return { classification: 'sandbox_write', reason: 'awk with arguments known only at run time' };
      if (args.some((a) => a === '-f' || a.startsWith('--file') || /[>|]|system|close\s*\(/.test(a))) {
        return { classification: 'sandbox_write', reason: 'awk program may write files or run commands' };
      }
      return { classification: 'read_only', reason: 'awk' };
    }
    case 'sort': {
      if (dynamicArgs) return { classification: 'sandbox_write', reason: 'sort with arguments known only at run time' };
      if (args.some((a) => /^-[a-zA-Z]*o/.test(a) || a.startsWith('--output'))) {
        return { classification: 'sandbox_write', reason: 'sort -o writes a file' };
      }
      return { classification: 'read_only', reason: 'sort' };
    }
    case 'uniq': {
      if (dynamicArgs) return { classification: 'sandbox_write', reason: 'uniq with arguments known only at run time' };
      const operands = args.filter((a) => !a.startsWith('-') || a === '-');
      return operands.length >= 2 ? { classification: 'sandbox_write', reason: 'uniq INPUT OUTPUT writes a file' }
        : { classification: 'read_only', reason: 'uniq' };
    }
    case 'find': {
      if (dynamicArgs) return { classification: 'sandbox_write', reason: 'find with arguments known only at run time' };
      let result = { classification: 'read_only', reason: 'find' };
      for (let i = 0; i < args.length; i++) {
        if (['-delete', '-fprint', '-fprint0', '-fprintf', '-fls'].includes(args[i])) {
          return { classification: 'sandbox_write', reason: `find ${args[i]} changes files` };
        }
        if (['-exec', '-execdir', '-ok', '-okdir'].includes(args[i])) {
          let end = i + 1;
          while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
          const inner = args.slice(i + 1, end);
          if (!inner.length) continue;
          const sub = classifySimple(inner[0], inner.slice(1), functions);
          if (RANK[sub.classification] > RANK[result.classification]) result = { ...sub, reason: `find ${args[i]}: ${sub.reason}` };
          i = end;
        }
      }
      return result;
    }
    default: break;
  }
  if (WRAPPERS.includes(name)) {
    if (dynamicArgs) return { classification: 'eval', reason: `${name} with a command known only at run time` };
    const rest = [...args];
    if (name === 'command' || name === 'builtin') {
      if (rest.some((a) => a === '-v' || a === '-V')) return { classification: 'read_only', reason: `${name} -v` };
      while (rest.length && rest[0].startsWith('-')) rest.shift();
    } else if (name === 'env') {
      while (rest.length && (rest[0].startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0]))) {
        const opt = rest.shift();
        if (opt === '-u' || opt === '--unset' || opt === '-C' || opt === '--chdir') rest.shift();
      }
    } else if (name === 'xargs') {
      while (rest.length && rest[0].startsWith('-')) {
        const opt = rest.shift();
        if (/^-[IndsLaEP]$/.test(opt)) rest.shift();
      }
      if (!rest.length) return { classification: 'read_only', reason: 'xargs (echo)' };
    } else if (name === 'nice') {
      while (rest.length && rest[0].startsWith('-')) {
        const opt = rest.shift();
        if (opt === '-n') rest.shift();
      }
    }
    if (!rest.length) return { classification: 'read_only', reason: name };
    const sub = classifySimple(rest[0], rest.slice(1), functions);
    return { ...sub, reason: `${name}: ${sub.reason}` };
  }
  if (READ_COMMANDS.includes(name) || READ_BUILTINS.includes(name)) return { classification: 'read_only', reason: name };
  return { classification: 'eval', reason: `unknown command ${name}` };
}

const WRITE_REDIRECTS = ['>', '>>', '>|', '&>', '&>>', '<>', '>&'];

function classifyRedirection(node) {
  if (!WRITE_REDIRECTS.includes(node.operator)) return null;
  const target = node.target && node.target.type === 'Word' ? literal(node.target) : null;
  if (node.operator === '>&' && target !== null && /^(\d+|-)$/.test(target)) return null; // fd duplication
  if (target === '/dev/null') return null;
  return { classification: 'sandbox_write', reason: `output redirection ${node.operator} ${target ?? '(expanded at run time)'}` };
}

function collectFunctions(node, names) {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach((child) => collectFunctions(child, names));
  if (node.type === 'FunctionDef' && typeof node.name === 'string') names.add(node.name);
  for (const value of Object.values(node)) if (value && typeof value === 'object') collectFunctions(value, names);
}

function visit(node, functions, results) {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach((child) => visit(child, functions, results));
  if (node.type === 'SimpleCommand' && node.name) {
    const name = literal(node.name);
    if (name === null) {
      results.push({ classification: 'eval', reason: 'a command name known only at run time', command: null });
    } else {
      const args = (node.args || []).map(literal);
      results.push({ ...classifySimple(name, args, functions), command: name });
    }
  } else if (node.type === 'Redirection') {
    const result = classifyRedirection(node);
    if (result) results.push({ ...result, command: null });
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'sourceText') continue;
    if (value && typeof value === 'object') visit(value, functions, results);
  }
}

// Throws ExecRefused('parse-error') on a syntax error.
export function classifyScript(script, inherited = new Set()) {
  let ast;
  try {
    ast = parse(script);
  } catch (err) {
    throw new ExecRefused('parse-error', `the command does not parse: ${err && err.message || err}`);
  }
  const functions = new Set(inherited);
  collectFunctions(ast, functions);
  const results = [];
  visit(ast, functions, results);
  let classification = 'read_only';
  let reason = 'no command changes anything';
  for (const item of results) {
    if (RANK[item.classification] > RANK[classification]) {
      classification = item.classification;
      reason = item.reason;
    }
  }
  return { classification, reason, commands: results.map((r) => r.command).filter(Boolean),
    evals: results.flatMap((r) => r.evals || []) };
}

export function missingCapabilities(classification, capabilities) {
  return NEEDS[classification].filter((cap) => !capabilities.includes(cap));
}

export { stronger };
