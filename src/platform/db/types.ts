import type { Generated } from 'kysely';

/** A row type whose listed columns have database defaults, so inserts may leave them out. */
export type WithDefaults<T, K extends keyof T> = Omit<T, K> & { [P in K]: Generated<T[P]> };
