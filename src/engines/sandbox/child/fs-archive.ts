/**
 * An archive of MEMFS subtrees (a machine's files live in JavaScript, outside the memory
 * snapshot): `[u32 header length][JSON entries][file bytes]`, keeping modes, mtimes, symlinks and
 * empty folders.
 */

/** The part of Emscripten's FS that the archive uses. */
export interface EmscriptenFS {
  lstat(path: string): { mode: number; mtime: Date | number };
  isLink(mode: number): boolean;
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
  readlink(path: string): string;
  readdir(path: string): string[];
  readFile(path: string): Uint8Array;
  writeFile(path: string, data: Uint8Array, options?: { canOwn?: boolean }): void;
  mkdirTree(path: string): void;
  chmod(path: string, mode: number): void;
  utime(path: string, atime: number, mtime: number): void;
  symlink(target: string, path: string): void;
  unlink(path: string): void;
  lookupPath(path: string): { node: { mount: object } };
}

type Entry = { p: string; t: 'd'; m: number } | { p: string; t: 'l'; to: string } | { p: string; t: 'f'; m: number; o: number; n: number; mt: number };

export function archiveFiles(FS: EmscriptenFS, roots: string[]): Uint8Array {
  const entries: Entry[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  const walk = (path: string, mount: object) => {
    const stat = FS.lstat(path);
    if (FS.isLink(stat.mode)) entries.push({ p: path, t: 'l', to: FS.readlink(path) });
    else if (FS.isDir(stat.mode)) {
      // A host folder mounted below (a notebook's) is the person's, never the machine's to keep.
      if (FS.lookupPath(path).node.mount !== mount) return;
      entries.push({ p: path, t: 'd', m: stat.mode & 0o7777 });
      for (const name of FS.readdir(path)) if (name !== '.' && name !== '..') walk(`${path === '/' ? '' : path}/${name}`, mount);
    } else if (FS.isFile(stat.mode)) {
      const data = FS.readFile(path);
      entries.push({ p: path, t: 'f', m: stat.mode & 0o7777, o: offset, n: data.length, mt: +stat.mtime });
      chunks.push(data);
      offset += data.length;
    }
  };
  for (const root of roots) {
    try {
      FS.lstat(root);
    } catch {
      continue; // a root that does not exist (yet) has nothing to keep
    }
    walk(root, FS.lookupPath(root).node.mount);
  }
  const header = new TextEncoder().encode(JSON.stringify(entries));
  const out = new Uint8Array(4 + header.length + offset);
  new DataView(out.buffer).setUint32(0, header.length, true);
  out.set(header, 4);
  let position = 4 + header.length;
  for (const chunk of chunks) {
    out.set(chunk, position);
    position += chunk.length;
  }
  return out;
}

export function restoreFiles(FS: EmscriptenFS, archive: Uint8Array): number {
  const headerLength = new DataView(archive.buffer, archive.byteOffset, archive.byteLength).getUint32(0, true);
  const entries = JSON.parse(new TextDecoder().decode(archive.subarray(4, 4 + headerLength))) as Entry[];
  const base = 4 + headerLength;
  for (const entry of entries) {
    if (entry.t === 'd') {
      FS.mkdirTree(entry.p);
      FS.chmod(entry.p, entry.m);
    } else if (entry.t === 'l') {
      try {
        FS.unlink(entry.p);
      } catch {
        // nothing there yet
      }
      FS.symlink(entry.to, entry.p);
    } else {
      FS.writeFile(entry.p, archive.subarray(base + entry.o, base + entry.o + entry.n), { canOwn: false });
      FS.chmod(entry.p, entry.m);
      FS.utime(entry.p, entry.mt, entry.mt);
    }
  }
  return entries.length;
}
