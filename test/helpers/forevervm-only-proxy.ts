import { createServer, request } from 'node:http';

/** The routes of the ForeverVM protocol itself, without any of Perennial's extensions. */
const FOREVERVM_ROUTES = /^\/v1\/(whoami|machine\/new|machine\/list|machine\/[^/]+\/exec(\/\d+\/(result|stream-result))?)$/;
const REPL_ROUTE = /^\/v1\/machine\/[^/]+\/repl$/;

/**
 * A stand-in for hosted ForeverVM: a proxy in front of a local server that forwards the
 * protocol's routes and its WebSocket REPL, and answers "not found" to everything of
 * Perennial's, as the hosted service does; or, with `refused`, answers "not found" to the paths it
 * names (a server of an older Perennial, which lacks the newest extensions).
 */
export async function foreverVMOnlyProxy(
  targetUrl: string,
  refused = (path: string) => !FOREVERVM_ROUTES.test(path),
): Promise<{ url: string; close(): void; refusals: string[]; forwarded: string[] }> {
  const target = new URL(targetUrl);
  /** The paths answered "not found", in order. */
  const refusals: string[] = [];
  /** The paths passed on, in order. */
  const forwarded: string[] = [];
  const proxy = createServer((req, res) => {
    const path = new URL(req.url ?? '/', target).pathname;
    if (refused(path)) {
      refusals.push(path);
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'NotFound', id: null }));
      return;
    }
    forwarded.push(path);
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  proxy.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    if (!REPL_ROUTE.test(new URL(req.url ?? '/', target).pathname)) {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: target.host } });
    upstream.on('upgrade', (answer, upstreamSocket, upstreamHead) => {
      const headers = [];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) headers.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      socket.write(`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}\r\n${headers.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length) socket.write(upstreamHead);
      if (head.length) upstreamSocket.write(head);
      upstreamSocket.on('error', () => socket.destroy());
      upstreamSocket.pipe(socket).pipe(upstreamSocket);
    });
    upstream.on('response', (answer) => {
      socket.end(`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}\r\nconnection: close\r\n\r\n`);
    });
    upstream.on('error', () => socket.destroy());
    upstream.end();
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, close: () => proxy.close(), refusals, forwarded };
}
