// Reading keyset pages one after another, with the next page already on its way (report
// generation reads its rows this way; nothing here knows a domain).

/**
 * Keyset pages, in order, with the next page already being read while the caller writes the
 * current one: the database and the formatting overlap instead of taking turns. cursorAfter
 * names where the following page starts, or null when this page was the last.
 */
export async function* keysetPages<P, C>(read: (after: C | null) => Promise<P>, cursorAfter: (page: P) => C | null): AsyncGenerator<P> {
  let page = await read(null);
  for (;;) {
    const cursor = cursorAfter(page);
    const next = cursor === null ? null : read(cursor);
    // Awaited below; if the caller stops early, a failure of the read ahead is of no interest.
    next?.catch(() => {});
    yield page;
    if (!next) return;
    page = await next;
  }
}

/** The cursor after a page of rows: null when the page came back short (it was the last). */
export const afterLastRow = <T, C>(pageSize: number, cursorOf: (row: T) => C) => (page: T[]): C | null =>
  page.length < pageSize ? null : cursorOf(page[page.length - 1]!);
