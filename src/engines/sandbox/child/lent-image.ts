/**
 * A load's image as it arrives: its patch comes in parts, some sent with the load, the rest (memory
 * stored raw) read here from the image file the host lent the sandbox (see `Mailbox.lend`).
 */
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { MAILBOX_FILES } from '../mailbox.ts';
import type { ArrivedImage, LoadImage, PatchPart } from '../protocol.ts';
import { readFully } from './heap-pages.ts';

/** `image` with its patch put together, reading what it names of the lent file in `mailbox`. */
export function arrivedImage(image: LoadImage, mailbox: string): ArrivedImage {
  if (!('patch' in image)) return image;
  return { ...image, patch: gatherPatch(image.patch, mailbox) };
}

function gatherPatch(parts: PatchPart[], mailbox: string): Uint8Array {
  const [only] = parts;
  if (parts.length === 1 && only instanceof Uint8Array) return only;
  const patch = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let fd: number | undefined;
  try {
    let at = 0;
    for (const part of parts) {
      if (part instanceof Uint8Array) patch.set(part, at);
      else {
        fd ??= openSync(join(mailbox, MAILBOX_FILES.image), 'r');
        readFully(fd, patch.subarray(at, at + part.length), part.at, 'the image file is shorter than its header says');
      }
      at += part.length;
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return patch;
}
