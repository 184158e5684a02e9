// The dashboard's conversation with the API, apart from the page: the same calls run in the
// browser (over fetch) and in the tests (over the test server), so what the page does is tested
// against a real server. It holds the signed-in user's bearer token and nothing else.

/**
 * @typedef {{ status: number, body: any }} Answer
 * @typedef {(method: string, path: string, options: { token: string | null, body?: unknown, headers?: Record<string, string> }) => Promise<Answer>} Send
 */

/** An error answer of the API: its HTTP status and its {code, message}. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {{ code?: string, message?: string } | null} body
   */
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? 'http_error';
  }
}

/**
 * Sends over fetch to the server the page came from.
 * @returns {Send}
 */
export function fetchSend() {
  return async (method, path, { token, body, headers = {} }) => {
    /** @type {Record<string, string>} */
    const all = { ...headers };
    if (token) all.authorization = `Bearer ${token}`;
    if (body !== undefined) all['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers: all, body: body === undefined ? null : JSON.stringify(body), credentials: 'omit' });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
}

/**
 * A query string of the parameters that have a value.
 * @param {Record<string, string | null | undefined>} parameters
 */
function query(parameters) {
  /** @type {Record<string, string>} */
  const present = {};
  for (const [name, value] of Object.entries(parameters)) if (value) present[name] = value;
  return new URLSearchParams(present).toString();
}

/** The report exports the dashboard offers: one per report profile (SPEC.md "Report profiles"). */
export const EXPORTS = [
  { id: 'activity', label: 'Transfer activity (CSV, one row per transfer)', request: { type: 'TRANSFER_ACTIVITY', format: 'CSV', detailLevel: 'SUMMARY' } },
  { id: 'execution', label: 'Transfer activity by provider leg (CSV, one row per leg)', request: { type: 'TRANSFER_ACTIVITY', format: 'CSV', detailLevel: 'EXECUTION_PATH' } },
  { id: 'history', label: 'Status history (CSV, one row per status change)', request: { type: 'TRANSFER_STATUS_HISTORY', format: 'CSV', detailLevel: 'SUMMARY' } },
  { id: 'pain002', label: 'Payment status report (ISO 20022 pain.002.001.03)', request: { type: 'TRANSFER_STATUS_HISTORY', format: 'ISO20022_PAIN_002_001_03', detailLevel: 'SUMMARY' } },
];

/**
 * @param {Send} send
 * @param {{ sleep?: (ms: number) => Promise<void> }} [options]
 */
export function dashboardClient(send, options = {}) {
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  /** @type {string | null} */
  let token = null;

  /**
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, headers?: Record<string, string> }} [options]
   */
  async function call(method, path, options = {}) {
    const answer = await send(method, path, { token, ...options });
    if (answer.status >= 400) {
      // A token past its 15 minutes: the page asks for the password again.
      if (answer.status === 401) token = null;
      throw new ApiError(answer.status, answer.body);
    }
    return answer.body;
  }

  return {
    get signedIn() {
      return token !== null;
    },

    /**
     * Exchanges an email and password for a bearer token; answers the signed-in user.
     * @param {string} email
     * @param {string} password
     */
    async signIn(email, password) {
      const answer = await call('POST', '/v1/auth/token', { body: { email, password } });
      token = answer.accessToken;
      return call('GET', '/v1/users/me');
    },

    signOut() {
      token = null;
    },

    /** The scopes an API key can carry, as the API document lists them. */
    async scopes() {
      const doc = await call('GET', '/v1/openapi.json');
      /** @type {string[]} */
      const scopes = doc.paths['/v1/api-keys'].post.requestBody.content['application/json'].schema.properties.scopes.items.enum;
      return scopes;
    },

    /** Every API key of the organization, revoked ones included, oldest first. */
    async apiKeys() {
      /** @type {any[]} */
      const keys = [];
      /** @type {string | null} */
      let cursor = null;
      do {
        const page = await call('GET', `/v1/api-keys?${query({ limit: '100', cursor })}`);
        keys.push(...page.data);
        cursor = page.meta.nextCursor;
      } while (cursor);
      return keys;
    },

    /**
     * Creates an API key; the answer holds its secret, which is never shown again.
     * @param {string} name
     * @param {string[]} scopes
     */
    createApiKey(name, scopes) {
      return call('POST', '/v1/api-keys', { body: { name, scopes } });
    },

    /** @param {string} id */
    revokeApiKey(id) {
      return call('DELETE', `/v1/api-keys/${encodeURIComponent(id)}`);
    },

    /**
     * One page of the organization's transfers, newest first as the API lists them.
     * @param {{ status?: string, cursor?: string | null }} [query]
     */
    transfers({ status, cursor } = {}) {
      return call('GET', `/v1/transfers?${query({ limit: '25', status, cursor })}`);
    },

    /** @param {string} id a transfer, with its legs and timeline */
    transfer(id) {
      return call('GET', `/v1/transfers/${encodeURIComponent(id)}`);
    },

    /**
     * Operators (SERVICE_OPS): one page of the review queue, IN_REVIEW transfers of every
     * organization, the longest waiting first.
     * @param {{ cursor?: string | null }} [query]
     */
    reviewQueue({ cursor } = {}) {
      return call('GET', `/v1/ops/transfers?${query({ limit: '25', cursor })}`);
    },

    /**
     * Operators: approve or reject a transfer in review; the reason goes into its timeline.
     * @param {string} id
     * @param {'approve' | 'reject'} decision
     * @param {string} [reason]
     */
    decide(id, decision, reason) {
      return call('POST', `/v1/ops/transfers/${encodeURIComponent(id)}/${decision}`, { body: reason ? { reason } : {} });
    },

    /**
     * What an export would hold, before it is made (needs reports:read).
     * @param {object} request the report request: type, format, detailLevel, filters
     */
    previewReport(request) {
      return call('POST', '/v1/reports/preview', { body: request });
    },

    /**
     * Starts an export (needs reports:write) and waits until it is READY or FAILED.
     * The Idempotency-Key makes a retried click the same export, not a second one.
     * @param {object} request
     * @param {string} idempotencyKey
     * @param {{ pollMs?: number, onPending?: (report: any) => void }} [options]
     */
    async exportReport(request, idempotencyKey, { pollMs = 1000, onPending } = {}) {
      let report = await call('POST', '/v1/reports', { body: request, headers: { 'idempotency-key': idempotencyKey } });
      while (report.status === 'PENDING') {
        onPending?.(report);
        await sleep(pollMs);
        report = await call('GET', `/v1/reports/${encodeURIComponent(report.id)}`);
      }
      return report;
    },

    /**
     * A short-lived link to a READY export's file (needs reports:read).
     * @param {string} reportId
     */
    downloadLink(reportId) {
      return call('POST', `/v1/reports/${encodeURIComponent(reportId)}/download`);
    },
  };
}
