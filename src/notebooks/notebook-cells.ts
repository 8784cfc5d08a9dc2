import { readFile } from 'node:fs/promises';
import { z } from 'zod';

/** A code cell that ran, as the notebook file keeps it: its `In [n]` and its source. */
export interface RanCell {
  count: number;
  source: string;
}

/** What of an .ipynb file (nbformat 4) says which cells ran; the rest is never read. */
const NotebookFile = z.looseObject({
  cells: z.array(
    z.looseObject({
      cell_type: z.string(),
      execution_count: z.number().int().positive().nullish(),
      source: z.union([z.string(), z.array(z.string())]).default(''),
    }),
  ),
});

/** The cells of the notebook at `path` that ran, in its order; none when it cannot be read as a notebook. */
export async function ranCells(path: string): Promise<RanCell[]> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return [];
  let parsed: z.infer<typeof NotebookFile>;
  try {
    parsed = NotebookFile.parse(JSON.parse(text));
  } catch {
    return [];
  }
  return parsed.cells.flatMap((cell) =>
    cell.cell_type === 'code' && cell.execution_count
      ? [{ count: cell.execution_count, source: Array.isArray(cell.source) ? cell.source.join('') : cell.source }]
      : [],
  );
}
