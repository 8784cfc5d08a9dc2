import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../platform/atomic-file.ts';
import { CodedError } from '../platform/coded-error.ts';
import { TEAM_FORMAT, TeamDocument } from './team-document.ts';

/**
 * Where a team's document lives: the data dir's `team.json` on one computer, the database in a
 * cluster. A store with no document is a server for one person.
 */
export interface TeamStore {
  /**
   * The document as it is now, or none: not a team's server. A cluster's is at most a moment old
   * unless `fresh` asks for the database's now, which a refusal does before it is given (a key or
   * share made on another node a moment ago is then found).
   */
  read(fresh?: boolean): Promise<TeamDocument | undefined>;
  /** Applies `change` to the newest document and writes it whole; answers what `change` answered. Throwing writes nothing. */
  change<T>(change: (document: TeamDocument | undefined) => { document: TeamDocument; answer: T }): Promise<T>;
}

/** A team's document this build cannot read (a later format, or damaged): nothing is served rather than serving it wrong. */
export class TeamDocumentError extends CodedError {
  static override readonly errorCode = 'TeamDocumentUnreadable';
}

export const TEAM_FILE = 'team.json';

/** Reads a team's document from its JSON text, refusing a later format or a damaged one by name. */
export function parseTeamDocument(text: string, where: string): TeamDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new TeamDocumentError(`${where} is not JSON: it was left as it is, and the server does not start until it is repaired or restored`);
  }
  return readTeamDocument(raw, where);
}

/** Reads a team's document from its parsed JSON (a database's column), as `parseTeamDocument`. */
export function readTeamDocument(raw: unknown, where: string): TeamDocument {
  const format = (raw as { format?: unknown } | null)?.format;
  if (typeof format === 'number' && format > TEAM_FORMAT)
    throw new TeamDocumentError(
      `${where} is of format ${format}, written by a later Perennial (this one reads ${TEAM_FORMAT}): run that build, or a later one`,
    );
  const parsed = TeamDocument.safeParse(raw);
  if (!parsed.success) throw new TeamDocumentError(`${where} is damaged (${parsed.error.issues[0]?.message ?? 'unreadable'}): it was left as it is`);
  return parsed.data;
}

/** The team of one computer's server: `team.json` in its data dir (0600), replaced whole by rename. */
export class FileTeamStore implements TeamStore {
  readonly #path: string;
  #document: TeamDocument | undefined;
  #loaded = false;
  /** Changes one after another: each reads what the one before wrote. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.#path = join(dataDir, TEAM_FILE);
  }

  async read(): Promise<TeamDocument | undefined> {
    if (!this.#loaded) {
      const text = await readFile(this.#path, 'utf8').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      this.#document = text === undefined ? undefined : parseTeamDocument(text, this.#path);
      this.#loaded = true;
    }
    return this.#document;
  }

  change<T>(change: (document: TeamDocument | undefined) => { document: TeamDocument; answer: T }): Promise<T> {
    const next = this.#queue.then(async () => {
      const current = await this.read();
      const { document, answer } = change(current === undefined ? undefined : structuredClone(current));
      await writeFileAtomic(this.#path, JSON.stringify(document, null, 2) + '\n', 0o600);
      this.#document = document;
      return answer;
    });
    this.#queue = next.catch(() => {});
    return next;
  }
}
