/** A file's base64 content as text when it is UTF-8, else null (it goes out as base64). */
export function utf8Text(base64: string): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(base64, 'base64'));
  } catch {
    return null;
  }
}
