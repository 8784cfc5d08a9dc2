/** Perennial's version, reported by the CLI, the server's status and server.json. */
export const VERSION = '0.3.0';
