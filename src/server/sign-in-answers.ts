import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOAuthProtectedResourceMetadataUrl, type OAuthProtectedResourceMetadata } from '@modelcontextprotocol/server';
import type { ForeverVMError } from '../shared/forevervm-error.ts';
import { SIGN_IN_SCOPE_PREFIX, type TeamSignIn } from '../shared/team-requests.ts';
import { sendJson } from './http-io.ts';

/** RFC 9728's protected-resource metadata: at the root, and after it the resource's path (`/mcp`), where MCP clients look first. */
export const RESOURCE_METADATA_PATH = /^\/\.well-known\/oauth-protected-resource(\/[\w/-]*)?$/;

/** The scopes an MCP client asks the identity provider for: what MCP's tools need (admin is the CLI's). */
const MCP_SCOPES = (['read', 'run', 'manage'] as const).map((scope) => SIGN_IN_SCOPE_PREFIX + scope);

/** The metadata that names the team's identity provider to an MCP client, or 404 on a server whose people sign in with keys only. */
export function sendResourceMetadata(res: ServerResponse, settings: TeamSignIn): void {
  if (!settings.issuer || !settings.resource) {
    sendJson(res, 404, { code: 'NotFound', message: 'People sign in to this server with keys: it names no identity provider' });
    return;
  }
  const metadata: OAuthProtectedResourceMetadata = {
    resource: settings.resource,
    authorization_servers: [settings.issuer],
    scopes_supported: MCP_SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'Perennial',
  };
  sendJson(res, 200, metadata);
}

/**
 * The `WWW-Authenticate` challenge of a refused request (RFC 6750), naming the metadata, so that
 * an MCP client signs the person in: a 401 says the token was missing or bad, a 403 of
 * `InsufficientScope` which scopes to ask for.
 */
export function challenge(req: IncomingMessage, res: ServerResponse, failure: ForeverVMError, settings: TeamSignIn): void {
  if (!settings.resource || res.headersSent) return;
  const params = [`resource_metadata="${getOAuthProtectedResourceMetadataUrl(new URL(settings.resource))}"`];
  if (failure.status === 403 && failure.code === 'InsufficientScope') params.unshift('error="insufficient_scope"', `scope="${MCP_SCOPES.join(' ')}"`);
  else if (failure.status === 401 && req.headers.authorization)
    params.unshift('error="invalid_token"', `error_description="${failure.message.replace(/["\\]/g, "'")}"`);
  else if (failure.status !== 401) return;
  res.setHeader('WWW-Authenticate', `Bearer ${params.join(', ')}`);
}
