// One process owns a data directory. PGlite has no server to arbitrate between two processes,
// so two writers on the same files would corrupt them; this lock makes the second one stop.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.ts';

export class DataDirLockedError extends Error {}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Locks held by this process. The file alone cannot say: a lock file naming our own pid is
// treated as stale (after a container restart the new process often gets the crashed one's pid).
const heldHere = new Set<string>();

/**
 * Takes the lock or throws DataDirLockedError. A lock left by a dead process is taken over.
 * Several processes starting at once on one directory end with exactly one owner: the lock file
 * is created exclusively, an empty one (its creator has not written its pid yet) is waited for
 * rather than taken for stale, and a stale one is moved aside atomically before it is replaced,
 * so two processes taking over the same stale lock cannot both win.
 */
export function lockDataDir(dataDir: string): () => void {
  let lockPath: string;
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    lockPath = path.join(fs.realpathSync(dataDir), 'corridor.lock');
    fs.accessSync(path.dirname(lockPath), fs.constants.W_OK);
  } catch (err) {
    throw new ConfigError([`CORRIDOR_DATA_DIR: cannot use ${dataDir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  if (heldHere.has(lockPath)) {
    throw new DataDirLockedError(`Data directory ${dataDir} is already open in this process.`);
  }
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (create(lockPath)) {
      let released = false;
      heldHere.add(lockPath);
      return () => {
        if (released) return;
        released = true;
        heldHere.delete(lockPath);
        try {
          if (fs.readFileSync(lockPath, 'utf8') === String(process.pid)) fs.unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    }
    const seen = read(lockPath);
    if (seen === null) continue; // released or moved aside meanwhile: try again
    if (!seen.content.trim() && Date.now() - seen.modifiedMs < EMPTY_LOCK_GRACE_MS) {
      // Its creator is between creating the file and writing its pid.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      continue;
    }
    const holder = Number(seen.content.trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
      throw new DataDirLockedError(
        `Data directory ${dataDir} is in use by another Corridor process (pid ${holder}). ` +
          'Stop that process, or point CORRIDOR_DATA_DIR somewhere else.',
      );
    }
    // Stale lock from a process that died (or from this one): move it aside, then try again.
    takeOver(lockPath, seen.content);
  }
  throw new DataDirLockedError(`Could not take the lock on ${dataDir}`);
}

/** An empty lock file younger than this is being written by its creator; older, it is stale. */
const EMPTY_LOCK_GRACE_MS = 1000;

/** Creates the lock file holding this pid; false when a lock file exists. */
function create(lockPath: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(lockPath, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    fs.writeSync(fd, String(process.pid));
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

function read(lockPath: string): { content: string; modifiedMs: number } | null {
  try {
    return { content: fs.readFileSync(lockPath, 'utf8'), modifiedMs: fs.statSync(lockPath).mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Removes the stale lock whose content was `stale`. A rename is atomic, so of several processes
 * taking over at once only one moves the stale file; one that finds it moved a live owner's new
 * lock instead puts it back, and sees that owner on its next try.
 */
function takeOver(lockPath: string, stale: string): void {
  const aside = `${lockPath}.${process.pid}.stale`;
  try {
    fs.renameSync(lockPath, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (fs.readFileSync(aside, 'utf8') !== stale) {
    fs.renameSync(aside, lockPath);
    return;
  }
  fs.rmSync(aside, { force: true });
}
