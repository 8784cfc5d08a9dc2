/**
 * What the rest of Perennial knows of an engine, all of it in one place: the machines layer, the
 * requests, the CLI, MCP and VS Code read it here and spell no engine's name themselves. An
 * engine's own folder holds its descriptor (`descriptor.ts`, plain data: every layer may import
 * it); `descriptors.ts` lists them.
 */
export interface EngineDescriptor<Name extends string = string> {
  /** What machines, requests, the CLI and settings call it. */
  readonly name: Name;
  /** One line for people choosing an engine: the CLI's help, MCP's tool description, VS Code's picker. */
  readonly summary: string;
  /** How its snapshot files begin: a machine whose manifest is lost is known by it. */
  readonly snapshotMagic: string;
  /** A machine's memory cap when it is made without one, MiB. */
  readonly defaultMemoryMb: number;
  /**
   * Its machines' own files are a folder beside the snapshot (which checkpoints and forks copy),
   * rather than inside the snapshot.
   */
  readonly filesBesideSnapshot: boolean;
  /**
   * Its machines reach nothing of the host but what they are given (the sandbox): on a team's
   * server, people make machines of these engines only; the others run as the server's user.
   */
  readonly confined: boolean;
  /** The options of a new machine it takes beyond the common ones; the others are dropped, as a client may send both sets. */
  readonly takes: { readonly python: boolean; readonly network: boolean; readonly workspace: boolean };
}
