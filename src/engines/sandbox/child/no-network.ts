/**
 * A machine made without network has none, whatever confines the process around it. Bubblewrap
 * gives it an empty network namespace where it works; elsewhere (macOS, Windows, Linux without
 * user namespaces) this is the fence: Node's permission model covers the network only from Node
 * 25 on, a second fence there (a machine made with network is given `--allow-net`, isolation.ts).
 * Python reaches the network only through the JS bridge to Node's builtins, and every way there
 * meets one of a few doors, closed here on the builtin modules themselves, so that
 * `require`, `process.getBuiltinModule` and `import()` all find them closed:
 * - a stream socket's `connect` (net, tls, http, https, http2, fetch, WebSocket, the `ws` package
 *   that Pyodide's socket emulation uses, Unix sockets) and a server's `listen`;
 * - a datagram socket's `bind`, `connect` and `send`;
 * - every DNS query (a name looked up is a message out).
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/** The error every closed door throws: Node's own code for what the permission model denies. */
function denied(what: string): never {
  throw Object.assign(new Error(`${what}: this machine has no network access (create it with network on to allow it)`), { code: 'ERR_ACCESS_DENIED' });
}

function close(target: object, names: string[], what: string): void {
  for (const name of names) {
    Object.defineProperty(target, name, {
      value: function closed() {
        return denied(`${what}.${name}`);
      },
      writable: false,
      configurable: false,
    });
  }
}

/** A DNS module's or resolver's query functions: every function but the settings of the resolver. */
function queries(target: object): string[] {
  const settings = new Set(['constructor', 'getServers', 'setServers', 'setLocalAddress', 'cancel', 'getDefaultResultOrder', 'setDefaultResultOrder']);
  return Object.getOwnPropertyNames(target).filter(
    (name) => !settings.has(name) && typeof (target as Record<string, unknown>)[name] === 'function' && /^(lookup|resolve|reverse)/.test(name),
  );
}

export function closeNetwork(): void {
  close(net.Socket.prototype, ['connect'], 'net.Socket');
  close(net.Server.prototype, ['listen'], 'net.Server');
  close(dgram.Socket.prototype, ['bind', 'connect', 'send'], 'dgram.Socket');
  for (const module of [dns, dns.promises]) {
    close(module, queries(module), 'dns');
    close(module.Resolver.prototype, queries(module.Resolver.prototype), 'dns.Resolver');
  }
  // `import('node:dns')` reads the module's exports as they are now.
  syncBuiltinESMExports();
}
