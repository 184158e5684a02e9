// The dashboard page: sign-in, Transfers, Developers › API Keys, Reports, and for the service
// operator's staff the review queue. Every call goes through api.js;
// everything the API answers is put on the page as text, never as markup.
import { ApiError, EXPORTS, dashboardClient, fetchSend } from './api.js';

const client = dashboardClient(fetchSend());

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} type
 * @returns {T}
 */
function byId(id, type) {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return element;
}

const VIEWS = {
  'sign-in': byId('sign-in-view', HTMLElement),
  transfers: byId('transfers-view', HTMLElement),
  'api-keys': byId('api-keys-view', HTMLElement),
  reports: byId('reports-view', HTMLElement),
  review: byId('review-view', HTMLElement),
};
/** Where each address leads, and who it is for: an organization's users, or the operator's staff. */
const ROUTES = {
  '#/transfers': { view: 'transfers', for: 'customer' },
  '#/developers/api-keys': { view: 'api-keys', for: 'customer' },
  '#/reports': { view: 'reports', for: 'customer' },
  '#/review': { view: 'review', for: 'operator' },
};
/** @type {{ email: string, roles: string[] } | null} */
let user = null;
const notice = byId('notice', HTMLElement);

/** @param {unknown} err */
function showError(err) {
  notice.textContent = err instanceof ApiError ? `${err.message} (${err.code})` : String(err instanceof Error ? err.message : err);
  notice.hidden = false;
  if (err instanceof ApiError && err.status === 401) void route();
}

/**
 * Runs an action of the page, reporting its failure instead of losing it.
 * @param {() => Promise<void>} action
 */
function attempt(action) {
  notice.hidden = true;
  action().catch(showError);
}

/**
 * A text field of a submitted form ('' when absent).
 * @param {FormData} data
 * @param {string} name
 */
const field = (data, name) => {
  const value = data.get(name);
  return typeof value === 'string' ? value : '';
};

/** @param {string | null} iso */
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');

/**
 * @param {string} tag
 * @param {string} [text]
 */
function element(tag, text) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- views ----------------------------------------------------------------------------------

async function route() {
  const signedIn = client.signedIn && user !== null;
  // Operators act across organizations and have no keys or reports of their own; customers have no queue.
  const audience = user?.roles.includes('SERVICE_OPS') ? 'operator' : 'customer';
  const wanted = Object.entries(ROUTES).find(([hash, r]) => hash === location.hash && r.for === audience)?.[1];
  const view = !signedIn ? 'sign-in' : (wanted?.view ?? (audience === 'operator' ? 'review' : 'transfers'));
  for (const [name, section] of Object.entries(VIEWS)) section.hidden = name !== view;
  byId('nav', HTMLElement).hidden = !signedIn;
  byId('who', HTMLElement).hidden = !signedIn;
  for (const link of document.querySelectorAll('#nav a')) {
    if (!(link instanceof HTMLElement)) continue;
    link.hidden = link.dataset.for !== audience;
    link.classList.toggle('current', link.dataset.view === view);
  }
  if (view === 'api-keys') await showApiKeys();
  if (view === 'transfers') await showTransfers(true);
  if (view === 'review') await showReview(true);
}

byId('sign-in', HTMLFormElement).addEventListener('submit', (event) => {
  event.preventDefault();
  const form = new FormData(byId('sign-in', HTMLFormElement));
  attempt(async () => {
    user = await client.signIn(field(form, 'email'), field(form, 'password'));
    byId('sign-in', HTMLFormElement).reset();
    byId('who-email', HTMLElement).textContent = user?.email ?? '';
    await route();
  });
});

byId('sign-out', HTMLButtonElement).addEventListener('click', () => {
  client.signOut();
  user = null;
  attempt(route);
});

window.addEventListener('hashchange', () => attempt(route));

// ---- Transfers ----------------------------------------------------------------------------------

/**
 * @param {any} transfer
 * @param {'quoted' | 'actual'} which
 */
const pays = (transfer, which = 'quoted') => `${transfer[which].sourceAmount ?? '—'} ${transfer.sourceAsset}`;
/** @param {any} transfer */
const delivers = (transfer) => `${transfer.actual.destinationAmount ?? transfer.quoted.destinationAmount} ${transfer.destinationAsset}`;

/** @type {string | null} */
let transfersCursor = null;

/** @param {boolean} fromStart */
async function showTransfers(fromStart) {
  const rows = byId('transfers', HTMLElement);
  const status = byId('transfer-status', HTMLSelectElement).value;
  const page = await client.transfers({ status, cursor: fromStart ? null : transfersCursor });
  if (fromStart) {
    rows.replaceChildren();
    byId('transfer-detail', HTMLElement).hidden = true;
  }
  transfersCursor = page.meta.nextCursor;
  byId('more-transfers', HTMLButtonElement).hidden = !transfersCursor;
  rows.append(
    ...page.data.map((/** @type {any} */ transfer) => {
      const row = element('tr');
      const open = element('button', transfer.id.slice(0, 8));
      open.title = transfer.id;
      open.addEventListener('click', () => attempt(() => showTransfer(transfer.id)));
      const link = element('td');
      link.append(open);
      row.append(element('td', when(transfer.createdAt)), link, element('td', transfer.status), element('td', transfer.blockingParty));
      row.append(element('td', pays(transfer)), element('td', delivers(transfer)), element('td', transfer.clientReference ?? ''));
      return row;
    }),
  );
}

/** @param {string} id */
async function showTransfer(id) {
  const transfer = await client.transfer(id);
  byId('transfer-title', HTMLElement).textContent = `Transfer ${transfer.id}: ${transfer.status}${transfer.statusReason ? ` (${transfer.statusReason})` : ''}`;
  byId('transfer-legs', HTMLElement).replaceChildren(
    ...transfer.legs.map((/** @type {any} */ leg) => {
      const row = element('tr');
      row.append(element('td', String(leg.position)), element('td', leg.kind), element('td', leg.provider), element('td', leg.status), element('td', leg.progressStage));
      row.append(element('td', `${leg.actualAmountIn ?? leg.quotedAmountIn} ${leg.fromAsset}`), element('td', `${leg.actualAmountOut ?? leg.quotedAmountOut} ${leg.toAsset}`), element('td', leg.providerReference ?? ''));
      return row;
    }),
  );
  byId('transfer-timeline', HTMLElement).replaceChildren(
    ...transfer.timeline.map((/** @type {any} */ item) => {
      const change =
        item.type === 'STATUS' ? `${item.previousStatus ?? 'created'} → ${item.status}` : `leg ${item.leg?.position}: ${item.leg?.status}${item.progressStage ? ` (${item.progressStage})` : ''}`;
      const row = element('tr');
      row.append(element('td', when(item.occurredAt)), element('td', change), element('td', item.blockingParty), element('td', item.reason ?? ''));
      return row;
    }),
  );
  byId('transfer-detail', HTMLElement).hidden = false;
}

byId('transfer-status', HTMLSelectElement).addEventListener('change', () => attempt(() => showTransfers(true)));
byId('more-transfers', HTMLButtonElement).addEventListener('click', () => attempt(() => showTransfers(false)));

// ---- Review queue (the operator's staff) ----------------------------------------------------------

/** @type {string | null} */
let reviewCursor = null;

/** @param {boolean} fromStart */
async function showReview(fromStart) {
  const rows = byId('review', HTMLElement);
  const page = await client.reviewQueue({ cursor: fromStart ? null : reviewCursor });
  if (fromStart) rows.replaceChildren();
  reviewCursor = page.meta.nextCursor;
  byId('more-review', HTMLButtonElement).hidden = !reviewCursor;
  rows.append(
    ...page.data.map((/** @type {any} */ transfer) => {
      const row = element('tr');
      row.append(element('td', when(transfer.updatedAt)), element('td', transfer.organizationId), element('td', transfer.id), element('td', pays(transfer)), element('td', delivers(transfer)));
      const actions = element('td');
      for (const decision of /** @type {const} */ (['approve', 'reject'])) {
        const button = element('button', decision === 'approve' ? 'Approve' : 'Reject');
        button.addEventListener('click', () => {
          const reason = prompt(`${decision === 'approve' ? 'Approve' : 'Reject'} transfer ${transfer.id}. Reason, recorded in its timeline (optional):`);
          if (reason === null) return;
          attempt(async () => {
            await client.decide(transfer.id, decision, reason.trim() || undefined);
            await showReview(true);
          });
        });
        actions.append(button);
      }
      row.append(actions);
      return row;
    }),
  );
}

byId('more-review', HTMLButtonElement).addEventListener('click', () => attempt(() => showReview(false)));

// ---- Developers › API Keys --------------------------------------------------------------------

async function showApiKeys() {
  const rows = byId('keys', HTMLElement);
  const keys = await client.apiKeys();
  rows.replaceChildren(
    ...keys.map((key) => {
      const row = element('tr');
      const scopes = element('td', key.scopes.join(', '));
      scopes.className = 'scopes';
      row.append(element('td', key.name), element('td', `${key.prefix}…${key.lastFour}`), scopes, element('td', when(key.createdAt)), element('td', when(key.lastUsedAt)));
      row.append(element('td', key.revokedAt ? `Revoked ${when(key.revokedAt)}` : 'Active'));
      const actions = element('td');
      if (!key.revokedAt) {
        const revoke = element('button', 'Revoke');
        revoke.addEventListener('click', () => {
          if (!confirm(`Revoke "${key.name}" (${key.prefix}…${key.lastFour})? Requests with it fail at once.`)) return;
          attempt(async () => {
            await client.revokeApiKey(key.id);
            await showApiKeys();
          });
        });
        actions.append(revoke);
      }
      row.append(actions);
      return row;
    }),
  );
}

byId('new-key', HTMLButtonElement).addEventListener('click', () =>
  attempt(async () => {
    const scopes = await client.scopes();
    const fieldset = byId('scopes', HTMLFieldSetElement);
    fieldset.replaceChildren(
      element('legend', 'Permissions (choose only what the key needs)'),
      ...scopes.map((scope) => {
        const label = element('label');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.name = 'scope';
        box.value = scope;
        label.append(box, scope);
        return label;
      }),
    );
    byId('create-key', HTMLFormElement).hidden = false;
  }),
);

byId('cancel-key', HTMLButtonElement).addEventListener('click', () => {
  byId('create-key', HTMLFormElement).hidden = true;
});

byId('create-key', HTMLFormElement).addEventListener('submit', (event) => {
  event.preventDefault();
  const form = byId('create-key', HTMLFormElement);
  const data = new FormData(form);
  const scopes = data.getAll('scope').filter((value) => typeof value === 'string');
  attempt(async () => {
    if (!scopes.length) throw new Error('Choose at least one permission');
    const created = await client.createApiKey(field(data, 'name'), scopes);
    form.reset();
    form.hidden = true;
    byId('created-secret', HTMLElement).textContent = created.secret;
    byId('created-key', HTMLElement).hidden = false;
    await showApiKeys();
  });
});

byId('copy-secret', HTMLButtonElement).addEventListener('click', () => attempt(() => navigator.clipboard.writeText(byId('created-secret', HTMLElement).textContent ?? '')));

byId('done-secret', HTMLButtonElement).addEventListener('click', () => {
  // The secret leaves the page: it is never shown again.
  byId('created-secret', HTMLElement).textContent = '';
  byId('created-key', HTMLElement).hidden = true;
});

// ---- Reports ------------------------------------------------------------------------------------

const profile = byId('profile', HTMLSelectElement);
profile.append(...EXPORTS.map((e) => Object.assign(document.createElement('option'), { value: e.id, textContent: e.label })));
profile.addEventListener('change', () => {
  byId('iso-fields', HTMLFieldSetElement).hidden = profile.value !== 'pain002';
});

/** The report request the form describes. */
function exportRequest() {
  const data = new FormData(byId('export', HTMLFormElement));
  const chosen = EXPORTS.find((e) => e.id === profile.value) ?? EXPORTS[0];
  if (!chosen) throw new Error('no report profile');
  // datetime-local has no zone: the form's times are UTC, as the hint says.
  /** @param {string} name */
  const utc = (name) => {
    const local = field(data, name);
    return `${local}${local.length === 16 ? ':00' : ''}Z`;
  };
  /** @type {Record<string, unknown>} */
  const filters = { from: utc('from'), to: utc('to') };
  if (chosen.id === 'pain002') {
    filters.assetScope = 'FIAT';
    filters.originalMessageId = field(data, 'originalMessageId');
    filters.statuses = field(data, 'statuses')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
  return { ...chosen.request, filters };
}

byId('preview', HTMLButtonElement).addEventListener('click', () =>
  attempt(async () => {
    const preview = await client.previewReport(exportRequest());
    const result = byId('preview-result', HTMLElement);
    result.textContent =
      `${preview.matchingTransferCount} transfers, ${preview.outputRowCount} rows` +
      (preview.exceedsLimits ? ` — over the limit (${preview.exceeded.join(', ')}): narrow the window` : '');
    result.hidden = false;
  }),
);

byId('export', HTMLFormElement).addEventListener('submit', (event) => {
  event.preventDefault();
  const status = byId('export-status', HTMLElement);
  const download = byId('export-download', HTMLElement);
  download.hidden = true;
  attempt(async () => {
    status.hidden = false;
    status.textContent = 'Generating…';
    const report = await client.exportReport(exportRequest(), crypto.randomUUID(), {
      onPending: () => {
        status.textContent = 'Generating… (you can leave this page; the export carries on)';
      },
    });
    if (report.status === 'FAILED') {
      status.textContent = `Failed: ${report.errorMessage ?? report.errorCode}`;
      return;
    }
    status.textContent = `Ready: ${report.artifact.rowCount} rows, ${report.artifact.sizeBytes} bytes, SHA-256 ${report.artifact.sha256}`;
    const link = await client.downloadLink(report.id);
    const anchor = byId('download-link', HTMLAnchorElement);
    anchor.href = link.url;
    anchor.textContent = `Download (link valid until ${when(link.expiresAt)})`;
    download.hidden = false;
  });
});

attempt(route);
