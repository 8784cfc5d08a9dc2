/** Perennial's version, reported by the CLI, the server's status and server.json. */
export const VERSION = '0.2.2';
