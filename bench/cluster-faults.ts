/**
 * A randomized fault run: three `perennial serve --cluster` nodes (python machines, lease 3 s) on
 * PostgreSQL and s3rver, agents each counting on a machine of its own through a random node at
 * every call (the ForeverVM HTTP API, as its SDK calls it), while nodes are killed (-9), paused
 * past their lease and stopped, at random, and started again. At the end every machine's counter
 * must equal the increments its agent was told ran, minus those the cluster named lost, plus those
 * that ran though the agent was not told (a call cut off by a dying node); and no instruction
 * number may have been given twice. Prints the counts; exits non-zero when either fails.
 * PERENNIAL_BENCH_SECONDS (default 120) and PERENNIAL_BENCH_AGENTS (default 8) size it.
 */
import { randomInt } from 'node:crypto';
import { startNode, type ClusterEngines, type TestNode } from '../test/helpers/cluster-nodes.ts';
import { startBucket, startPostgres } from '../test/helpers/cluster-services.ts';
import { TEST_PYTHON } from '../test/helpers/machines.ts';
import type { ExecResult, HistoryEntry } from '../src/shared/types.ts';
import { median, ms, percentile, row } from './stats.ts';

const LEASE_SECONDS = 3;
const NODES = 3;
/** An instruction's history entry, or its result, when the cluster says its effects were lost. */
const LOST = /stopped while this instruction ran|lost with the node that ran it/;
/** How often an agent asks for a result before it counts the call as one whose fate it does not know. */
const RESULT_ATTEMPTS = 100;
/** The most of a machine's history one request reads. */
const HISTORY_READ = 1000;

interface Slot {
  port: number;
  dataDir: string;
  node?: TestNode;
}

/** What one agent saw of its machine. */
interface Tally {
  name: string;
  /** Instruction numbers the agent was told ran, each with its result. */
  acknowledged: number[];
  /** Calls cut off where the instruction may have run (the agent never learned). */
  uncertain: number;
  /** Calls refused before anything ran (a node unreachable for longer than a lease, the database down). */
  refused: Map<string, number>;
  times: number[];
}

export async function benchClusterFaults(): Promise<void> {
  const seconds = Number(process.env.PERENNIAL_BENCH_SECONDS ?? 120);
  const agents = Number(process.env.PERENNIAL_BENCH_AGENTS ?? 8);
  process.env.PERENNIAL_PYTHON = TEST_PYTHON;
  console.log(`\nCluster under faults: ${NODES} nodes, ${agents} agents, ${seconds} s of kills, pauses and stops (lease ${LEASE_SECONDS} s)`);
  const postgres = await startPostgres();
  const bucket = await startBucket();
  Object.assign(process.env, bucket.env);
  const engines: ClusterEngines = { postgres, bucket, database: await postgres.database('faults') };
  const slots: Slot[] = [];
  // Every node started, each cleaned up at the end (the first on each data dir removes it).
  const started: TestNode[] = [];
  try {
    for (let i = 0; i < NODES; i++) {
      const node = await startNode(engines, { leaseSeconds: LEASE_SECONDS });
      started.push(node);
      slots.push({ port: Number(new URL(node.url).port), dataDir: node.dataDir, node });
    }
    const start = async (slot: Slot) => {
      slot.node = await startNode(engines, { leaseSeconds: LEASE_SECONDS, dataDir: slot.dataDir, port: slot.port });
      started.unshift(slot.node);
      return slot.node;
    };
    const token = slots[0]!.node!.token;
    const urls = slots.map((slot) => `http://127.0.0.1:${slot.port}`);
    const names: string[] = [];
    for (let i = 0; i < agents; i++) {
      const { name } = await slots[i % NODES]!.node!.client().create();
      await slots[i % NODES]!.node!.client().run(name, 'n = 0');
      names.push(name);
    }
    const deadline = Date.now() + seconds * 1000;
    const faults: string[] = [];
    const tallies = await Promise.all([
      ...names.map((name) => agent(name, urls, token, deadline)),
      chaos(slots, start, deadline, faults).then(() => undefined),
    ]);
    // Every node back, then the truth: each machine's counter and history.
    await Promise.all(slots.filter((slot) => !slot.node || slot.node.child.exitCode !== null || slot.node.child.signalCode !== null).map(start));
    let failed = false;
    console.log(`  faults: ${faults.join(', ')}`);
    row('machine', 'acknowledged', 'named lost', 'ran unacked', 'counter');
    const times: number[] = [];
    const refusals = new Map<string, number>();
    let uncertain = 0;
    for (const tally of tallies.filter((t): t is Tally => t !== undefined)) {
      times.push(...tally.times);
      uncertain += tally.uncertain;
      for (const [code, count] of tally.refused) refusals.set(code, (refusals.get(code) ?? 0) + count);
      const client = slots[0]!.node!.client();
      // A machine whose every change was lost (named) has no counter: 0.
      const counter = Number(valueOf((await client.run(tally.name, 'globals().get("n", 0)')).result));
      const history = (await client.history(tally.name, HISTORY_READ)).filter((h) => h.code === 'n += 1' || h.seq === 0 || LOST.test(describe(h)));
      if (history[0]?.seq !== 0) console.log(`    (${tally.name}: more than ${HISTORY_READ} instructions; its check is partial)`);
      const problems = check(tally, history, counter);
      const lost = history.filter((h) => LOST.test(describe(h))).map((h) => h.seq);
      const ran = history.filter((h) => h.code === 'n += 1' && !LOST.test(describe(h)) && !('error' in (h.result ?? {}))).map((h) => h.seq);
      const unacked = ran.filter((seq) => !tally.acknowledged.includes(seq)).length;
      const lostAcked = tally.acknowledged.filter((seq) => lost.includes(seq)).length;
      row(tally.name, String(tally.acknowledged.length), String(lostAcked), String(unacked), String(counter));
      for (const problem of problems) console.log(`    ✗ ${problem}`);
      failed ||= problems.length > 0;
    }
    row('calls acknowledged, p50 / p99 (while nodes fail)', ms(median(times)), ms(percentile(times, 99)));
    console.log(
      `  calls cut off where they may have run: ${uncertain}; refused before anything ran: ${[...refusals].map(([code, n]) => `${n} ${code}`).join(', ') || 'none'}`,
    );
    console.log(failed ? '  ✗ the counters or the instruction numbers do not add up' : '  ✓ every counter adds up, and no instruction number was given twice');
    if (failed) process.exitCode = 1;
  } finally {
    for (const node of started) await node.cleanup();
    await bucket.stop();
    await postgres.stop();
  }
}

/** One agent: `n += 1` on its machine through a random node, until `deadline`. */
async function agent(name: string, urls: string[], token: string, deadline: number): Promise<Tally> {
  const tally: Tally = { name, acknowledged: [], uncertain: 0, refused: new Map(), times: [] };
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const pick = () => urls[randomInt(urls.length)]!;
  while (Date.now() < deadline) {
    const started = performance.now();
    let seq: number;
    try {
      const exec = await fetch(`${pick()}/v1/machine/${name}/exec`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ instruction: { code: 'n += 1' } }),
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await exec.json()) as { instruction_seq?: number; code?: string };
      if (!exec.ok) {
        // A 502 came from a node that forwarded it to one that died with it: it may have run.
        if (exec.status === 502) tally.uncertain++;
        else tally.refused.set(body.code ?? String(exec.status), (tally.refused.get(body.code ?? String(exec.status)) ?? 0) + 1);
        await pause();
        continue;
      }
      seq = body.instruction_seq!;
    } catch (error) {
      // Refused before it was sent: nothing ran; cut off after: it may have.
      if ((error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED')
        tally.refused.set('ECONNREFUSED', (tally.refused.get('ECONNREFUSED') ?? 0) + 1);
      else tally.uncertain++;
      await pause();
      continue;
    }
    // The result is the machine's to give wherever it went: asked again through any node until it comes.
    for (let attempt = 0; ; attempt++) {
      if (attempt === RESULT_ATTEMPTS) {
        tally.uncertain++;
        break;
      }
      try {
        const answer = await fetch(`${pick()}/v1/machine/${name}/exec/${seq}/result`, { headers, signal: AbortSignal.timeout(30_000) });
        if (answer.ok) {
          const { result } = (await answer.json()) as { result: ExecResult };
          if (!('error' in result)) {
            tally.acknowledged.push(seq);
            tally.times.push(performance.now() - started);
          }
          break;
        }
      } catch {
        // that node went away: another one
      }
      await pause();
    }
    await pause();
  }
  return tally;
}

/** Kills, pauses and stops nodes at random (never the last one running), then starts them again. */
async function chaos(slots: Slot[], start: (slot: Slot) => Promise<TestNode>, deadline: number, faults: string[]): Promise<void> {
  while (Date.now() < deadline - 10_000) {
    await new Promise((resolve) => setTimeout(resolve, 3000 + randomInt(4000)));
    const slot = slots[randomInt(slots.length)]!;
    const node = slot.node!;
    const fault = (['kill -9', 'pause', 'stop'] as const)[randomInt(3)]!;
    faults.push(`${fault} :${slot.port}`);
    if (fault === 'pause') {
      node.child.kill('SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, (LEASE_SECONDS + 1 + randomInt(3)) * 1000));
      node.child.kill('SIGCONT');
      continue;
    }
    await (fault === 'kill -9' ? node.kill() : node.stop());
    await new Promise((resolve) => setTimeout(resolve, 1000 + randomInt(4000)));
    await start(slot);
  }
}

/** An agent's time between calls: it reads what came back. */
function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 100 + randomInt(200)));
}

function describe(entry: HistoryEntry): string {
  return `${entry.code} ${JSON.stringify(entry.result ?? null)}`;
}

function valueOf(result: ExecResult): string {
  if ('error' in result) throw new Error(result.error);
  return result.value ?? '';
}

/** What does not add up for one machine: its counter, and its numbers given twice. */
function check(tally: Tally, history: HistoryEntry[], counter: number): string[] {
  const problems: string[] = [];
  const twice = (seqs: number[]) => seqs.filter((seq, i) => seqs.indexOf(seq) !== i);
  if (twice(tally.acknowledged).length) problems.push(`instruction numbers acknowledged twice: ${twice(tally.acknowledged).join(', ')}`);
  const seqs = history.map((h) => h.seq);
  if (twice(seqs).length) problems.push(`instruction numbers twice in the history: ${twice(seqs).join(', ')}`);
  const lost = new Set(history.filter((h) => LOST.test(describe(h))).map((h) => h.seq));
  const ran = history.filter((h) => h.code === 'n += 1' && !lost.has(h.seq) && !('error' in (h.result ?? {}))).map((h) => h.seq);
  const missing = tally.acknowledged.filter((seq) => !lost.has(seq) && !ran.includes(seq));
  if (missing.length) problems.push(`acknowledged, neither in the history nor named lost: ${missing.join(', ')}`);
  const expected = tally.acknowledged.filter((seq) => !lost.has(seq)).length + ran.filter((seq) => !tally.acknowledged.includes(seq)).length;
  if (counter !== expected) problems.push(`counter ${counter}, expected ${expected}`);
  return problems;
}
