/**
 * The errors that mean a connection was never made (refused, no route, no such host, the connect
 * timed out): whatever was to be sent over it reached nobody, so it may be sent again elsewhere.
 * Any other failure may come after the other side had the request.
 */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether `error`, or an error it was caused by, says the connection was never made. */
export function neverConnected(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown; errors?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && NEVER_CONNECTED.has(e.code)) return true;
    // Node tries each address of a host name: an AggregateError holds a failure per address.
    if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((inner) => neverConnected(inner))) return true;
  }
  return false;
}
