import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { clientCapabilitiesOf, isModernCall } from './client-capabilities.ts';
import type { InputAnswerer } from '../shared/types.ts';

/** How long a person may take to answer a cell's question before the client's form is given up. */
const ANSWER_TIMEOUT_MS = 60 * 60_000;

/**
 * A running cell's `input()` put to the person through the MCP client: a form with one text
 * field, the prompt its message. Only a 2025-era call can hold a request to the client open while
 * the cell waits; otherwise, and for a password, the answer is refused with the reason, which the
 * cell's EOFError gives.
 */
export function cellQuestions(server: McpServer, ctx: ServerContext): InputAnswerer {
  return async ({ prompt, password }, signal) => {
    if (!canShowForm(server, ctx)) throw new Error('this MCP client cannot show a form to ask the person; put the value in the code instead');
    if (isModernCall(ctx)) throw new Error('an MCP 2026-07-28 tool call cannot wait for an answer in the middle of a cell; put the value in the code instead');
    // The MCP specification forbids asking for secrets in a form.
    if (password) throw new Error('an MCP client may not be asked for a password; read it from an environment variable or a file');
    const question = prompt.trim() || 'The Python code asks for input';
    const response = await ctx.mcpReq.elicitInput(
      {
        mode: 'form',
        message: question,
        requestedSchema: { type: 'object', properties: { answer: { type: 'string', title: question } }, required: ['answer'] },
      },
      { signal, timeout: ANSWER_TIMEOUT_MS },
    );
    if (response.action !== 'accept') throw new Error(`the person ${response.action === 'decline' ? 'declined' : 'dismissed'} the question`);
    return String(response.content?.answer ?? '');
  };
}

/** Whether the client can show a form (form elicitation). */
function canShowForm(server: McpServer, ctx: ServerContext): boolean {
  const elicitation = clientCapabilitiesOf(server, ctx)?.elicitation;
  return Boolean(elicitation) && !(elicitation!.url && !elicitation!.form);
}
