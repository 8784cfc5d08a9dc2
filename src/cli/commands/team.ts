import type { HttpClient } from '../../client/http-client.ts';
import { describeShares, EVERYONE, SCOPES, type Scope, type TeamKey, type TeamQuota, type TeamSignIn } from '../../shared/team-requests.ts';
import type { CliContext } from '../context.ts';
import { ExitError } from '../errors.ts';
import { table } from '../table.ts';

/** The team's commands talk to a team's server: `--server URL` with a person's key, or the local server with its own token (the operator). */
async function withTeam<T>(ctx: CliContext, task: (client: HttpClient) => Promise<T>): Promise<T> {
  const client = await ctx.openClient();
  try {
    return await task(client);
  } finally {
    await client.close();
  }
}

function printJsonOr<T>(ctx: CliContext, json: boolean | undefined, value: T, text: (value: T) => string): void {
  ctx.term.out.write(json ? JSON.stringify(value, null, 2) + '\n' : text(value) + '\n');
}

/** A key, shown this once, with how to use it. */
function showNewKey(ctx: CliContext, made: { key: string; keyInfo: TeamKey }): void {
  ctx.term.out.write(made.key + '\n');
  ctx.term.err.write(
    `perennial: key ${made.keyInfo.id} for ${made.keyInfo.person} (${made.keyInfo.scopes.join(', ')})${made.keyInfo.expiresAt ? `, until ${made.keyInfo.expiresAt}` : ''}. ` +
      'It is shown this once and kept only as a hash: give it to its person, who uses it as PERENNIAL_TOKEN, or with perennial login --server URL.\n',
  );
}

/** `perennial team init --owner NAME`: makes the local server a team's; NAME is its first admin and owns its machines. */
export async function teamInitCommand(ctx: CliContext, options: { owner: string }): Promise<void> {
  const made = await withTeam(ctx, (client) => client.team('init', { owner: options.owner }));
  ctx.term.err.write(`perennial: this server now serves a team; ${options.owner} is its admin and owns the machines it had.\n`);
  showNewKey(ctx, made);
}

export async function personAddCommand(ctx: CliContext, name: string, options: { admin?: boolean; subject?: string }): Promise<void> {
  const person = await withTeam(ctx, (client) => client.team('addPerson', { name, admin: options.admin, subject: options.subject }));
  ctx.term.err.write(
    `perennial: ${person.name} is in the team${person.admin ? ', an admin' : ''}. Make their key with: perennial team key create --person ${person.name} --name NAME\n`,
  );
}

export async function personListCommand(ctx: CliContext, options: { json?: boolean }): Promise<void> {
  const people = await withTeam(ctx, (client) => client.team('people', {}));
  printJsonOr(ctx, options.json, people, (list) =>
    table([['PERSON', 'ADMIN', 'SIGNS IN AS', 'SINCE'], ...list.map((p) => [p.name, p.admin ? 'yes' : '', p.subject ?? '', p.createdAt])]),
  );
}

export async function personRemoveCommand(ctx: CliContext, name: string): Promise<void> {
  await withTeam(ctx, (client) => client.team('removePerson', { person: name }));
  ctx.term.err.write(
    `perennial: ${name} is out of the team and their keys are revoked; their machines are kept (the operator can give them to someone: perennial machine give).\n`,
  );
}

/**
 * A time given as a date or a span from now: `--expires 30d` (ahead, `direction` 1), `--since 12h`
 * (back, -1), or 2027-01-31.
 */
export function timeOf(text: string, now = Date.now(), direction: 1 | -1 = 1): string {
  const relative = /^(\d+)([dh])$/.exec(text);
  if (relative) return new Date(now + direction * Number(relative[1]) * (relative[2] === 'd' ? 86_400_000 : 3_600_000)).toISOString();
  const at = Date.parse(text);
  if (Number.isNaN(at)) throw new ExitError(2, `perennial: ${text}: give a date (2027-01-31, 2027-01-31T12:00Z) or a span (30d, 12h)`);
  return new Date(at).toISOString();
}

export function scopesOf(text: string): Scope[] {
  const scopes = text.split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length || !scopes.length) throw new ExitError(2, `perennial: --scopes ${text}: each of ${SCOPES.join(', ')}, separated by commas`);
  return scopes as Scope[];
}

export async function keyCreateCommand(ctx: CliContext, options: { name: string; person?: string; scopes: string; expires?: string }): Promise<void> {
  const made = await withTeam(ctx, (client) =>
    client.team('createKey', {
      name: options.name,
      person: options.person,
      scopes: scopesOf(options.scopes),
      ...(options.expires ? { expiresAt: timeOf(options.expires) } : {}),
    }),
  );
  showNewKey(ctx, made);
}

export async function keyListCommand(ctx: CliContext, options: { person?: string; json?: boolean }): Promise<void> {
  const keys = await withTeam(ctx, (client) => client.team('keys', { person: options.person }));
  printJsonOr(ctx, options.json, keys, (list) =>
    table([
      ['ID', 'NAME', 'PERSON', 'SCOPES', 'STATE', 'EXPIRES', 'MADE BY'],
      ...list.map((k) => [k.id, k.name, k.person, k.scopes.join(','), k.state, k.expiresAt ?? '', k.createdBy]),
    ]),
  );
}

export async function keyRevokeCommand(ctx: CliContext, id: string): Promise<void> {
  await withTeam(ctx, (client) => client.team('revokeKey', { id }));
  ctx.term.err.write(`perennial: key ${id} is revoked.\n`);
}

function quotaText(quota: TeamQuota): string {
  return `machines ${quota.machines}, warm memory ${quota.warmMemoryMb} MB, disk ${quota.diskMb} MB`;
}

export async function quotaCommand(ctx: CliContext, options: { person?: string; json?: boolean }): Promise<void> {
  const quota = await withTeam(ctx, (client) => client.team('quota', { person: options.person }));
  printJsonOr(ctx, options.json, quota, quotaText);
}

export async function quotaSetCommand(ctx: CliContext, options: { person?: string; machines?: number; warmMemoryMb?: number; diskMb?: number }): Promise<void> {
  const { person, machines, warmMemoryMb, diskMb } = options;
  if (machines === undefined && warmMemoryMb === undefined && diskMb === undefined)
    throw new ExitError(2, 'perennial: give --machines, --warm-memory-mb or --disk-mb');
  const quota = await withTeam(ctx, (client) => client.team('setQuota', { person, machines, warmMemoryMb, diskMb }));
  ctx.term.err.write(`perennial: ${person ?? 'the default'} quota: ${quotaText(quota)}\n`);
}

/** `perennial machine share NAME PERSON|everyone [--run]`. */
export async function machineShareCommand(ctx: CliContext, name: string, target: string, options: { run?: boolean }): Promise<void> {
  const shares = await withTeam(ctx, (client) => client.team('share', { name, with: shareTarget(target), right: options.run ? 'run' : 'read' }));
  ctx.term.err.write(`perennial: ${name} ${sharesText(shares)}\n`);
}

export async function machineUnshareCommand(ctx: CliContext, name: string, target: string): Promise<void> {
  const shares = await withTeam(ctx, (client) => client.team('unshare', { name, with: shareTarget(target) }));
  ctx.term.err.write(`perennial: ${name} ${sharesText(shares)}\n`);
}

export async function machineGiveCommand(ctx: CliContext, name: string, person: string): Promise<void> {
  await withTeam(ctx, (client) => client.team('give', { name, person }));
  ctx.term.err.write(`perennial: ${name} is ${person}'s now, shared with no one.\n`);
}

function sharesText(shares: Array<{ with: string; right: string }>): string {
  return shares.length ? `is shared: ${describeShares(shares)}` : 'is shared with no one';
}

function shareTarget(target: string): string {
  return target === 'everyone' ? EVERYONE : target;
}

/** `perennial audit`: the team's audit log (an admin), as JSON lines, oldest first. */
export async function auditCommand(
  ctx: CliContext,
  options: { person?: string; machine?: string; action?: string; since?: string; limit?: number },
): Promise<void> {
  const entries = await withTeam(ctx, (client) =>
    client.team('audit', {
      ...options,
      ...(options.since ? { since: timeOf(options.since, Date.now(), -1) } : {}),
    }),
  );
  for (const entry of entries) ctx.term.out.write(JSON.stringify(entry) + '\n');
}

function signInText(settings: TeamSignIn): string {
  return settings.issuer ? `people sign in at ${settings.issuer} for ${settings.resource}` : 'people sign in with keys only';
}

export async function signInShowCommand(ctx: CliContext, options: { json?: boolean }): Promise<void> {
  const settings = await withTeam(ctx, (client) => client.team('signIn', {}));
  printJsonOr(ctx, options.json, settings, signInText);
}

/** `perennial team sign-in set --issuer URL --resource URL`, or `--off`. */
export async function signInSetCommand(ctx: CliContext, options: { issuer?: string; resource?: string; off?: boolean }): Promise<void> {
  if (options.off ? options.issuer !== undefined : options.issuer === undefined || options.resource === undefined)
    throw new ExitError(2, "perennial: give --issuer and --resource (this server's MCP endpoint as people reach it), or --off");
  const settings = await withTeam(ctx, (client) => client.team('setSignIn', { issuer: options.off ? null : options.issuer!, resource: options.resource }));
  ctx.term.err.write(`perennial: ${signInText(settings)}.\n`);
}
