// Statements built once. A query the service runs on every request is written with the query
// builder like any other, but built and compiled a single time, with a marker standing for each
// value; each run then sends the same SQL text with that run's values in the markers' places.
// Building and compiling a query cost about as much as running a cheap one, and a new SQL string
// on every run also had to be hashed again to find its prepared statement.
import { CompiledQuery } from 'kysely';
import type { Compilable, Kysely, RawBuilder, Transaction } from 'kysely';
import { PLAN_EACH_RUN } from './database.ts';

class Marker {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

type Executor = Kysely<any> | Transaction<any>;

/** The values a statement takes, by name; the builder sees a marker in the place of each. */
export type Values = Record<string, unknown>;

export interface Statement<V extends Values, R> {
  /** Runs the statement with these values, on the database or inside a transaction. */
  run(on: Executor, values: V): Promise<R[]>;
  /** The SQL text, the same string on every run (known once it has run). */
  readonly sql: string;
}

/**
 * Builds `build`'s query once, on its first run. `planEachRun` keeps the server from freezing one
 * plan for it (PLAN_EACH_RUN): for lookups joined to their tables by a list of keys, whose best
 * plan changes as the tables grow. Wherever the query uses `values.x`, each run passes its own x as
 * that parameter; anything else the builder made a parameter (a constant) is passed as it was.
 * The query's shape must not depend on the values: build it as if they were opaque.
 *
 * `planFirstRuns` plans only the first runs each time, then lets the server keep a plan: for a
 * statement whose lookups must become index scans once its tables have grown (guard.ts), but
 * which costs enough to plan that planning it every time was 7% of a creation's CPU.
 */
export function statement<V extends Values, R = Record<string, unknown>>(
  build: (values: V) => Compilable<R> | RawBuilder<R>,
  options: { planEachRun?: boolean; planFirstRuns?: number } = {},
): Statement<V, R> {
  let compiled: { text: string; slots: Array<{ name: string } | { constant: unknown }> } | null = null;
  let planned = 0;
  const compile = (on: Executor) => {
    const markers = new Map<string, Marker>();
    const values = new Proxy({} as V, {
      get(_target, name) {
        if (typeof name !== 'string') return undefined;
        let marker = markers.get(name);
        if (!marker) markers.set(name, (marker = new Marker(name)));
        return marker;
      },
    });
    // A raw query compiles with the executor's compiler; a query builder has its own and
    // ignores the argument.
    const result = (build(values) as RawBuilder<R>).compile(on);
    return {
      text: options.planEachRun ? `${PLAN_EACH_RUN}${result.sql}` : result.sql,
      slots: result.parameters.map((p) => (p instanceof Marker ? { name: p.name } : { constant: p })),
    };
  };
  return {
    get sql() {
      if (!compiled) throw new Error('the statement is built on its first run');
      return compiled.text;
    },
    async run(on, given) {
      compiled ??= compile(on);
      const parameters = compiled.slots.map((slot) => ('name' in slot ? given[slot.name] : slot.constant));
      const planNow = options.planFirstRuns !== undefined && planned < options.planFirstRuns;
      if (planNow) planned++;
      const result = await on.executeQuery<R>(CompiledQuery.raw(planNow ? `${PLAN_EACH_RUN}${compiled.text}` : compiled.text, parameters));
      return result.rows;
    },
  };
}
