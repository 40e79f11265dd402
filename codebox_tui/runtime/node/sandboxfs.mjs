// The file system `codebox exec` commands see (docs/exec.md, "File system"): an adapter from
// just-bash's IFileSystem to the booted Playground's own PHP file API, so a command sees exactly
// what PHP sees (the site, its mounts, Playground's internals) and nothing of the host.
//
// - Paths are normalised lexically against `/` (PHP's root): `..` never climbs above it.
// - Symbolic links are resolved by PHP's virtual file system, inside it (docs/security.md, layer 1);
//   exec never creates links (`ln` fails with ENOTSUP): a link made inside a live mount would be a
//   host symlink that host tools follow later.
// - `.git` is invisible: a path with a `.git` component does not exist and listings leave it out,
//   judged on the path as written and on what it resolves to (every link on the way followed, a
//   dangling last link too), so a link to a `.git` folder hides as `.git` itself does.
// - A read-only instance refuses every change with EROFS: a command classified `read_only` runs on
//   one, so a wrong classification still cannot change anything.

import { AsyncResource } from 'node:async_hooks';

const enc = new TextEncoder();

// The Playground API is trusted host code (a Comlink proxy to the PHP worker): its calls run in the
// async context this adapter was made in, outside just-bash's defence-in-depth scope, which would
// otherwise refuse the proxies and timers Comlink uses.
export function hostApi(pg) {
  const resource = new AsyncResource('codebox-sandbox-fs');
  return new Proxy({}, {
    get: (_target, name) => (...args) => resource.runInAsyncScope(() => pg[name](...args)),
  });
}
const dec = new TextDecoder();

// Output sent to /dev/null is discarded (also on a read-only file system); reading it gives nothing.
const DEV_NULL = '/dev/null';

function fsError(code, message, path) {
  return Object.assign(new Error(`${code}: ${message}, '${path}'`), { code });
}

export function normalize(path) {
  const out = [];
  for (const part of String(path).split('/')) {
    if (!part || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

export function hidden(path) {
  return normalize(path).split('/').includes('.git');
}

function phpString(value) {
  return "'" + String(value).replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
}

// One PHP request answering for several paths at once (what the worker's file API lacks: sizes,
// times, modes, links). `op` is one of the cases below; output is JSON.
const PHP_HELPER = String.raw`
$in = json_decode(%INPUT%, true); $out = [];
// where a path leads: each link on the way (a dangling one too) replaced by its target; null when
// the links loop or cannot be read
$resolve = function ($p) {
  $todo = array_values(array_filter(explode('/', $p), 'strlen')); $done = []; $hops = 0;
  while ($todo) {
    $n = array_shift($todo);
    if ($n === '.') continue;
    if ($n === '..') { array_pop($done); continue; }
    $full = '/' . implode('/', array_merge($done, [$n]));
    if (@is_link($full)) {
      $target = @readlink($full);
      if (++$hops > 40 || !is_string($target) || $target === '') return null;
      if ($target[0] === '/') $done = [];
      $todo = array_merge(array_values(array_filter(explode('/', $target), 'strlen')), $todo);
      continue;
    }
    $done[] = $n;
  }
  return '/' . implode('/', $done);
};
$concealed = function ($p) use ($resolve) {
  $real = $resolve($p);
  return $real === null || in_array('.git', explode('/', $real), true);
};
$info = function ($p, $link) {
  $s = $link ? @lstat($p) : @stat($p);
  if ($s === false) return null;
  $type = $s['mode'] & 0170000;
  return ['size' => $s['size'], 'mtime' => $s['mtime'], 'mode' => $s['mode'] & 07777,
          'dir' => $type === 0040000, 'file' => $type === 0100000, 'link' => $type === 0120000];
};
foreach ($in['paths'] as $p) {
  switch ($in['op']) {
    case 'stat': $out[] = $info($p, false); break;
    case 'lstat': $out[] = $info($p, true); break;
    case 'readlink': $out[] = @readlink($p); break;
    case 'realpath': $out[] = @realpath($p); break;
    case 'concealed': $out[] = $concealed($p); break;
    case 'chmod': $out[] = @chmod($p, $in['mode']); break;
    case 'touch': $out[] = @touch($p, $in['mtime']); break;
    case 'readdir':
      $names = @scandir($p);
      if ($names === false) { $out[] = null; break; }
      $entries = [];
      foreach ($names as $n) {
        if ($n === '.' || $n === '..' || $n === '.git') continue;
        $full = rtrim($p, '/') . '/' . $n;
        $st = @lstat($full);
        $type = $st === false ? 0 : $st['mode'] & 0170000;
        if ($type === 0120000) { // a link: its target's type, as ls shows it; none to a .git folder
          if ($concealed($full)) continue;
          $entries[] = [$n, is_dir($full), is_file($full), true];
        } else {
          $entries[] = [$n, $type === 0040000, $type === 0100000, false];
        }
      }
      $out[] = $entries; break;
    case 'walk':
      // every regular file below $p (no .git, links not followed, excluded folders pruned), with its
      // size; with grep, only the files whose content may match (a superset: on rg re-checks)
      $files = []; $stack = [$p]; $limit = $in['limit']; $exclude = array_flip($in['exclude'] ?? []);
      $grep = $in['grep'] ?? null;
      while ($stack && count($files) < $limit) {
        $d = array_pop($stack);
        $names = @scandir($d);
        if ($names === false) continue;
        foreach ($names as $n) {
          if ($n === '.' || $n === '..' || $n === '.git') continue;
          $full = rtrim($d, '/') . '/' . $n;
          if (isset($exclude[$full])) continue;
          $st = @lstat($full); // one call for type and size (links are not followed)
          if ($st === false) continue;
          $type = $st['mode'] & 0170000;
          if ($type === 0040000) { $stack[] = $full; continue; }
          if ($type !== 0100000) continue;
          if ($grep !== null) {
            $text = @file_get_contents($full);
            if ($text === false) continue;
            if ($grep['fixed'] !== null) {
              $hit = $grep['icase'] ? stripos($text, $grep['fixed']) : strpos($text, $grep['fixed']);
              if ($hit === false) continue;
            } elseif (@preg_match($grep['regex'], $text) === 0) continue; // an error keeps the file
          }
          $files[] = [$full, $st['size']];
        }
      }
      $out[] = $files; break;
  }
}
echo json_encode($out, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
`;

export async function phpHelper(pg, op, paths, extra = {}) {
  const input = JSON.stringify({ op, paths, ...extra });
  const res = await pg.run({ code: '<?php ' + PHP_HELPER.replace('%INPUT%', phpString(input)) });
  try {
    return JSON.parse(res.text);
  } catch {
    throw new Error(`sandbox file helper failed: ${String(res.text || res.errors || '').slice(0, 200)}`);
  }
}

function toStat(info) {
  return {
    isFile: !!info.file, isDirectory: !!info.dir, isSymbolicLink: !!info.link,
    mode: info.mode, size: info.size, mtime: new Date(info.mtime * 1000),
  };
}

export class SandboxFs {
  constructor(pg, { readOnly = true } = {}) {
    this.pg = pg;
    this.readOnly = readOnly;
    this.changed = false;
  }

  // True when `path`, as written or where its links lead, is inside a `.git` folder (or its links loop).
  async concealed(path) {
    const p = normalize(path);
    if (hidden(p)) return true;
    if (p === DEV_NULL) return false;
    const [answer] = await phpHelper(this.pg, 'concealed', [p]);
    return answer !== false;
  }

  async visible(path, op) {
    const p = normalize(path);
    if (await this.concealed(p)) throw fsError('ENOENT', `no such file or directory, ${op}`, path);
    return p;
  }

  async writable(path, op) {
    const p = await this.visible(path, op);
    if (this.readOnly) throw fsError('EROFS', `read-only file system (this command was classified read-only), ${op}`, path);
    this.changed = true;
    return p;
  }

  async readFileBuffer(path) {
    const p = await this.visible(path, 'open');
    if (p === DEV_NULL) return new Uint8Array(0);
    if (!(await this.pg.isFile(p))) {
      if (await this.pg.isDir(p)) throw fsError('EISDIR', 'illegal operation on a directory, read', path);
      throw fsError('ENOENT', 'no such file or directory, open', path);
    }
    return new Uint8Array(await this.pg.readFileAsBuffer(p));
  }

  async readFile(path, options) {
    const encoding = typeof options === 'string' ? options : options && options.encoding;
    const bytes = await this.readFileBuffer(path);
    if (encoding === 'binary' || encoding === 'latin1') return Buffer.from(bytes).toString('latin1');
    return dec.decode(bytes);
  }

  async readFileBytes(path) {
    return Buffer.from(await this.readFileBuffer(path)).toString('latin1');
  }

  async writeFile(path, content, options) {
    if (normalize(path) === DEV_NULL) return;
    const p = await this.writable(path, 'open');
    if (await this.pg.isDir(p)) throw fsError('EISDIR', 'illegal operation on a directory, open', path);
    const encoding = typeof options === 'string' ? options : options && options.encoding;
    let data = content;
    if (typeof content === 'string' && (encoding === 'binary' || encoding === 'latin1')) {
      data = new Uint8Array(Buffer.from(content, 'latin1'));
    } else if (typeof content === 'string') {
      data = enc.encode(content);
    } else {
      data = new Uint8Array(content);
    }
    await this.pg.writeFile(p, data);
  }

  async appendFile(path, content, options) {
    if (normalize(path) === DEV_NULL) return;
    const p = await this.writable(path, 'open');
    let before = new Uint8Array(0);
    if (await this.pg.isFile(p)) before = new Uint8Array(await this.pg.readFileAsBuffer(p));
    const encoding = typeof options === 'string' ? options : options && options.encoding;
    const add = typeof content === 'string'
      ? (encoding === 'binary' || encoding === 'latin1' ? new Uint8Array(Buffer.from(content, 'latin1')) : enc.encode(content))
      : new Uint8Array(content);
    const joined = new Uint8Array(before.length + add.length);
    joined.set(before, 0);
    joined.set(add, before.length);
    await this.pg.writeFile(p, joined);
  }

  async exists(path) {
    const p = normalize(path);
    if (p === DEV_NULL) return true;
    if (await this.concealed(p)) return false;
    return this.pg.fileExists(p);
  }

  async stat(path) {
    const p = await this.visible(path, 'stat');
    const [info] = await phpHelper(this.pg, 'stat', [p]);
    if (!info) throw fsError('ENOENT', 'no such file or directory, stat', path);
    return toStat(info);
  }

  async lstat(path) {
    const p = await this.visible(path, 'lstat');
    const [info] = await phpHelper(this.pg, 'lstat', [p]);
    if (!info) throw fsError('ENOENT', 'no such file or directory, lstat', path);
    return toStat(info);
  }

  async mkdir(path, options = {}) {
    const p = await this.writable(path, 'mkdir');
    if (await this.pg.fileExists(p)) {
      if (options.recursive && (await this.pg.isDir(p))) return;
      throw fsError('EEXIST', 'file already exists, mkdir', path);
    }
    if (options.recursive) return this.pg.mkdirTree(p);
    const parent = p.substring(0, p.lastIndexOf('/')) || '/';
    if (!(await this.pg.isDir(parent))) throw fsError('ENOENT', 'no such file or directory, mkdir', path);
    return this.pg.mkdir(p);
  }

  async readdir(path) {
    return (await this.readdirWithFileTypes(path)).map((e) => e.name);
  }

  async readdirWithFileTypes(path) {
    const p = await this.visible(path, 'scandir');
    const [entries] = await phpHelper(this.pg, 'readdir', [p]);
    if (!entries) {
      if (await this.pg.isFile(p)) throw fsError('ENOTDIR', 'not a directory, scandir', path);
      throw fsError('ENOENT', 'no such file or directory, scandir', path);
    }
    return entries.map(([name, isDirectory, isFile, isSymbolicLink]) => ({ name, isDirectory, isFile, isSymbolicLink }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async rm(path, options = {}) {
    const p = await this.writable(path, 'rm');
    if (p === '/') throw fsError('EPERM', 'operation not permitted, rm', path);
    if (!(await this.pg.fileExists(p))) {
      if (options.force) return;
      throw fsError('ENOENT', 'no such file or directory, rm', path);
    }
    if (await this.pg.isDir(p)) {
      if (!options.recursive && (await this.readdir(p)).length) throw fsError('ENOTEMPTY', 'directory not empty, rm', path);
      return this.pg.rmdir(p, { recursive: !!options.recursive });
    }
    return this.pg.unlink(p);
  }

  async cp(src, dest, options = {}) {
    const from = await this.visible(src, 'cp');
    const to = await this.writable(dest, 'cp');
    if (await this.pg.isDir(from)) {
      if (!options.recursive) throw fsError('EISDIR', 'illegal operation on a directory, cp', src);
      await this.pg.mkdirTree(to);
      for (const entry of await this.readdirWithFileTypes(from)) {
        if (entry.isSymbolicLink) continue;
        await this.cp(`${from}/${entry.name}`, `${to}/${entry.name}`, options);
      }
      return;
    }
    await this.pg.writeFile(to, await this.readFileBuffer(from));
  }

  async mv(src, dest) {
    const from = await this.writable(src, 'rename');
    const to = await this.writable(dest, 'rename');
    if (!(await this.pg.fileExists(from))) throw fsError('ENOENT', 'no such file or directory, rename', src);
    return this.pg.mv(from, to);
  }

  resolvePath(base, path) {
    return normalize(String(path).startsWith('/') ? path : `${base}/${path}`);
  }

  getAllPaths() {
    return [];
  }

  async chmod(path, mode) {
    const p = await this.writable(path, 'chmod');
    const [ok] = await phpHelper(this.pg, 'chmod', [p], { mode });
    if (!ok) throw fsError('ENOENT', 'no such file or directory, chmod', path);
  }

  async symlink(_target, linkPath) {
    await this.writable(linkPath, 'symlink');
    throw fsError('ENOTSUP', 'links cannot be made from codebox exec', linkPath);
  }

  async link(_existing, newPath) {
    await this.writable(newPath, 'link');
    throw fsError('ENOTSUP', 'links cannot be made from codebox exec', newPath);
  }

  async readlink(path) {
    const p = await this.visible(path, 'readlink');
    const [target] = await phpHelper(this.pg, 'readlink', [p]);
    if (typeof target !== 'string') throw fsError('EINVAL', 'invalid argument, readlink', path);
    return target;
  }

  async realpath(path) {
    const p = await this.visible(path, 'realpath');
    const [real] = await phpHelper(this.pg, 'realpath', [p]);
    if (typeof real !== 'string' || hidden(real)) throw fsError('ENOENT', 'no such file or directory, realpath', path);
    return real;
  }

  async utimes(path, _atime, mtime) {
    const p = await this.writable(path, 'utime');
    await phpHelper(this.pg, 'touch', [p], { mtime: Math.floor(new Date(mtime).getTime() / 1000) });
  }

  // Every regular file below `path` with its size, in one PHP request (used by `on rg`).
  async walk(path, limit, { exclude = [], grep = null } = {}) {
    const p = await this.visible(path, 'scandir');
    const [files] = await phpHelper(this.pg, 'walk', [p], { limit, exclude, grep });
    return (files || []).filter(([file]) => !hidden(file));
  }
}
