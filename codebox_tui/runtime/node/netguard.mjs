// Loaded with `node --import` so it runs in the main thread and in every Playground worker
// thread (workers inherit execArgv). PHP's outbound sockets in php-wasm go through a local
// WebSocket proxy that calls net.createConnection(port, ip, listener); this guard applies the
// sandbox network policy there, and to DNS look-ups, before any byte leaves the process.
//   CODEBOX_NETWORK_POLICY = "deny" | "allow" | '{"allowHosts":["example.test", ...]}'
import net from 'node:net';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';

const raw = process.env.CODEBOX_NETWORK_POLICY || 'deny';
let mode = 'deny';
let allowHosts = new Set();
if (raw === 'allow') mode = 'allow';
else if (raw.startsWith('{')) {
  try {
    const parsed = JSON.parse(raw);
    mode = 'hosts';
    allowHosts = new Set((parsed.allowHosts || []).map((h) => String(h).toLowerCase()));
  } catch {
    mode = 'deny';
  }
}
const resolvedFrom = new Map(); // ip -> host name that was looked up

function refusedSocket(host, port) {
  const socket = new net.Socket();
  process.nextTick(() => {
    const err = new Error(`codebox network policy denies connection to ${host}:${port}`);
    err.code = 'ECONNREFUSED';
    socket.destroy(err);
  });
  return socket;
}

if (mode !== 'allow') {
  const originalCreateConnection = net.createConnection;
  const guarded = function (...args) {
    // The php-wasm outbound proxy uses the positional form (port, host, listener).
    if (typeof args[0] === 'number' && typeof args[1] === 'string') {
      const [port, ip] = args;
      const host = (resolvedFrom.get(ip) || ip).toLowerCase();
      if (mode === 'deny' || !allowHosts.has(host)) {
        return refusedSocket(host, port);
      }
    }
    return originalCreateConnection.apply(this, args);
  };
  net.createConnection = guarded;
  net.connect = guarded;
  const originalLookup = dns.lookup;
  dns.lookup = function (hostname, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    const host = String(hostname).toLowerCase();
    const local = host === 'localhost' || host === '127.0.0.1' || host === '::1';
    // An IP literal needs no DNS (e.g. the preview server's --preview-bind address); connections to
    // it are still checked above.
    if (!local && !net.isIP(host) && (mode === 'deny' || !allowHosts.has(host))) {
      const err = new Error(`codebox network policy denies DNS lookup of ${hostname}`);
      err.code = 'ENOTFOUND';
      process.nextTick(() => cb(err));
      return {};
    }
    return originalLookup.call(this, hostname, options, (err, address, family) => {
      if (!err && typeof address === 'string') resolvedFrom.set(address, host);
      cb(err, address, family);
    });
  };
  syncBuiltinESMExports();
}
