/**
 * Notebooks nobody here wrote, run cell by cell: each code cell of the corpus that
 * `bench/notebooks/fetch.sh` fetches (statsmodels' and pandas' own example notebooks) goes verbatim
 * as one instruction to a python-engine machine on Debian's python3, once as it is and once with a
 * swap after every cell, and what it gives is compared with what Jupyter (ipykernel, through
 * nbclient: `notebooks/reference.py`) gives for the same cell.
 *
 * Counted: the cells that run cleanly under Jupyter, twice, with the same output both times (a cell
 * whose output differs between two Jupyter runs, such as a timing, is not deterministic there
 * either). Compared: stdout, stderr, the value's text, the error, the number of figures and the
 * displayed text. Every difference is written to bench/out/notebooks.md.
 *
 * `npm run bench -- notebooks [--fresh] [--only name,name]`: the Jupyter runs are kept in
 * bench/out/notebooks/ and reused; `--fresh` runs them again. Only run when named: the whole
 * corpus takes about 40 minutes on two cores.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MachineManager } from '../src/machines/machine-manager.ts';
import type { DisplayEntry, ExecResult, OutputChunk } from '../src/shared/types.ts';
import { resultImages } from '../src/shared/types.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CORPUS = join(ROOT, '.cache/notebook-corpus/notebooks');
const OUT = join(ROOT, 'bench/out/notebooks');
const CELL_TIMEOUT_S = 300;

/** What one cell gave, in the terms both sides are compared in. */
interface CellSummary {
  stdout: string;
  stderr: string;
  value: string | null;
  /** Jupyter's `ename: evalue`; Perennial's traceback, whose last lines carry the same. */
  error: string | null;
  figures: number;
  html: boolean;
  displayed: string[];
}
interface ReferenceCell extends Omit<CellSummary, 'error'> {
  source: string;
  ran: boolean;
  error: { ename: string; evalue: string } | null;
}
interface ReferenceNotebook {
  notebook: string;
  seconds: number;
  failure: string | null;
  cells: ReferenceCell[];
}
interface PerennialCell extends CellSummary {
  lost: string[];
}
type Field = 'stdout' | 'stderr' | 'value' | 'error' | 'figures' | 'displayed';
const FIELDS: Field[] = ['stdout', 'stderr', 'value', 'error', 'figures', 'displayed'];

/**
 * What varies between two runs of the same cell on either side for reasons no cell controls: object
 * addresses, and the file name a cell's code gets (ipykernel's is made from a hash and its pid).
 */
function normalize(text: string): string {
  return text
    .replace(/0x[0-9a-f]{6,16}/g, '0x…')
    .replace(/\/tmp\/ipykernel_\d+\/\d+\.py/g, '<cell>')
    .replace(/<cell \d+>|<perennial-cell-\d+>/g, '<cell>');
}

function normalizeNullable(text: string | null): string | null {
  return text === null ? null : normalize(text);
}

/** Stream text as lines, the unit Perennial's output chunks come in. */
function lines(text: string): string {
  return normalize(text.endsWith('\n') ? text.slice(0, -1) : text);
}

function perennialSummary(chunks: OutputChunk[], result: ExecResult): PerennialCell {
  const display: DisplayEntry[] = (result.data?.display as DisplayEntry[] | undefined) ?? [];
  const bundles = display.filter((d) => 'data' in d);
  const valueBundle = bundles.find((d) => d.result);
  const error = 'error' in result ? result.error : null;
  const streamText = (stream: string) =>
    normalize(
      chunks
        .filter((c) => c.stream === stream)
        .map((c) => c.data)
        .join('\n'),
    );
  return {
    stdout: streamText('stdout'),
    stderr: streamText('stderr'),
    value: error !== null ? null : normalizeNullable((valueBundle?.data['text/plain'] as string | undefined) ?? ('value' in result ? result.value : null)),
    error: error === null ? null : normalize(error),
    figures: resultImages(result).length,
    html: bundles.some((d) => 'text/html' in d.data),
    displayed: bundles
      .filter((d) => !d.result && !('image/png' in d.data) && typeof d.data['text/plain'] === 'string')
      .map((d) => normalize(d.data['text/plain'] as string)),
    lost: (result.data?.lost ?? []).map((item) => `${item.name} (${item.reason})`),
  };
}

function referenceField(cell: ReferenceCell, field: Field): unknown {
  if (field === 'stdout' || field === 'stderr') return lines(cell[field]);
  if (field === 'value') return normalizeNullable(cell.value);
  if (field === 'displayed') return cell.displayed.map(normalize);
  return cell[field];
}

function sameField(reference: ReferenceCell, ours: CellSummary, field: Field): boolean {
  if (field === 'error') {
    if (!reference.error || !ours.error) return reference.error === null && ours.error === null;
    const { ename, evalue } = reference.error;
    return normalize(ours.error).includes(normalize(evalue ? `${ename}: ${evalue}` : ename));
  }
  return JSON.stringify(referenceField(reference, field)) === JSON.stringify(ours[field]);
}

async function runReference(notebooks: string[], run: number, fresh: boolean): Promise<Map<string, ReferenceNotebook>> {
  const dir = join(OUT, `jupyter-${run}`);
  const file = join(dir, 'cells.jsonl');
  if (fresh || !existsSync(file)) {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const started = performance.now();
    const child = spawn(PYTHON, [join(ROOT, 'bench/notebooks/reference.py'), dir, ...notebooks.map((n) => join(CORPUS, n))], { stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    if (code !== 0) throw new Error(`the Jupyter reference run ${run} exited with ${code}`);
    console.log(`  Jupyter run ${run}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  const parsed = (await readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ReferenceNotebook);
  return new Map(parsed.map((nb) => [nb.notebook, nb]));
}

async function runPerennial(manager: MachineManager, cells: ReferenceCell[], swapEachCell: boolean): Promise<PerennialCell[]> {
  const { name } = await manager.create({ engine: 'python', python: PYTHON });
  const results: PerennialCell[] = [];
  try {
    for (const cell of cells) {
      const chunks: OutputChunk[] = [];
      const { result } = await manager.run(name, cell.source, { timeoutSeconds: CELL_TIMEOUT_S, onOutput: (c) => chunks.push(c) });
      results.push(perennialSummary(chunks, result));
      if (swapEachCell) await manager.swap(name);
    }
  } finally {
    await manager.delete(name);
  }
  return results;
}

function percent(part: number, whole: number): string {
  return whole ? `${((100 * part) / whole).toFixed(1)} %` : '–';
}

/** Where two texts part, with some of what comes before, as one line of markdown. */
function difference(a: unknown, b: unknown): string {
  const [left, right] = [a, b].map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  let at = 0;
  while (at < left!.length && left![at] === right![at]) at++;
  const from = Math.max(0, at - 60);
  const show = (text: string) =>
    '`' +
    (from ? '…' : '') +
    text
      .slice(from, at + 120)
      .replace(/`/g, "'")
      .replace(/\n/g, '⏎') +
    (text.length > at + 120 ? '…' : '') +
    '`';
  return `${show(left!)} vs ${show(right!)}`;
}

function excerpt(text: string): string {
  return '`' + (text.length > 200 ? `${text.slice(0, 200)}…` : text).replace(/`/g, "'").replace(/\n/g, '⏎') + '`';
}

export async function benchNotebooks(): Promise<void> {
  if (!existsSync(CORPUS)) {
    console.log('notebooks: no corpus; fetch it with `bash bench/notebooks/fetch.sh` (Debian packages, no git)');
    return;
  }
  const fresh = process.argv.includes('--fresh');
  // `--only a,b`: the notebooks whose names contain one of these (to check a fix quickly).
  const only = process.argv[process.argv.indexOf('--only') + 1]?.split(',') ?? [];
  const notebooks = (await readdir(CORPUS))
    .filter((n) => n.endsWith('.ipynb') && (!process.argv.includes('--only') || only.some((part) => n.includes(part))))
    .sort();
  console.log(`notebooks: ${notebooks.length} from ${CORPUS} (${(await readFile(join(CORPUS, '../SOURCE'), 'utf8')).split('\n').slice(1).join('; ')})`);
  const first = await runReference(notebooks, 1, fresh);
  const second = await runReference(notebooks, 2, fresh);

  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-notebooks-'));
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 600_000 });
  const report: string[] = [];
  const tally = { cells: 0, ranInJupyter: 0, clean: 0, deterministic: 0, ipythonSyntax: 0, html: 0, htmlOurs: 0 };
  const matches = { plain: 0, swapped: 0 };
  const fieldMisses: Record<'plain' | 'swapped', Record<Field, number>> = {
    plain: Object.fromEntries(FIELDS.map((f) => [f, 0])) as Record<Field, number>,
    swapped: Object.fromEntries(FIELDS.map((f) => [f, 0])) as Record<Field, number>,
  };
  let swapDiffs = 0;
  let lostCells = 0;
  const started = performance.now();
  try {
    for (const [index, notebook] of notebooks.entries()) {
      const reference = first.get(notebook);
      const again = second.get(notebook);
      if (!reference || !again) continue;
      const notebookStarted = performance.now();
      // Side by side: the swapped run spends most of its time starting processes and importing.
      const [plain, swapped] = await Promise.all([runPerennial(manager, reference.cells, false), runPerennial(manager, reference.cells, true)]);
      const seconds = ((performance.now() - notebookStarted) / 1000).toFixed(0);
      console.log(`  ${index + 1}/${notebooks.length} ${notebook}: ${reference.cells.length} cells, ${seconds} s (Jupyter: ${reference.seconds} s)`);
      for (const [i, cell] of reference.cells.entries()) {
        tally.cells++;
        if (/^\s*[%!]|^\s*\w+\s*=\s*!|\?\s*$/m.test(cell.source)) tally.ipythonSyntax++;
        const ours = plain[i]!;
        const afterSwaps = swapped[i]!;
        const where = `${notebook} cell ${i + 1}`;
        const swapDiff = FIELDS.filter((f) => JSON.stringify(ours[f]) !== JSON.stringify(afterSwaps[f]));
        const deterministicInJupyter = FIELDS.every((f) => JSON.stringify(referenceField(cell, f)) === JSON.stringify(referenceField(again.cells[i]!, f)));
        if (afterSwaps.lost.length) {
          lostCells++;
          report.push(`- ${where}, after swaps: lost ${afterSwaps.lost.join(', ')}`);
        }
        if (swapDiff.length && deterministicInJupyter) {
          swapDiffs++;
          report.push(
            `- ${where}: the swapped run differs from the plain run in ${swapDiff.map((f) => `${f}: ${difference(ours[f], afterSwaps[f])}`).join('; ')}`,
          );
        }
        if (!cell.ran) continue;
        tally.ranInJupyter++;
        if (cell.error) continue;
        tally.clean++;
        if (!deterministicInJupyter) continue;
        tally.deterministic++;
        if (cell.html) {
          tally.html++;
          if (ours.html) tally.htmlOurs++;
        }
        for (const [mode, summary] of [
          ['plain', ours],
          ['swapped', afterSwaps],
        ] as const) {
          const missed = FIELDS.filter((f) => !sameField(cell, summary, f));
          for (const f of missed) fieldMisses[mode][f]++;
          if (!missed.length) matches[mode]++;
          else if (mode === 'plain' || swapDiff.length)
            report.push(
              `- ${where} (${mode}), Jupyter vs Perennial: ${missed.map((f) => `${f}: ${difference(referenceField(cell, f), summary[f])}`).join('; ')}\n  source: ${excerpt(cell.source)}`,
            );
        }
      }
    }
  } finally {
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  const figures = [
    `${tally.cells} code cells in ${notebooks.length} notebooks, ${tally.ipythonSyntax} of them with IPython syntax; ${tally.ranInJupyter} ran under Jupyter, ${tally.clean} cleanly, ${tally.deterministic} of those with the same output in both Jupyter runs`,
    `same as Jupyter, no swaps: ${matches.plain} / ${tally.deterministic} (${percent(matches.plain, tally.deterministic)}); fields that differ: ${FIELDS.map((f) => `${f} ${fieldMisses.plain[f]}`).join(', ')}`,
    `same as Jupyter, a swap after every cell: ${matches.swapped} / ${tally.deterministic} (${percent(matches.swapped, tally.deterministic)}); fields that differ: ${FIELDS.map((f) => `${f} ${fieldMisses.swapped[f]}`).join(', ')}`,
    `cells whose output a swap after every cell changed (deterministic in Jupyter): ${swapDiffs}; cells whose result named a loss: ${lostCells}`,
    `cells Jupyter shows HTML for: ${tally.html}; Perennial gives HTML for ${tally.htmlOurs} of them`,
    `Perennial's two runs took ${((performance.now() - started) / 1000).toFixed(0)} s`,
  ];
  for (const line of figures) console.log(`  ${line}`);
  await mkdir(OUT, { recursive: true });
  await writeFile(
    join(OUT, '../notebooks.md'),
    `# Notebook corpus: differences\n\n${figures.map((l) => `- ${l}`).join('\n')}\n\n## Cells\n\n${report.join('\n')}\n`,
  );
  console.log(`  every difference: ${join(OUT, '../notebooks.md')}`);
}
