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

/** Takes the lock or throws DataDirLockedError. A lock left by a dead process is taken over. */
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
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
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
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(fs.readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
        throw new DataDirLockedError(
          `Data directory ${dataDir} is in use by another Corridor process (pid ${holder}). ` +
            'Stop that process, or point CORRIDOR_DATA_DIR somewhere else.',
        );
      }
      // Stale lock from a process that died (or from this one): remove it and try once more.
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new DataDirLockedError(`Could not take the lock on ${dataDir}`);
}
