import { z } from 'zod';
import type { JupyterMessage } from './messages.ts';

/**
 * The content of each request the kernel answers, as the messaging spec (5.3) gives it: what a
 * front end leaves out takes ipykernel's default, and the rest of the content is kept as sent.
 */
export const ExecuteRequest = z.looseObject({
  code: z.string(),
  silent: z.boolean().default(false),
  /** ipykernel's default: stored unless silent. */
  store_history: z.boolean().optional(),
  user_expressions: z.record(z.string(), z.string()).default({}),
  allow_stdin: z.boolean().default(false),
  stop_on_error: z.boolean().default(true),
});
export type ExecuteRequest = z.infer<typeof ExecuteRequest>;

/** A cursor as Jupyter counts it: code points from the code's start; none is its end. */
const CodeAtCursor = { code: z.string(), cursor_pos: z.number().int().nonnegative().optional() };

export const CompleteRequest = z.looseObject(CodeAtCursor);
export const InspectRequest = z.looseObject({ ...CodeAtCursor, detail_level: z.union([z.literal(0), z.literal(1)]).default(0) });
export const IsCompleteRequest = z.looseObject({ code: z.string() });
/** The last `n` cells, a range of them, or those matching a glob. */
export const HistoryRequest = z.looseObject({
  output: z.boolean().default(false),
  hist_access_type: z.enum(['tail', 'range', 'search']).default('tail'),
  n: z.number().int().nullish(),
  start: z.number().int().nullish(),
  stop: z.number().int().nullish(),
  pattern: z.string().nullish(),
  unique: z.boolean().default(false),
});
export type HistoryRequest = z.infer<typeof HistoryRequest>;
export const CommInfoRequest = z.looseObject({ target_name: z.string().optional() });
export const ShutdownRequest = z.looseObject({ restart: z.boolean().default(false) });

/** A request's content checked against its schema: an error that says what is wrong, which the kernel answers with. */
export function contentOf<Schema extends z.ZodType>(schema: Schema, message: JupyterMessage): z.output<Schema> {
  const parsed = schema.safeParse(message.content);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'content'}: ${issue.message}`).join('; ');
  throw new RequestError(`${message.header.msg_type}: ${problems}`);
}

export class RequestError extends Error {
  override readonly name = 'RequestError';
}
