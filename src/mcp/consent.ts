import {
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';

/** The key of the question in a 2026-07-28 `input_required` round. */
const CONSENT_KEY = 'consent';

/** A form with nothing to fill in: accepting it is the consent. */
export const CONSENT_FORM: ElicitRequestFormParams['requestedSchema'] = { type: 'object', properties: {} };

/**
 * What the user said to a question, or, on a 2026-07-28 request that has not asked yet, the
 * result that makes the client ask and call again.
 */
export type Consent = { answer: 'given' | 'refused' | 'unasked' } | { ask: InputRequiredResult };

/**
 * Asks the user, through the client, before a tool changes something of theirs. A 2025-era client
 * gets an `elicitation/create` request; a 2026-07-28 one an `input_required` result, after which it
 * calls the tool again with the answer. A client that cannot show a form is not asked: its own
 * confirmation of tool calls (VS Code, Claude Desktop) is what the user sees.
 */
export async function askConsent(server: McpServer, ctx: ServerContext, message: string): Promise<Consent> {
  if (!canShowForm(server, ctx)) return { answer: 'unasked' };
  if (ctx.mcpReq.envelope) {
    const response = inputResponse(ctx.mcpReq.inputResponses, CONSENT_KEY);
    if (response.kind === 'missing')
      return { ask: inputRequired({ inputRequests: { [CONSENT_KEY]: inputRequired.elicit({ message, requestedSchema: CONSENT_FORM }) } }) };
    return { answer: response.kind === 'elicit' && response.action === 'accept' ? 'given' : 'refused' };
  }
  const response = await ctx.mcpReq.elicitInput({ mode: 'form', message, requestedSchema: CONSENT_FORM });
  return { answer: response.action === 'accept' ? 'given' : 'refused' };
}

/** Whether the client can show a form (form elicitation), as the request or its session declared. */
export function canShowForm(server: McpServer, ctx: ServerContext): boolean {
  // A 2026-07-28 request declares the client's capabilities itself; before, initialize did.
  const envelope = ctx.mcpReq.envelope as Record<string, ClientCapabilities | undefined> | undefined;
  const elicitation = (envelope ? envelope[CLIENT_CAPABILITIES_META_KEY] : server.server.getClientCapabilities())?.elicitation;
  return Boolean(elicitation) && !(elicitation!.url && !elicitation!.form);
}
