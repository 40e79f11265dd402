// Loaded with `node --import` so it runs in the main thread and in every Playground worker thread
// (workers inherit execArgv), before any PHP instance exists. Sandboxed PHP may not start
// processes (docs/security.md, "Layers"): Playground would run a `php` child as a second PHP
// runtime over the same host folders, and a child that swaps a directory the parent has cached
// for a host symlink lets the parent resolve paths on the host. Nothing Codebox runs needs a child
// (wp-cli goes through `pg.cli`), so every spawn handler any PHP instance is given, now or after a
// runtime rotation (the handler lives on the PHP object and survives it), is replaced by one that
// refuses: exec()/shell_exec()/system()/passthru()/popen()/proc_open()/backticks see a process that
// printed an error and exited with 127.
import { PHP } from '@php-wasm/universal';
import { createSpawnHandler } from '@php-wasm/util';

export const REFUSED_EXIT_CODE = 127;

function refusingHandler() {
  return createSpawnHandler(async (argv, processApi) => {
    // Let PHP attach to the streams before they close (see createSpawnHandler's contract).
    await new Promise((resolve) => setTimeout(resolve, 1));
    const name = Array.isArray(argv) && argv.length ? String(argv[0]) : 'process';
    processApi.stderr(`codebox: starting processes is disabled in this sandbox (${name})\n`);
    await new Promise((resolve) => setTimeout(resolve, 1));
    processApi.exit(REFUSED_EXIT_CODE);
  });
}

const originalSetSpawnHandler = PHP.prototype.setSpawnHandler;
Object.defineProperty(PHP.prototype, 'setSpawnHandler', {
  value: async function setSpawnHandler() {
    return originalSetSpawnHandler.call(this, refusingHandler());
  },
  writable: false,
  configurable: false,
});
// Per-binary handlers (e.g. for `sendmail`) take precedence over the general one: allow none.
Object.defineProperty(PHP.prototype, 'setCommandSpawnHandler', {
  value: function setCommandSpawnHandler() {},
  writable: false,
  configurable: false,
});
globalThis.__codeboxSpawnRefused = true;
