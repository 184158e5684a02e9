// One process owns a data directory. PGlite has no server to arbitrate between two processes,
// so two writers on the same files would corrupt them; this lock makes the second one stop.
//
// The lock is a numbered claim file, `corridor.lock.<generation>`, holding the owner's pid; the
// highest generation is the lock. A claim is made by hard-linking a file that already holds the
// pid to the next generation's name: link(2) is atomic and fails when the name exists, so of
// several processes claiming the same generation exactly one wins, and nobody ever sees a claim
// without its pid. Taking over a dead process's lock is claiming the generation above it, never
// deleting it: an earlier version moved the stale file aside, and a process that moved a fresh
// lock by mistake and put it back could overwrite a third process's lock, leaving two owners.
// Claim files are only deleted by their owner when it stops, which also sweeps the stale ones
// below it.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.ts';

export class DataDirLockedError extends Error {}

const CLAIM = /^corridor\.lock\.(\d+)$/;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Locks held by this process. The file alone cannot say: a lock naming our own pid is treated as
// stale (after a container restart the new process often gets the crashed one's pid).
const heldHere = new Set<string>();

/** Claim generations present in the directory, highest first. */
function generations(dir: string): number[] {
  return fs
    .readdirSync(dir)
    .map((name) => CLAIM.exec(name)?.[1])
    .filter((g): g is string => g !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
}

const claimPath = (dir: string, generation: number) => path.join(dir, `corridor.lock.${generation}`);

/** The pid named by the current lock, or null when there is none. */
export function lockHolder(dataDir: string): number | null {
  const dir = fs.realpathSync(dataDir);
  for (const generation of generations(dir)) {
    try {
      return Number(fs.readFileSync(claimPath(dir, generation), 'utf8').trim());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return null;
}

/**
 * Takes the lock or throws DataDirLockedError. A lock left by a dead process is taken over.
 * Several processes starting at once on one directory end with exactly one owner.
 */
export function lockDataDir(dataDir: string): () => void {
  let dir: string;
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    dir = fs.realpathSync(dataDir);
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw new ConfigError([`CORRIDOR_DATA_DIR: cannot use ${dataDir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  if (heldHere.has(dir)) {
    throw new DataDirLockedError(`Data directory ${dataDir} is already open in this process.`);
  }
  // Each failed claim means another process claimed a generation meanwhile; the next look sees it.
  for (let attempt = 0; attempt < 100; attempt++) {
    const top = generations(dir)[0] ?? 0;
    if (top > 0) {
      let holder: number;
      try {
        holder = Number(fs.readFileSync(claimPath(dir, top), 'utf8').trim());
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // its owner stopped meanwhile
        throw err;
      }
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
        throw new DataDirLockedError(
          `Data directory ${dataDir} is in use by another Corridor process (pid ${holder}). ` +
            'Stop that process, or point CORRIDOR_DATA_DIR somewhere else.',
        );
      }
    }
    const generation = top + 1;
    if (claim(dir, generation, dataDir)) {
      heldHere.add(dir);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldHere.delete(dir);
        try {
          // Stale claims first, ours last: while ours is there nobody else can claim.
          for (const g of generations(dir).filter((g) => g < generation)) fs.rmSync(claimPath(dir, g), { force: true });
          fs.rmSync(claimPath(dir, generation), { force: true });
        } catch (err) {
          // The directory was removed under us: nothing is left to release, and a shutdown must not fail on it.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      };
    }
  }
  throw new DataDirLockedError(`Could not take the lock on ${dataDir}: too many processes are starting on it at once.`);
}

/** Claims `generation` for this process; false when another process holds that claim. */
function claim(dir: string, generation: number, dataDir: string): boolean {
  const written = path.join(dir, `corridor.lock.${process.pid}.pending`);
  fs.writeFileSync(written, String(process.pid));
  try {
    fs.linkSync(written, claimPath(dir, generation));
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    throw new ConfigError([`CORRIDOR_DATA_DIR: cannot lock ${dataDir}: the file system refused a hard link (${code ?? (err as Error).message})`]);
  } finally {
    fs.rmSync(written, { force: true });
  }
}
