import { timingSafeEqual } from 'node:crypto';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { makeKey, readKey, secretMatches } from './keys.ts';
import { hasScope, OPERATOR, readOnBehalf, type Principal } from './principal.ts';
import { EVERYONE, PersonName, SCOPES, type AuditEntry, type AuditFilter, type Scope, type TeamKey } from '../shared/team-requests.ts';
import { DEFAULT_QUOTA, emptyTeam, type Key, type MachineAccessRecord, type Person, type Quota, type Share, type TeamDocument } from './team-document.ts';
import type { TeamStore } from './team-store.ts';
import type { AuditLog } from './audit-log.ts';
import type { MachineAccess } from '../shared/types.ts';
import { covers, type Right } from '../shared/machine-rights.ts';
import { isJwt, SignInVerifier } from './sign-in.ts';
import type { TeamSignIn } from '../shared/team-requests.ts';

/**
 * The seam between people and machines: who presents a credential, what they may do to which
 * machine, and the team's own records (people, keys, shares, quotas). Every surface asks here;
 * nothing else decides. On a server for one person (no team document) everyone who gets in is the
 * operator, with every right, as before teams.
 */
export class Team {
  readonly #operatorToken: Buffer;
  readonly #verifier = new SignInVerifier();

  constructor(
    private readonly store: TeamStore,
    private readonly audit: AuditLog,
    operatorToken: string,
    private readonly writtenBy: string,
  ) {
    this.#operatorToken = Buffer.from(operatorToken);
  }

  /** Whether this server serves a team (else one person, who needs no key but the server's). */
  async enabled(): Promise<boolean> {
    return (await this.store.read()) !== undefined;
  }

  /**
   * Who presents `credential`, or undefined: refused. `onBehalf` is the header another node of the
   * cluster sends for the person it calls for; it counts with the operator's token only, and gives
   * no more than the person holds now.
   */
  async authenticate(credential: string, onBehalf?: string): Promise<Principal | undefined> {
    if (this.#isOperatorToken(credential)) return onBehalf === undefined ? OPERATOR : this.#calledFor(onBehalf);
    if (isJwt(credential)) return this.#signedInWith(credential);
    const parts = readKey(credential);
    if (!parts) return undefined;
    return this.#surely((document) => {
      const key = document?.keys.find((k) => k.id === parts.id);
      if (!key || keyState(key) !== 'active' || !secretMatches(parts.secret, key.hash)) return undefined;
      const person = document?.people.find((p) => p.name === key.person);
      return person && { kind: 'person', person: person.name, scopes: effectiveScopes(key.scopes, person), credential: `key ${key.id}` };
    });
  }

  #calledFor(header: string): Promise<Principal | undefined> {
    const named = readOnBehalf(header);
    if (!named) return Promise.resolve(undefined);
    return this.#surely((document) => {
      const person = document?.people.find((p) => p.name === named.person);
      return person && { kind: 'person', person: person.name, scopes: effectiveScopes(named.scopes, person), credential: named.credential };
    });
  }

  /**
   * The person an access token of the team's identity provider is for. Throws `SignInRefused` for a
   * token it did not issue for this server, or an expired one (the client signs in again), and a
   * 403 for a person the team does not know.
   */
  async #signedInWith(token: string): Promise<Principal | undefined> {
    const settings = (await this.store.read())?.signIn;
    if (!settings) return undefined;
    const signed = await this.#verifier.verify(token, settings);
    const principal = await this.signedIn(signed.subject, signed.scopes, signed.tokenId);
    if (!principal)
      throw new ForeverVMError(
        403,
        'NotInTeam',
        `You signed in as ${signed.subject}, who is not one of this team's people: an admin adds you with "perennial team person add NAME --subject ${signed.subject}"`,
      );
    return principal;
  }

  /** Where people sign in for MCP clients. */
  async signInSettings(): Promise<TeamSignIn> {
    const settings = (await this.store.read())?.signIn;
    return { issuer: settings?.issuer ?? null, resource: settings?.resource ?? null };
  }

  /** Sets where people sign in (`issuer` null: keys only); admins only. */
  async setSignIn(principal: Principal, issuer: string | null, resource: string | undefined): Promise<TeamSignIn> {
    this.#requireAdmin(principal, 'set how people sign in');
    if (issuer !== null && resource === undefined)
      throw new ForeverVMError(400, 'BadRequest', "Name this server's MCP endpoint as people reach it (resource), e.g. https://perennial.example.com/mcp");
    await this.#change((document) => {
      if (issuer === null) delete document.signIn;
      else document.signIn = { issuer, resource: resource! };
    });
    return this.signInSettings();
  }

  /** A person signed in at the team's identity provider, by the token's subject; undefined: no such person. */
  signedIn(subject: string, scopes: readonly Scope[], tokenId: string): Promise<Principal | undefined> {
    return this.#surely((document) => {
      const person = document?.people.find((p) => p.subject === subject);
      return person && { kind: 'person', person: person.name, scopes: effectiveScopes(scopes, person), credential: `sign-in ${tokenId}` };
    });
  }

  /** What `decide` finds in the document, or, when it finds nothing, in the newest one: a refusal is never of a moment-old document. */
  async #surely<T>(decide: (document: TeamDocument | undefined) => T | undefined): Promise<T | undefined> {
    return decide(await this.store.read()) ?? decide(await this.store.read(true));
  }

  /** What `principal` may do to `machine`, or undefined: for them it does not exist. */
  async rightOn(principal: Principal, machine: string): Promise<Right | undefined> {
    return rightIn(await this.store.read(), principal, machine);
  }

  /**
   * Throws unless `principal` holds `right` on `machine`: 404, as for a machine that does not
   * exist, when it is not theirs nor shared with them (never a 403 that confirms the name); 403
   * when it is, but the key lacks the scope.
   */
  async require(principal: Principal, machine: string, right: Right): Promise<void> {
    const enough = (document: TeamDocument | undefined) => {
      const held = rightIn(document, principal, machine);
      return held && covers(held, right) ? held : undefined;
    };
    const held = (await this.#surely(enough)) ?? (await this.rightOn(principal, machine));
    if (held === undefined) throw machineNotFound(machine);
    // Seen already (it is shared with them): saying so confirms nothing new.
    if (!covers(held, right))
      throw new ForeverVMError(
        403,
        'NotShared',
        `Machine ${machine} is shared with you to ${held}: to ${RIGHT_WORDS[right]} it needs ${right === 'own' ? 'its owner' : 'a share to run'}`,
      );
    if (!hasScope(principal, SCOPE_FOR[right])) throw missingScope(SCOPE_FOR[right], `${RIGHT_WORDS[right]} machine ${machine}`);
  }

  /**
   * What `principal` may see of each machine, as the document is now: for listings and events.
   * `fresh`: as the database has it this moment (a listing, which shows a machine made a moment ago on another node).
   */
  async view(principal: Principal, fresh = false): Promise<(machine: string) => MachineAccess | undefined> {
    const document = await this.store.read(fresh);
    return (machine) => {
      const right = rightIn(document, principal, machine);
      if (right === undefined) return undefined;
      const record = document?.machines[machine];
      return { owner: record?.owner ?? 'the operator', right, shares: right === 'own' ? (record?.shares ?? []) : [] };
    };
  }

  /** Before a machine is made for `principal`: throws what forbids it (the scope, the quota's count). `warmMemoryMb`: what it will hold warm. */
  async mayCreate(
    principal: Principal,
    owned: (person: string) => { machines: number; warmMemoryMb: number; diskMb: number },
    memoryMb: number,
  ): Promise<void> {
    if (principal.kind === 'operator' || !(await this.enabled())) return;
    if (!hasScope(principal, 'manage')) throw missingScope('manage', 'make machines');
    const quota = await this.quotaOf(principal.person);
    const usage = owned(principal.person);
    if (usage.machines + 1 > quota.machines)
      throw quotaExceeded(`${principal.person} owns ${usage.machines} machines of a quota of ${quota.machines}: delete one, or ask an admin for more`);
    if (usage.diskMb > quota.diskMb)
      throw quotaExceeded(
        `${principal.person}'s machines keep ${usage.diskMb} MB on disk of a quota of ${quota.diskMb} MB: delete one, or ask an admin for more`,
      );
    if (usage.warmMemoryMb + memoryMb > quota.warmMemoryMb)
      throw quotaExceeded(
        `${principal.person}'s warm machines hold ${usage.warmMemoryMb} MB of a quota of ${quota.warmMemoryMb} MB, and this one would add ${memoryMb} MB: swap one out or delete one, or ask an admin for more`,
      );
  }

  /** Records `machine`, just made, as `principal`'s (an operator's machine needs no record). */
  async claim(principal: Principal, machine: string): Promise<void> {
    if (principal.kind === 'operator') return;
    await this.#change((document) => {
      document.machines[machine] = { owner: principal.person, shares: [] };
    });
  }

  /** Forgets a deleted machine's record. */
  async release(machine: string): Promise<void> {
    if (!(await this.store.read())?.machines[machine]) return;
    await this.#change((document) => {
      delete document.machines[machine];
    });
  }

  /** Whose `machine` is on a team's server; none on one person's. */
  async ownerOf(machine: string): Promise<string | undefined> {
    return (await this.store.read())?.machines[machine]?.owner;
  }

  /** The names of the machines each person owns, from the document. */
  async owners(): Promise<Map<string, string>> {
    const document = await this.store.read();
    return new Map(Object.entries(document?.machines ?? {}).map(([machine, record]) => [machine, record.owner]));
  }

  /**
   * Makes this server a team's: `owner` becomes its first admin and the owner of every machine
   * that is here now (`machines`). Answers the owner's first key, shown once. The operator's alone.
   */
  async init(principal: Principal, owner: string, machines: string[]): Promise<{ key: string; keyInfo: TeamKey }> {
    if (principal.kind !== 'operator') throw new ForeverVMError(403, 'Forbidden', "Only the server's operator (its own token) makes it a team's");
    const name = personName(owner);
    const made = makeKey();
    const now = new Date().toISOString();
    const record: Key = { id: made.id, name: 'first key', person: name, scopes: [...SCOPES], hash: made.hash, createdAt: now, createdBy: 'the operator' };
    await this.store.change((document) => {
      if (document) throw new ForeverVMError(409, 'AlreadyATeam', 'This server is a team\'s already: add people with "perennial team person add"');
      const team = emptyTeam(this.writtenBy);
      team.people.push({ name, admin: true, createdAt: now });
      team.keys.push(record);
      for (const machine of machines) team.machines[machine] = { owner: name, shares: [] };
      return { document: team, answer: undefined };
    });
    return { key: made.key, keyInfo: keyInfo(record) };
  }

  /** Adds a person (admins and the operator). */
  async addPerson(principal: Principal, name: string, options: { admin?: boolean; subject?: string } = {}): Promise<Person> {
    this.#requireAdmin(principal, 'add people');
    const person: Person = {
      name: personName(name),
      admin: options.admin ?? false,
      createdAt: new Date().toISOString(),
      ...(options.subject ? { subject: options.subject } : {}),
    };
    return this.#change((document) => {
      if (document.people.some((p) => p.name === person.name)) throw new ForeverVMError(409, 'PersonExists', `${person.name} is in the team already`);
      if (person.subject && document.people.some((p) => p.subject === person.subject))
        throw new ForeverVMError(409, 'PersonExists', `Another person signs in as ${person.subject}`);
      document.people.push(person);
      return person;
    });
  }

  /**
   * Removes a person and revokes their keys. Their machines are kept, and stay theirs until
   * the operator gives them to someone (`give`): nothing of anyone's work is deleted here.
   */
  async removePerson(principal: Principal, name: string): Promise<void> {
    this.#requireAdmin(principal, 'remove people');
    await this.#change((document) => {
      const index = document.people.findIndex((p) => p.name === name);
      if (index < 0) throw noSuchPerson(name);
      if (document.people[index]!.admin && document.people.filter((p) => p.admin).length === 1)
        throw new ForeverVMError(409, 'LastAdmin', `${name} is the team's last admin: make another admin first`);
      document.people.splice(index, 1);
      const now = new Date().toISOString();
      for (const key of document.keys) if (key.person === name && !key.revokedAt) key.revokedAt = now;
    });
  }

  /** The team's people: everyone's names for an admin; a person sees only themselves. */
  async people(principal: Principal): Promise<Person[]> {
    const people = (await this.#document()).people;
    if (isAdmin(principal)) return people;
    return people.filter((p) => principal.kind === 'person' && p.name === principal.person);
  }

  /**
   * Makes a key for `person` (the principal's own when omitted), with no more rights than the
   * principal holds: a person's key for themselves within their key's scopes; an admin's for anyone,
   * `admin` only for an admin.
   */
  async createKey(
    principal: Principal,
    request: { person?: string; name: string; scopes: Scope[]; expiresAt?: string },
  ): Promise<{ key: string; keyInfo: TeamKey }> {
    const person = request.person ?? (principal.kind === 'person' ? principal.person : undefined);
    if (!person) throw new ForeverVMError(400, 'BadRequest', 'Name the person the key is for');
    const forSelf = principal.kind === 'person' && principal.person === person;
    if (!forSelf) this.#requireAdmin(principal, "make other people's keys");
    if (forSelf) {
      const beyond = request.scopes.filter((scope) => !hasScope(principal, scope));
      if (beyond.length) throw missingScope(beyond[0]!, `make a key with ${beyond.join(', ')}: a key has no more rights than the one that makes it`);
    }
    if (request.expiresAt !== undefined && !(Date.parse(request.expiresAt) > Date.now()))
      throw new ForeverVMError(400, 'BadRequest', `A key's expiry must be a time to come (got ${request.expiresAt})`);
    const made = makeKey();
    const record: Key = {
      id: made.id,
      name: request.name,
      person,
      scopes: [...new Set(request.scopes)],
      hash: made.hash,
      createdAt: new Date().toISOString(),
      createdBy: principal.kind === 'operator' ? 'the operator' : principal.person,
      ...(request.expiresAt ? { expiresAt: new Date(request.expiresAt).toISOString() } : {}),
    };
    await this.#change((document) => {
      const owner = document.people.find((p) => p.name === person);
      if (!owner) throw noSuchPerson(person);
      if (record.scopes.includes('admin') && !owner.admin)
        throw new ForeverVMError(400, 'BadRequest', `${person} is not an admin: their keys cannot have the admin scope`);
      document.keys.push(record);
    });
    return { key: made.key, keyInfo: keyInfo(record) };
  }

  /** Keys: a person's own (theirs when `person` is omitted), or (an admin) anyone's; the operator's omitted: everyone's. */
  async keys(principal: Principal, person?: string): Promise<TeamKey[]> {
    const own = principal.kind === 'person' ? principal.person : undefined;
    const whose = person ?? own;
    if (whose === undefined || whose !== own) this.#requireAdmin(principal, "see other people's keys");
    return (await this.#document()).keys.filter((k) => whose === undefined || k.person === whose).map(keyInfo);
  }

  /** Revokes a key at once (on every node within the cluster's refresh): its own person's, or an admin's doing. */
  async revokeKey(principal: Principal, id: string): Promise<TeamKey> {
    return this.#change((document) => {
      const key = document.keys.find((k) => k.id === id);
      const mayTouch = key && (isAdmin(principal) || (principal.kind === 'person' && key.person === principal.person));
      if (!key || !mayTouch) throw new ForeverVMError(404, 'KeyNotFound', `No key ${id}`);
      key.revokedAt ??= new Date().toISOString();
      return keyInfo(key);
    });
  }

  /** Shares `machine` with a person or everyone (`*`), to read or to run; the owner's doing. A later share replaces an earlier one. */
  async share(principal: Principal, machine: string, target: string, right: 'read' | 'run'): Promise<Share[]> {
    await this.require(principal, machine, 'own');
    return this.#changeRecord(machine, (record, document) => {
      if (target !== EVERYONE && !document.people.some((p) => p.name === target)) throw noSuchPerson(target);
      if (principal.kind === 'person' && target === principal.person)
        throw new ForeverVMError(400, 'BadRequest', 'A machine is shared with others: its owner has it whole');
      record.shares = [...record.shares.filter((s) => s.with !== target), { with: target, right }];
    });
  }

  /** Ends a share; the owner's doing. */
  async unshare(principal: Principal, machine: string, target: string): Promise<Share[]> {
    await this.require(principal, machine, 'own');
    return this.#changeRecord(machine, (record) => {
      if (!record.shares.some((s) => s.with === target)) throw new ForeverVMError(404, 'ShareNotFound', `Machine ${machine} is not shared with ${target}`);
      record.shares = record.shares.filter((s) => s.with !== target);
    });
  }

  /** Gives `machine` to `person`, shares ended: the owner's doing, or the operator's (a machine of someone who left). */
  async give(principal: Principal, machine: string, person: string): Promise<void> {
    if (principal.kind !== 'operator') await this.require(principal, machine, 'own');
    await this.#change((document) => {
      if (!document.people.some((p) => p.name === person)) throw noSuchPerson(person);
      document.machines[machine] = { owner: person, shares: [] };
    });
  }

  /** A person's quota (the principal's own when omitted): their own, or (an admin) anyone's. */
  async quota(principal: Principal, person?: string): Promise<Required<Quota>> {
    const own = principal.kind === 'person' ? principal.person : undefined;
    const whose = person ?? own;
    if (whose === undefined || whose !== own) this.#requireAdmin(principal, "read other people's quotas");
    await this.#document();
    return whose === undefined ? this.quotaOf('') : this.quotaOf(whose);
  }

  /** A person's quota: theirs where an admin set one, else the team's default. */
  async quotaOf(person: string): Promise<Required<Quota>> {
    const quotas = (await this.store.read())?.quotas;
    return { ...DEFAULT_QUOTA, ...quotas?.default, ...quotas?.people[person] };
  }

  /** Sets a person's quota (or the default, `person` undefined); admins only. */
  async setQuota(principal: Principal, person: string | undefined, quota: Quota): Promise<Required<Quota>> {
    this.#requireAdmin(principal, 'set quotas');
    await this.#change((document) => {
      if (person === undefined) document.quotas.default = { ...document.quotas.default, ...quota };
      else {
        if (!document.people.some((p) => p.name === person)) throw noSuchPerson(person);
        document.quotas.people[person] = { ...document.quotas.people[person], ...quota };
      }
    });
    return person === undefined ? { ...DEFAULT_QUOTA, ...(await this.#document()).quotas.default } : this.quotaOf(person);
  }

  /** Appends to the audit log what `principal` asked and how it ended; a server for one person keeps none. */
  async record(principal: Principal | undefined, entry: Omit<AuditEntry, 'at' | 'who' | 'credential'>): Promise<void> {
    if (!(await this.enabled())) return;
    const who = principal === undefined ? 'unknown' : principal.kind === 'operator' ? 'the operator' : principal.person;
    const credential = principal?.kind === 'person' ? { credential: principal.credential } : {};
    // The request was done (or refused) already: a log that cannot be written is said, and costs the caller nothing.
    await this.audit.append({ at: new Date().toISOString(), who, ...credential, ...entry }).catch((error: Error) => {
      process.stderr.write(`perennial: the audit log could not be written (${error.message}): ${who} ${entry.action} ${entry.machine ?? ''}\n`);
    });
  }

  /** The audit log's entries `filter` asks for: admins only. */
  async auditEntries(principal: Principal, filter: AuditFilter): Promise<AuditEntry[]> {
    this.#requireAdmin(principal, 'read the audit log');
    return this.audit.read(filter);
  }

  /** `GET /v1/whoami`: the person (and what the key may do), or the operator. */
  whoami(principal: Principal, fallback: string): { account: string; person?: string; scopes?: Scope[] } {
    if (principal.kind === 'operator') return { account: fallback };
    return { account: principal.person, person: principal.person, scopes: SCOPES.filter((s) => principal.scopes.has(s)) };
  }

  #isOperatorToken(presented: string): boolean {
    const candidate = Buffer.from(presented);
    return candidate.length === this.#operatorToken.length && timingSafeEqual(candidate, this.#operatorToken);
  }

  #requireAdmin(principal: Principal, what: string): void {
    if (!isAdmin(principal)) throw missingScope('admin', what);
  }

  async #document(): Promise<TeamDocument> {
    const document = await this.store.read();
    if (!document) throw notATeam();
    return document;
  }

  #change<T>(change: (document: TeamDocument) => T): Promise<T> {
    return this.store.change((document) => {
      if (!document) throw notATeam();
      const answer = change(document);
      return { document, answer };
    });
  }

  #changeRecord(machine: string, change: (record: MachineAccessRecord, document: TeamDocument) => void): Promise<Share[]> {
    return this.#change((document) => {
      const record = document.machines[machine];
      if (!record) throw new ForeverVMError(409, 'NotOwned', `Machine ${machine} belongs to no person: give it to one first ("perennial team give")`);
      change(record, document);
      return record.shares;
    });
  }
}

const SCOPE_FOR: Record<Right, Scope> = { read: 'read', run: 'run', own: 'manage' };
const RIGHT_WORDS: Record<Right, string> = { read: 'read', run: 'run code on', own: 'change or delete' };

function rightIn(document: TeamDocument | undefined, principal: Principal, machine: string): Right | undefined {
  if (principal.kind === 'operator' || !document) return 'own';
  const record = document.machines[machine];
  if (!record) return undefined;
  if (record.owner === principal.person) return 'own';
  const shares = record.shares.filter((s) => s.with === principal.person || s.with === EVERYONE);
  if (shares.some((s) => s.right === 'run')) return 'run';
  return shares.length ? 'read' : undefined;
}

function effectiveScopes(scopes: readonly Scope[], person: Person): ReadonlySet<Scope> {
  return new Set(scopes.filter((scope) => scope !== 'admin' || person.admin));
}

function isAdmin(principal: Principal): boolean {
  return hasScope(principal, 'admin');
}

function keyState(key: Key): TeamKey['state'] {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= Date.now()) return 'expired';
  return 'active';
}

function keyInfo(key: Key): TeamKey {
  const { hash: _hash, ...rest } = key;
  return { ...rest, state: keyState(key) };
}

function personName(name: string): string {
  const parsed = PersonName.safeParse(name);
  if (!parsed.success) throw new ForeverVMError(400, 'BadRequest', `${JSON.stringify(name)}: ${parsed.error.issues[0]!.message}`);
  return parsed.data;
}

function notFoundMessage(machine: string): string {
  return `Machine ${machine} does not exist (it may have been deleted)`;
}

/** The answer for a machine that does not exist for the asker: the same words as for one that does not exist at all. */
export function machineNotFound(machine: string): ForeverVMError {
  return new ForeverVMError(404, 'MachineNotFound', notFoundMessage(machine), machine);
}

function missingScope(scope: Scope, what: string): ForeverVMError {
  return new ForeverVMError(403, 'MissingScope', `This key may not ${what}: it needs the ${scope} scope`);
}

function quotaExceeded(message: string): ForeverVMError {
  return new ForeverVMError(403, 'QuotaExceeded', `Over quota: ${message}`);
}

function noSuchPerson(name: string): ForeverVMError {
  return new ForeverVMError(404, 'PersonNotFound', `No one called ${name} is in the team`);
}

function notATeam(): ForeverVMError {
  return new ForeverVMError(409, 'NotATeam', 'This server serves one person: make it a team\'s with "perennial team init --owner NAME"');
}
