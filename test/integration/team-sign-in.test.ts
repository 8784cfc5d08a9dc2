// Sign-in for MCP over HTTP, as the MCP authorization specification has it: a real OpenID
// Connect server (oidc-provider, run here on 127.0.0.1) is the team's identity provider, and the
// MCP TypeScript SDK's client does the whole OAuth flow itself: the 401's challenge, RFC 9728's
// metadata, the provider's discovery, dynamic registration, PKCE, the code exchange. The person
// at the browser is played by following the provider's redirects with its cookies.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { generateKeyPair, exportJWK, SignJWT } from 'jose';
import Provider, { errors as oidcErrors } from 'oidc-provider';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { HttpClient } from '../../src/client/http-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { tempDataDir } from '../helpers/machines.ts';
import { call, textOf } from '../helpers/mcp-clients.ts';

const SCOPES = 'perennial:read perennial:run perennial:manage';

/** An identity provider for the team: alice's subject is `sub-alice`; a login names the account, the test's "browser" consents to what was asked. */
async function startIdentityProvider(resource: () => string) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource(),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource()) throw new oidcErrors.InvalidTarget();
          return { scope: SCOPES, audience: indicator, accessTokenFormat: 'jwt', accessTokenTTL: 600, jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    clientBasedCORS: () => true,
  });
  // The person at the browser: signs in as `account` and allows what the client asked for.
  let account = 'sub-alice';
  const callback = provider.callback();
  http.on('request', async (req, res) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: account } }, { mergeWithLastSubmission: false });
      return;
    }
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  });
  return {
    issuer,
    privateKey,
    signInAs: (subject: string) => (account = subject),
    stop: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

/** An MCP client's OAuth state, kept in memory as a desktop client keeps it; the browser's part follows redirects, carrying cookies. */
class TestOAuthClient implements OAuthClientProvider {
  #client: StoredOAuthClientInformation | undefined;
  #tokens: StoredOAuthTokens | undefined;
  #verifier = '';
  /** What the provider sent the browser back to the client with: the code and the issuer (RFC 9207). */
  callback: URLSearchParams | undefined;
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  readonly clientMetadata = {
    client_name: 'team-sign-in test',
    redirect_uris: [this.redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.#client = info;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.#tokens = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  #discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.#discovery = state;
  }
  discoveryState() {
    return this.#discovery;
  }
  async redirectToAuthorization(url: URL) {
    const cookies = new Map<string, string>();
    let next: URL = url;
    for (let hop = 0; hop < 10; hop++) {
      const response = await fetch(next, { redirect: 'manual', headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const [name, ...value] = pair!.split('=');
        cookies.set(name!, value.join('='));
      }
      const location = response.headers.get('location');
      if (!location) throw new Error(`the authorization ended at ${next} (${response.status}): ${await response.text()}`);
      next = new URL(location, next);
      if (next.toString().startsWith(this.redirectUrl)) {
        this.callback = next.searchParams;
        return;
      }
    }
    throw new Error('the authorization did not end');
  }
}

/** Connects an MCP client to `url` signing in through `oauth`: the first try is refused and sends the person to sign in, the second carries the token. */
async function signedInClient(url: string, oauth: TestOAuthClient): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth });
  await assert.rejects(new Client({ name: 'sign-in test', version: '1' }).connect(first), UnauthorizedError);
  await first.finishAuth(oauth.callback!);
  const client = new Client({ name: 'sign-in test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth }));
  return client;
}

describe('signing in to a team’s MCP endpoint with the team’s identity provider', { timeout: 300_000 }, () => {
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let server: LocalServer;
  let idp: Awaited<ReturnType<typeof startIdentityProvider>>;
  let alice: HttpClient;
  const mcpUrl = () => `${server.url}/mcp`;

  before(async () => {
    data = await tempDataDir();
    idp = await startIdentityProvider(mcpUrl);
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'sandbox' });
    const operator = new HttpClient({ baseUrl: server.url, token: server.token });
    alice = new HttpClient({ baseUrl: server.url, token: (await operator.team('init', { owner: 'alice' })).key });
    await operator.close();
    // Bob's subject at the identity provider, written on his person by an admin.
    await alice.team('addPerson', { name: 'bob', subject: 'sub-bob' });
    await alice.team('setSignIn', { issuer: idp.issuer, resource: mcpUrl() });
  });

  after(async () => {
    await alice?.close();
    await server?.close();
    await idp?.stop();
    await data?.cleanup();
  });

  it('answers an unauthenticated client with the challenge and metadata the specification names', async () => {
    const refused = await fetch(mcpUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(refused.status, 401);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    assert.equal(metadataUrl, `${server.url}/.well-known/oauth-protected-resource/mcp`);
    const metadata = (await (await fetch(metadataUrl!)).json()) as { resource: string; authorization_servers: string[]; scopes_supported: string[] };
    assert.equal(metadata.resource, mcpUrl());
    assert.deepEqual(metadata.authorization_servers, [idp.issuer]);
    assert.deepEqual(metadata.scopes_supported, SCOPES.split(' '));
  });

  it('signs a person in through the MCP client’s own OAuth flow, and serves them as that person', async () => {
    idp.signInAs('sub-bob');
    const oauth = new TestOAuthClient();
    const mcp = await signedInClient(mcpUrl(), oauth);
    try {
      const made = textOf(await call(mcp, 'create-python-repl', {}));
      const name = /^[a-z0-9-]+$/m.exec(made)?.[0];
      assert.ok(name, made);
      assert.match(textOf(await call(mcp, 'run-python-in-repl', { replId: name, pythonCode: '6 * 7' })), /42/);
      const listed = await alice.list();
      assert.ok(!listed.some((m) => m.name === name), "bob's machine, made by his sign-in, is not alice's to see");
      const audit = await alice.team('audit', { person: 'bob' });
      assert.ok(
        audit.some((e) => e.action === 'made' && e.target === name && e.credential?.startsWith('sign-in ')),
        `the audit log names the sign-in it came by: ${JSON.stringify(audit)}`,
      );
    } finally {
      await mcp.close();
    }
  });

  it('refuses a token for another audience, an expired one, one of another issuer, and a person the team does not know', async () => {
    const post = (token: string) =>
      fetch(mcpUrl(), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    const now = Math.floor(Date.now() / 1000);
    const token = (claims: Record<string, unknown>, key = idp.privateKey) =>
      new SignJWT({ iss: idp.issuer, sub: 'sub-bob', aud: mcpUrl(), iat: now, exp: now + 300, scope: SCOPES, jti: 'j1', ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .sign(key);
    assert.equal((await post(await token({}))).status, 200, 'a token as the provider issues it is taken');
    for (const [what, bad] of [
      ['another audience', await token({ aud: 'https://elsewhere.example/mcp' })],
      ['expired', await token({ exp: Math.floor(Date.now() / 1000) - 60 })],
      ['another issuer', await token({ iss: 'https://evil.example' })],
      ['signed by another key', await token({}, (await generateKeyPair('RS256')).privateKey)],
    ] as const) {
      const refused = await post(bad);
      assert.equal(refused.status, 401, what);
      assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/, what);
    }
    const stranger = await post(await token({ sub: 'sub-mallory' }));
    assert.equal(stranger.status, 403);
    assert.match(await stranger.text(), /sub-mallory.*not one of this team's people/);
    const noScopes = await post(await token({ scope: 'openid' }));
    assert.equal(noScopes.status, 403);
    assert.match(noScopes.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="perennial:read perennial:run perennial:manage"/);
    const readOnly = new Client({ name: 'read-only', version: '1' });
    await readOnly.connect(
      new StreamableHTTPClientTransport(new URL(mcpUrl()), {
        requestInit: { headers: { Authorization: `Bearer ${await token({ scope: 'perennial:read' })}` } },
      }),
    );
    const made = await call(readOnly, 'create-python-repl', {});
    assert.equal(made.isError, true);
    assert.match(textOf(made), /manage/);
    await readOnly.close();
  });
});
