import type { CallToolResult } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { PerennialClient } from '../../shared/perennial-client.ts';
import { MachineName, type NewMachineOptions } from '../../shared/requests.ts';
import type { InputAnswerer } from '../../shared/types.ts';

/** What a tool's handler gets besides its arguments. */
export interface ToolContext {
  /** Where the machines are: the local server's own (in process), or behind a server. */
  client: PerennialClient;
  /** Aborted when the MCP client cancels the call. */
  signal: AbortSignal;
  /** Sends a progress notification when the caller asked for progress; a no-op otherwise. */
  progress(message: string): Promise<void>;
  /** How many figures a result shows as images; the rest only as links. */
  inlineImages: number;
  /** What a new machine is made with unless the call says otherwise (`McpOptions.machineDefaults`). */
  machineDefaults: NewMachineOptions;
  /** Puts a running cell's `input()` to the person (see `cellQuestions`). */
  ask: InputAnswerer;
}

export interface ToolDefinition<In extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  inputSchema: In;
  outputSchema?: z.ZodObject;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /** The MCP Apps view it links (`MACHINE_VIEW_META`), or that only the view calls it (`VIEW_ONLY_META`). */
  _meta?: Record<string, unknown>;
  handler(args: z.infer<In>, context: ToolContext): Promise<CallToolResult>;
}

/** Keeps each tool's argument types tied to its schema. */
export function tool<In extends z.ZodObject>(definition: ToolDefinition<In>): ToolDefinition<In> {
  convertedOnce(definition.inputSchema);
  if (definition.outputSchema) convertedOnce(definition.outputSchema);
  return definition;
}

type JsonSchemaConverter = (options: { target: string }) => Record<string, unknown>;
const convertedSchemas = new WeakSet<z.ZodObject>();

/**
 * Makes a schema compute its JSON Schema once per target. The SDK makes an MCP server for every
 * 2026-07-28 request and converts the schemas of a new server again (for the request's header
 * checks and its result), about half of what such a request cost the server; the tools never change.
 */
function convertedOnce(schema: z.ZodObject): void {
  // A schema shared by tools is converted for the first.
  if (convertedSchemas.has(schema)) return;
  convertedSchemas.add(schema);
  const standard = schema['~standard'];
  const once = (convert: JsonSchemaConverter): JsonSchemaConverter => {
    const converted = new Map<string, Record<string, unknown>>();
    return (options) => converted.get(options.target) ?? converted.set(options.target, convert(options)).get(options.target)!;
  };
  const jsonSchema = { input: once(standard.jsonSchema.input), output: once(standard.jsonSchema.output) };
  Object.defineProperty(schema, '~standard', { value: { ...standard, jsonSchema } });
}

export const replId = MachineName.describe('The machine name returned by create-python-repl');

export const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
export const json = (value: unknown): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
  structuredContent: value as Record<string, unknown>,
});
