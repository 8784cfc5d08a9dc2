import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { CodedError } from '../platform/coded-error.ts';

const Port = z.number().int().min(1).max(65535);

/** The connection file a front end starts a kernel with: where each channel listens, and the key messages are signed with. */
export const ConnectionInfo = z.looseObject({
  transport: z.literal('tcp', { error: 'only the tcp transport is supported (ipc is not: it does not exist on Windows)' }),
  ip: z.string().min(1),
  shell_port: Port,
  iopub_port: Port,
  stdin_port: Port,
  control_port: Port,
  hb_port: Port,
  key: z.string().default(''),
  signature_scheme: z
    .string()
    .regex(/^hmac-(sha256|sha1|sha512|md5)$/, 'the signature scheme is hmac- with sha256, sha1, sha512 or md5')
    .default('hmac-sha256'),
  kernel_name: z.string().optional(),
});
export type ConnectionInfo = z.infer<typeof ConnectionInfo>;

export class BadConnectionFileError extends CodedError {
  static override readonly errorCode = 'BadConnectionFile';
}

export async function readConnectionFile(path: string): Promise<ConnectionInfo> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BadConnectionFileError(`Cannot read the connection file ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BadConnectionFileError(`The connection file ${path} is not JSON`);
  }
  const parsed = ConnectionInfo.safeParse(json);
  if (!parsed.success) throw new BadConnectionFileError(`The connection file ${path} is not one a kernel can use: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
