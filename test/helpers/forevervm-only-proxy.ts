import { createServer, request } from 'node:http';

/** The routes of the ForeverVM protocol itself, without any of Perennial's extensions. */
const FOREVERVM_ROUTES = /^\/v1\/(whoami|machine\/new|machine\/list|machine\/[^/]+\/exec(\/\d+\/(result|stream-result))?)$/;

/**
 * A stand-in for hosted ForeverVM: a proxy in front of a local server that forwards the
 * protocol's routes and answers "not found" to everything of Perennial's, as the hosted service
 * does.
 */
export async function foreverVMOnlyProxy(targetUrl: string): Promise<{ url: string; close(): void }> {
  const target = new URL(targetUrl);
  const proxy = createServer((req, res) => {
    if (!FOREVERVM_ROUTES.test(new URL(req.url ?? '/', target).pathname)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'NotFound', id: null }));
      return;
    }
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, close: () => proxy.close() };
}
