import { ResourceNotFoundError, type ContentBlock, type ReadResourceResult } from '@modelcontextprotocol/server';
import { resultImages, type ExecResult, type HistoryEntry, type ImageData, type ResultData } from '../shared/types.ts';

export const FIGURE_URI_TEMPLATE = 'perennial://machines/{replId}/figures/{seq}/{n}.png';

/** Figure `n` (from 1) of instruction `seq`. */
export function figureUri(replId: string, seq: number, n: number): string {
  return `perennial://machines/${replId}/figures/${seq}/${n}.png`;
}

/** A figure as a result's structured content names it. */
export interface FigureRef {
  uri: string;
  /** Whether the image itself is in the result, or only its link. */
  inline: boolean;
}

/**
 * An instruction's figures as result content: the first `inlineImages` as images, every one as a
 * resource link. The link of a figure already inline is for the user to open or save (VS Code
 * fetches image links for the model, which would send it twice); the others are for the model too.
 */
export function figureContent(
  replId: string,
  seq: number,
  images: ImageData[],
  inlineImages: number,
): { blocks: ContentBlock[]; refs: FigureRef[]; note: string | null } {
  const refs = images.map((_, i) => ({ uri: figureUri(replId, seq, i + 1), inline: i < inlineImages }));
  const blocks: ContentBlock[] = [
    ...images.slice(0, inlineImages).map((image): ContentBlock => ({ type: 'image', data: image.data, mimeType: image.mimeType })),
    ...images.map((image, i): ContentBlock => ({
      type: 'resource_link',
      uri: refs[i]!.uri,
      name: `figure-${seq}-${i + 1}.png`,
      title: `Figure ${i + 1} of instruction ${seq} in ${replId}`,
      mimeType: image.mimeType,
      size: Buffer.byteLength(image.data, 'base64'),
      ...(refs[i]!.inline ? { annotations: { audience: ['user'] } } : {}),
    })),
  ];
  const linked = refs.filter((ref) => !ref.inline).map((ref) => ref.uri);
  const shown = refs.length - linked.length;
  const inline = shown ? `${shown} shown inline, at most ${inlineImages} per result` : 'inline images are off';
  const note = linked.length
    ? `${refs.length} figure${refs.length === 1 ? '' : 's'}: ${inline}; read ${shown ? 'the rest' : 'them'} as resources: ${linked.join(', ')}`
    : null;
  return { blocks, refs, note };
}

/**
 * A machine's history as MCP gives it: each result's figures by their resource URIs
 * (`data.figures`) instead of their base64, which would make the history too big for clients.
 */
export function historyWithFigureLinks(replId: string, history: HistoryEntry[]): HistoryEntry[] {
  return history.map((entry) => {
    const count = entry.result ? resultImages(entry.result).length : 0;
    if (!entry.result?.data || !count) return entry;
    const data: ResultData = { ...entry.result.data, figures: Array.from({ length: count }, (_, i) => figureUri(replId, entry.seq, i + 1)) };
    delete data.png;
    delete data.images;
    return { ...entry, result: { ...entry.result, data } };
  });
}

/** Reads a figure resource from its instruction's result (`result`), kept in the machine's history. */
export async function readFigure(uri: string, seq: string, n: string, result: (seq: number) => Promise<ExecResult>): Promise<ReadResourceResult> {
  const image = /^\d{1,15}$/.test(seq) && /^[1-9]\d{0,5}$/.test(n) ? resultImages(await result(Number(seq)))[Number(n) - 1] : undefined;
  if (!image) throw new ResourceNotFoundError(uri, `Instruction ${seq} has no figure ${n}`);
  return { contents: [{ uri, mimeType: image.mimeType, blob: image.data }] };
}
