// anchord explorer: a read-only view of the server's JSON APIs. Plain JavaScript, no build step.
// Everything the server sends is put on the page as text (textContent, attributes), never as
// markup: DID documents and batch files hold whatever their authors wrote.
'use strict';

(() => {
  const TOKEN_KEY = 'anchord-explorer-token';
  const POLL_MS = 2000;
  const PAGE = 50;

  const main = document.getElementById('main');
  const statusLine = document.getElementById('status');
  const authSection = document.getElementById('auth');
  const authForm = document.getElementById('auth-form');
  const authInput = document.getElementById('auth-token');
  const forgetButton = document.getElementById('forget-token');

  // Functions that stop what the current view started (polling, requests); run on leaving it.
  let leaving = [];
  // focusNext moves focus to the heading of the next view shown: after a navigation, so that a
  // screen reader announces the new view and the keyboard starts from it (not on first load).
  let focusNext = false;
  let rendered = false;

  // ---- DOM helpers ----

  // el builds an element: attrs are attributes (on* keys are listeners), children are nodes or
  // strings (as text), null and false are skipped, arrays are flattened.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    append(e, children);
    return e;
  }

  function append(parent, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    append(e, children);
    return e;
  }

  function show(title, ...content) {
    document.title = title + ' · anchord explorer';
    const h1 = el('h1', { tabindex: '-1' }, title);
    const active = document.activeElement;
    // A view shown in steps (loading, then loaded) keeps the focus on its heading.
    const refocus = focusNext || (active && active.tagName === 'H1' && main.contains(active));
    main.replaceChildren(h1, ...content.flat(Infinity).filter((c) => c));
    if (refocus) h1.focus();
    focusNext = false;
    announce(title);
    return h1;
  }

  function announce(msg) {
    statusLine.textContent = '';
    // A fresh text node is announced even when the message repeats.
    setTimeout(() => { statusLine.textContent = msg; }, 50);
  }

  function errorBox(msg) { return el('p', { class: 'error', role: 'alert' }, msg); }
  function notice(...msg) { return el('p', { class: 'notice' }, ...msg); }
  function badge(text, kind) { return el('span', { class: 'badge ' + (kind || '') }, text); }

  function statusBadge(status) {
    const kinds = { completed: 'ok', pending: 'warn', 'in-process': 'warn', failed: 'bad', delivered: 'ok', retrying: 'warn', parked: 'bad' };
    return badge(status, kinds[status] || 'info');
  }

  function time(iso) {
    if (!iso) return '—';
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    return el('time', { datetime: iso }, d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }));
  }

  function facts(pairs) {
    const dl = el('dl', { class: 'facts' });
    for (const [k, v] of pairs) {
      if (v === null || v === undefined) continue;
      dl.append(el('dt', null, k), el('dd', null, v));
    }
    return dl;
  }

  // table builds a scrollable table: columns are header labels (a leading '#' right-aligns the
  // column), rows are arrays of cells.
  // On a phone the rows stack, each cell under its column's name (data-label); the explicit roles
  // keep the table a table for screen readers once CSS changes its display.
  function table(caption, columns, rows) {
    const num = columns.map((c) => c.startsWith('#'));
    const labels = columns.map((c) => c.replace(/^#/, ''));
    const head = el('tr', { role: 'row' }, labels.map((c, i) => el('th', { scope: 'col', role: 'columnheader', class: num[i] ? 'num' : null }, c)));
    const body = rows.map((r) => el('tr', { role: 'row' }, r.map((cell, i) => el('td', { role: 'cell', 'data-label': labels[i], class: num[i] ? 'num' : null }, cell))));
    const t = el('table', { class: 'stack', role: 'table' }, el('caption', { class: caption ? null : 'visually-hidden' }, caption || labels.join(', ')),
      el('thead', { role: 'rowgroup' }, head), el('tbody', { role: 'rowgroup' }, body));
    // A focusable region lets a keyboard scroll a table wider than a phone.
    return el('div', { class: 'table-wrap', role: 'region', tabindex: '0', 'aria-label': caption || 'table' }, t);
  }

  function jsonBlock(value, label) {
    return el('pre', { class: 'json', tabindex: '0', 'aria-label': label || 'JSON' }, JSON.stringify(value, null, 2));
  }

  function fmt(n, digits) {
    if (typeof n !== 'number' || !isFinite(n)) return '—';
    return n.toLocaleString(undefined, { maximumFractionDigits: digits === undefined ? 1 : digits });
  }

  function age(seconds) {
    if (!(seconds > 0)) return '0 s';
    if (seconds < 60) return fmt(seconds, 1) + ' s';
    if (seconds < 3600) return fmt(seconds / 60, 1) + ' min';
    return fmt(seconds / 3600, 1) + ' h';
  }

  function short(s, n) {
    n = n || 12;
    return s.length > 2 * n + 1 ? s.slice(0, n) + '…' + s.slice(-n) : s;
  }

  // ---- URLs ----

  // DIDs keep their colons in the path, where they are legal, so a shared link stays readable.
  function didPath(did) { return '/explorer/did/' + encodeURIComponent(did).replace(/%3A/gi, ':'); }
  function anchorPath(seq) { return '/explorer/anchor/' + encodeURIComponent(seq); }
  function filePath(cid, kind) { return '/explorer/file/' + encodeURIComponent(cid) + (kind ? '?kind=' + encodeURIComponent(kind) : ''); }

  const kindNames = {
    coreIndex: 'core index', coreProof: 'core proof', provisionalIndex: 'provisional index',
    provisionalProof: 'provisional proof', chunk: 'chunk',
  };

  function fileLink(f) {
    return el('a', { href: filePath(f.cid, f.kind), class: 'cid' }, (kindNames[f.kind] || f.kind) + ' ', el('span', { class: 'mono' }, short(f.cid, 6)));
  }

  // ---- API ----

  class HTTPError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }
  class AuthNeeded extends Error {}

  function headers() {
    const h = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  // api GETs path and returns {status, body} (body parsed as JSON, or null). 401 shows the token
  // form and throws AuthNeeded.
  async function api(path, signal) {
    const resp = await fetch(path, { headers: { ...headers(), Accept: 'application/json' }, signal, cache: 'no-store' });
    if (resp.status === 401) { needToken(); throw new AuthNeeded(); }
    let body = null;
    try { body = await resp.json(); } catch (_) { body = null; }
    return { status: resp.status, body };
  }

  // apiOK is api for answers that must be 200.
  async function apiOK(path, signal) {
    const r = await api(path, signal);
    if (r.status !== 200) {
      const b = r.body || {};
      throw new HTTPError(r.status, b.code || 'http_' + r.status, b.message || 'the server answered ' + r.status);
    }
    return r.body;
  }

  async function raw(path, signal) {
    const resp = await fetch(path, { headers: headers(), signal });
    if (resp.status === 401) { needToken(); throw new AuthNeeded(); }
    return resp;
  }

  function needToken() {
    authSection.hidden = false;
    authInput.focus();
  }

  authForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = authInput.value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    authInput.value = '';
    authSection.hidden = true;
    forgetButton.hidden = false;
    render();
  });
  forgetButton.addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    forgetButton.hidden = true;
    announce('Token forgotten');
  });
  forgetButton.hidden = !sessionStorage.getItem(TOKEN_KEY);

  // ---- router ----

  const routes = [
    [/^\/explorer\/?$/, viewHome],
    [/^\/explorer\/did\/?$/, viewHome],
    [/^\/explorer\/did\/(.+)$/, viewDID],
    [/^\/explorer\/anchors\/?$/, viewAnchors],
    [/^\/explorer\/anchor\/([^/]+)$/, viewAnchor],
    [/^\/explorer\/file\/([^/]+)$/, viewFile],
    [/^\/explorer\/pipeline\/?$/, viewPipeline],
    [/^\/explorer\/federation\/?$/, viewFederation],
  ];

  function setNav(path) {
    const section = path.startsWith('/explorer/anchor') || path.startsWith('/explorer/file') ? 'anchors'
      : path.startsWith('/explorer/pipeline') ? 'pipeline'
        : path.startsWith('/explorer/federation') ? 'federation' : 'home';
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  async function render() {
    for (const stop of leaving) stop();
    leaving = [];
    const controller = new AbortController();
    leaving.push(() => controller.abort());
    focusNext = rendered;
    rendered = true;
    const path = location.pathname;
    setNav(path);
    const params = new URLSearchParams(location.search);
    for (const [re, view] of routes) {
      const m = path.match(re);
      if (!m) continue;
      let args;
      try {
        args = m.slice(1).map(decodeURIComponent);
      } catch (_) {
        show('Not found', errorBox('This address is not valid.'));
        return;
      }
      try {
        await view(args, params, controller.signal);
      } catch (err) {
        if (controller.signal.aborted || (err && err.name === 'AbortError')) return;
        if (err instanceof AuthNeeded) {
          show('Token needed', notice('Enter an API token above to see this page.'));
          return;
        }
        show('Something went wrong', errorBox(err instanceof HTTPError ? err.message : 'The server could not be reached.'));
      }
      return;
    }
    show('Not found', errorBox('There is no explorer view at this address.'), el('p', null, el('a', { href: '/explorer/' }, 'Go to the explorer\'s start page')));
  }

  function navigate(url) {
    history.pushState(null, '', url);
    render();
  }

  document.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('a[href]');
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !/^\/explorer(\/|$)/.test(url.pathname) || url.pathname.startsWith('/explorer/api/')) return;
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
  window.addEventListener('popstate', render);

  // ---- views ----

  function searchForm(value) {
    const input = el('input', {
      id: 'did-input', name: 'did', type: 'search', value: value || '', required: true, spellcheck: 'false',
      autocomplete: 'off', 'aria-describedby': 'did-hint', placeholder: 'did:…',
    });
    const form = el('form', { class: 'inline-form', role: 'search', 'aria-label': 'Look up a DID' },
      el('label', { for: 'did-input' }, 'DID'), input, el('button', { type: 'submit' }, 'Look up'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const did = input.value.trim();
      if (did) navigate(didPath(did));
    });
    return [form, el('p', { id: 'did-hint', class: 'hint' }, 'Short form (did:method:suffix) or long form (with its initial state).')];
  }

  function anchorRows(anchors) {
    return anchors.map((a) => [
      el('a', { href: anchorPath(a.seq) }, String(a.seq)), time(a.createdAt), fmt(a.operationCount, 0), statusBadge(a.status), a.backend,
    ]);
  }

  async function viewHome(_args, _params, signal) {
    show('Look up a DID', searchForm(''), el('p', { class: 'loading' }, 'Loading the latest anchors…'));
    const page = await apiOK('/explorer/api/anchors?limit=10', signal);
    main.querySelector('.loading').replaceWith(
      el('h2', null, 'Latest anchors'),
      page.anchors.length
        ? table('The ten latest anchors', ['#Sequence', 'Created', '#Operations', 'Status', 'Backend'], anchorRows(page.anchors))
        : notice('Nothing has been anchored yet.'),
      el('p', null, el('a', { href: '/explorer/anchors' }, 'All anchors')),
    );
  }

  async function viewDID([did], params, signal) {
    const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
    show('DID', el('p', { class: 'did mono' }, did), searchForm(did), el('p', { class: 'loading' }, 'Resolving…'));
    const enc = encodeURIComponent(did);
    const [res, hist] = await Promise.all([
      api('/sidetree/v1/identifiers/' + enc, signal),
      api('/explorer/api/dids/' + enc + '/operations?limit=' + PAGE + '&offset=' + offset, signal),
    ]);
    const out = [];
    const body = res.body || {};
    const meta = body.didDocumentMetadata || {};
    const method = meta.method || {};
    switch (res.status) {
      case 200:
        out.push(el('div', { class: 'state', 'data-state': 'active' }, el('strong', null, 'Active'), badge('200', 'ok'),
          method.published ? badge('published', 'ok') : badge('not published', 'warn'),
          method.published ? null : el('span', null, 'Not anchored yet: resolved from its long form.')));
        break;
      case 410:
        out.push(el('div', { class: 'state gone', 'data-state': 'deactivated' }, el('strong', null, 'Deactivated'), badge('410', 'bad'),
          el('span', null, 'A deactivate operation was anchored: the DID can no longer change.')));
        break;
      case 404:
        out.push(el('div', { class: 'state missing', 'data-state': 'not-found' }, el('strong', null, 'Not found'), badge('404', 'warn'),
          el('span', null, 'No create operation of this DID is anchored. One just submitted shows once its batch is anchored.')));
        break;
      case 400:
        out.push(errorBox('Not a DID of this server\'s method: ' + (body.message || 'invalid DID') + '.'));
        show('DID', el('p', { class: 'did mono' }, did), searchForm(did), out);
        return;
      default:
        out.push(errorBox('Resolution failed: ' + (body.message || 'the server answered ' + res.status) + '.'));
    }
    if (res.status === 200 || res.status === 410) {
      const doc = body.didDocument || {};
      out.push(facts([
        ['Canonical ID', meta.canonicalId ? el('span', { class: 'mono' }, meta.canonicalId) : null],
        ['Published', method.published === undefined ? null : (method.published ? 'yes' : 'no')],
        ['Update commitment', method.updateCommitment ? el('span', { class: 'mono' }, method.updateCommitment) : null],
        ['Recovery commitment', method.recoveryCommitment ? el('span', { class: 'mono' }, method.recoveryCommitment) : null],
        ['Anchor origin', method.anchorOrigin ? el('span', { class: 'mono', 'data-fact': 'anchor-origin' }, method.anchorOrigin) : null],
      ]));
      const keys = doc.verificationMethod || [];
      if (keys.length) {
        out.push(el('h2', null, 'Keys'), table('Verification methods', ['ID', 'Type', 'Controller'],
          keys.map((k) => [el('span', { class: 'mono' }, k.id || ''), k.type || '', el('span', { class: 'mono' }, k.controller || '')])));
      }
      const services = doc.service || [];
      if (services.length) {
        out.push(el('h2', null, 'Services'), table('Services', ['ID', 'Type', 'Endpoint'],
          services.map((s) => [el('span', { class: 'mono' }, s.id || ''), s.type || '', el('span', { class: 'mono' }, JSON.stringify(s.serviceEndpoint))])));
      }
      out.push(el('details', null, el('summary', null, 'Resolution result (JSON)'), jsonBlock(body, 'Resolution result')));
    }
    out.push(el('h2', { id: 'history' }, 'Operation history'));
    if (hist.status !== 200) {
      out.push(errorBox('The history could not be read: ' + ((hist.body && hist.body.message) || 'the server answered ' + hist.status) + '.'));
    } else if (!hist.body.operations.length) {
      out.push(notice(hist.body.total ? 'No operations on this page.' : 'No anchored operations.'));
    } else {
      const h = hist.body;
      out.push(table('Anchored operations of this DID, oldest first', ['#No.', 'Type', 'Anchor', 'Anchored', 'Batch files', 'Request'],
        h.operations.map((op, i) => [
          String(h.offset + i + 1),
          badge(op.type, op.type === 'deactivate' ? 'bad' : op.type === 'recover' ? 'warn' : 'info'),
          [el('a', { href: anchorPath(op.anchorSeq) }, String(op.anchorSeq)), ' ', op.anchorStatus ? statusBadge(op.anchorStatus) : null],
          time(op.anchoredAt),
          op.filesError ? el('span', { class: 'error' }, op.filesError) : el('ul', { class: 'files' }, op.files.map((f) => el('li', null, fileLink(f)))),
          op.request ? el('details', null, el('summary', null, 'Show'), jsonBlock(op.request, 'Operation request')) : '—',
        ])), pager(h.total, h.offset, PAGE, (o) => didPath(did) + (o ? '?offset=' + o : '')));
    }
    show('DID', el('p', { class: 'did mono' }, did), searchForm(did), out);
  }

  function pager(total, offset, size, href) {
    if (total <= size) return null;
    const last = Math.min(total, offset + size);
    return el('nav', { class: 'pager', 'aria-label': 'Pages' },
      offset > 0 ? el('a', { class: 'button secondary', href: href(Math.max(0, offset - size)) }, 'Previous') : null,
      el('span', null, `${fmt(offset + 1, 0)}–${fmt(last, 0)} of ${fmt(total, 0)}`),
      last < total ? el('a', { class: 'button secondary', href: href(offset + size) }, 'Next') : null);
  }

  async function viewAnchors(_args, params, signal) {
    const before = params.get('before');
    const q = '/explorer/api/anchors?limit=' + PAGE + (before ? '&before=' + encodeURIComponent(before) : '');
    const page = await apiOK(q, signal);
    show('Anchors',
      page.anchors.length
        ? table('Anchors, newest first', ['#Sequence', 'Created', '#Operations', 'Status', 'Backend'], anchorRows(page.anchors))
        : notice(before ? 'No older anchors.' : 'Nothing has been anchored yet.'),
      el('nav', { class: 'pager', 'aria-label': 'Pages' },
        before ? el('a', { class: 'button secondary', href: '/explorer/anchors' }, 'Newest') : null,
        page.next ? el('a', { class: 'button secondary', href: '/explorer/anchors?before=' + page.next }, 'Older') : null));
  }

  // record shows an anchor record: JSON when it is JSON, else its base64.
  function record(b64) {
    if (!b64) return null;
    try {
      const bin = atob(b64);
      const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
      return jsonBlock(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)), 'Anchor record');
    } catch (_) {
      return el('span', { class: 'mono' }, b64);
    }
  }

  async function viewAnchor([seq], params, signal) {
    const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
    const r = await api('/explorer/api/anchors/' + encodeURIComponent(seq) + '?limit=' + PAGE + '&offset=' + offset, signal);
    if (r.status === 404 || r.status === 400) {
      show('Anchor ' + seq, errorBox(r.status === 404 ? 'There is no anchor ' + seq + '.' : 'Not an anchor sequence number.'));
      return;
    }
    if (r.status !== 200) throw new HTTPError(r.status, '', (r.body && r.body.message) || 'the server answered ' + r.status);
    const d = r.body;
    const a = d.anchor;
    show('Anchor ' + a.seq,
      facts([
        ['Status', statusBadge(a.status)],
        ['Operations', fmt(a.operationCount, 0)],
        ['Backend', a.backend],
        ['Created', time(a.createdAt)],
        ['Completed', a.completedAt ? time(a.completedAt) : null],
        ['Observed', a.observedAt ? time(a.observedAt) : null],
        ['Anchor string', el('span', { class: 'mono' }, a.anchorString)],
        ['Failure', d.error || null],
      ]),
      a.record ? [el('h2', null, 'Record'), record(a.record)] : null,
      a.signature ? facts([['Signature', el('span', { class: 'mono' }, a.signature)]]) : null,
      a.credential ? [
        el('h2', null, 'Witnesses'),
        facts([['Credential', el('a', { href: '/vc/' + a.credential.split('/').pop(), class: 'mono' }, a.credential)]]),
        a.witnesses && a.witnesses.length
          ? table('Witnesses of this anchor', ['Witness', 'Roles', 'Asked', 'Proof'], a.witnesses.map((w) => [
            el('span', { class: 'mono' }, w.actor), w.roles.join(', '),
            w.selected ? time(w.offeredAt) : 'no', w.proofAt ? [badge('received', 'ok'), ' ', time(w.proofAt)] : badge(w.selected ? 'waiting' : '—', w.selected ? 'warn' : 'info'),
          ]))
          : notice('No witness was eligible: the policy needed none, or the status monitor is looking for one.'),
      ] : null,
      el('h2', null, 'Files'),
      d.filesError ? errorBox(d.filesError) : null,
      d.files.length ? table('Batch files of this anchor', ['File', 'CID'], d.files.map((f) => [
        kindNames[f.kind] || f.kind, el('a', { href: filePath(f.cid, f.kind), class: 'cid mono' }, f.cid),
      ])) : null,
      el('h2', null, 'Operations'),
      d.operations.length ? [
        table('Operations of this batch in anchor order', ['#Position', 'Type', 'DID'], d.operations.map((op) => [
          String(op.position), badge(op.type, op.type === 'deactivate' ? 'bad' : op.type === 'recover' ? 'warn' : 'info'),
          el('a', { href: didPath(op.did), class: 'did mono' }, op.did),
        ])),
        pager(d.total, d.offset, PAGE, (o) => anchorPath(a.seq) + (o ? '?offset=' + o : '')),
      ] : notice('No operations listed.'));
  }

  async function gunzip(bytes) {
    if (typeof DecompressionStream === 'undefined') throw new Error('no DecompressionStream');
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  // referenced finds the CAS URIs a batch file names, with their kinds.
  function referenced(json) {
    const out = [];
    const add = (kind, cid) => { if (typeof cid === 'string') out.push({ kind, cid }); };
    add('provisionalIndex', json.provisionalIndexFileUri);
    add('coreProof', json.coreProofFileUri);
    add('provisionalProof', json.provisionalProofFileUri);
    for (const c of Array.isArray(json.chunks) ? json.chunks : []) add('chunk', c && c.chunkFileUri);
    return out;
  }

  async function viewFile([cid], params, signal) {
    const kind = params.get('kind');
    const resp = await raw('/cas/' + encodeURIComponent(cid), signal);
    if (resp.status !== 200) {
      const b = await resp.json().catch(() => ({}));
      show('Batch file', el('p', { class: 'cid mono' }, cid),
        errorBox(resp.status === 404 ? 'No content is stored under this CID.' : (b.message || 'The server answered ' + resp.status + '.')));
      return;
    }
    const bytes = new Uint8Array(await resp.arrayBuffer());
    let content;
    let plain = null;
    try {
      plain = await gunzip(bytes);
    } catch (_) {
      plain = null;
    }
    const text = plain ? new TextDecoder().decode(plain) : null;
    let json = null;
    try { json = text === null ? null : JSON.parse(text); } catch (_) { json = null; }
    if (json !== null) content = jsonBlock(json, 'File content');
    else if (text !== null) content = el('pre', { class: 'json', tabindex: '0' }, text);
    else content = notice('This content is not gzip-compressed JSON; it is not a Sidetree batch file.');
    const refs = json && typeof json === 'object' ? referenced(json) : [];
    const download = el('button', { type: 'button', class: 'secondary' }, 'Download the stored bytes');
    download.addEventListener('click', () => {
      const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
      const a = el('a', { href: url, download: cid + (plain ? '.json.gz' : '') });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });
    show(kind && kindNames[kind] ? 'The ' + kindNames[kind] + ' file' : 'Batch file',
      facts([
        ['CID', el('span', { class: 'mono' }, cid)],
        // The stored bytes; where read tokens guard /cas/, the button below sends the token.
        ['Raw', el('a', { href: '/cas/' + encodeURIComponent(cid), class: 'mono' }, '/cas/' + cid)],
        ['Stored size', fmt(bytes.length, 0) + ' bytes' + (plain ? ' (gzip)' : '')],
        ['Decompressed', plain ? fmt(plain.length, 0) + ' bytes' : null],
      ]),
      el('p', null, download),
      refs.length ? [el('h2', null, 'Files it names'), el('ul', { class: 'files' }, refs.map((f) => el('li', null, fileLink(f))))] : null,
      el('h2', null, 'Content'),
      content);
  }

  // ---- pipeline ----

  function rateChart(history, intervalSeconds) {
    const W = 720; const H = 240; const L = 52; const R = 12; const T = 12; const B = 30;
    const n = history.length;
    const last = n ? history[n - 1] : null;
    const maxRate = Math.max(1, ...history.map((s) => Math.max(s.acceptedPerSecond, s.anchoredPerSecond)));
    const top = niceCeil(maxRate * 1.1);
    const t0 = n ? Date.parse(history[0].at) : 0;
    const t1 = n ? Date.parse(last.at) : 1;
    const span = Math.max(t1 - t0, intervalSeconds * 1000);
    const x = (s) => L + ((Date.parse(s.at) - t0) / span) * (W - L - R);
    const y = (v) => T + (1 - v / top) * (H - T - B);
    const label = n
      ? `Operations per second over the last ${age(span / 1000)}: now ${fmt(last.acceptedPerSecond)} accepted and ${fmt(last.anchoredPerSecond)} anchored per second.`
      : 'No samples yet.';
    const g = svg('svg', {
      viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, id: 'rate-chart',
      'data-samples': n, 'data-last': last ? last.at : '',
    });
    for (const v of [0, top / 2, top]) {
      g.append(svg('line', { class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }),
        svg('text', { class: 'tick', x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmt(v)));
    }
    g.append(svg('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }), svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
    g.append(svg('text', { class: 'tick', x: L, y: H - 10 }, '−' + age(span / 1000)), svg('text', { class: 'tick', x: W - R, y: H - 10, 'text-anchor': 'end' }, 'now'));
    if (n > 0) {
      const pts = (key) => history.map((s) => `${x(s).toFixed(1)},${y(s[key]).toFixed(1)}`).join(' ');
      g.append(svg('polyline', { class: 'line-accepted', points: pts('acceptedPerSecond') }),
        svg('polyline', { class: 'line-anchored', points: pts('anchoredPerSecond') }));
    }
    return el('figure', { class: 'chart' }, g,
      el('div', { class: 'legend', 'aria-hidden': 'true' }, el('span', { class: 'accepted' }, 'accepted / s'), el('span', { class: 'anchored' }, 'anchored / s')),
      el('figcaption', null, label));
  }

  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function batchChart(batches) {
    const W = 720; const H = 120; const pad = 4;
    const list = batches.slice().reverse();
    const max = Math.max(1, ...list.map((b) => b.operationCount));
    const bw = list.length ? (W - pad) / list.length : W;
    const label = list.length
      ? `Sizes of the ${list.length} latest batches, oldest left: from ${fmt(Math.min(...list.map((b) => b.operationCount)), 0)} to ${fmt(max, 0)} operations.`
      : 'No batches yet.';
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, id: 'batch-chart' });
    list.forEach((b, i) => {
      const h = Math.max(1, (b.operationCount / max) * (H - 2 * pad));
      g.append(svg('rect', { class: 'bar', x: pad + i * bw, y: H - pad - h, width: Math.max(1, bw - pad), height: h },
        svg('title', null, `Anchor ${b.seq}: ${b.operationCount} operations`)));
    });
    return el('figure', { class: 'chart' }, g, el('figcaption', null, label));
  }

  async function viewPipeline(_args, _params, signal) {
    let paused = false;
    let timer = null;
    leaving.push(() => clearTimeout(timer));
    const live = el('div', { id: 'pipeline-live' }, el('p', { class: 'loading' }, 'Loading…'));
    const pause = el('button', { type: 'button', class: 'secondary', 'aria-pressed': 'false' }, 'Pause updates');
    pause.addEventListener('click', () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
      pause.textContent = paused ? 'Resume updates' : 'Pause updates';
      if (!paused) tick();
    });
    show('Pipeline', el('p', { class: 'hint' }, `This instance's queue and counters, read every ${POLL_MS / 1000} seconds; batches and dead letters are the whole deployment's.`),
      el('p', null, pause), live);

    let first = true;
    async function tick() {
      clearTimeout(timer);
      try {
        const r = await api('/explorer/api/pipeline', signal);
        if (r.status === 404) {
          live.replaceChildren(notice('This instance runs no pipeline (a submitter): open the explorer on an API instance.'));
          return;
        }
        if (r.status !== 200) throw new HTTPError(r.status, '', (r.body && r.body.message) || 'the server answered ' + r.status);
        live.replaceChildren(...pipelineContent(r.body));
        live.dataset.updated = r.body.now.at;
        if (first) { announce('Pipeline loaded'); first = false; }
      } catch (err) {
        if (signal.aborted || (err && err.name === 'AbortError')) return;
        if (err instanceof AuthNeeded) { live.replaceChildren(notice('Enter an API token above to see the pipeline.')); return; }
        live.replaceChildren(errorBox('The pipeline could not be read: ' + (err instanceof HTTPError ? err.message : 'the server could not be reached') + '. Retrying.'));
      }
      if (!paused && !signal.aborted) timer = setTimeout(tick, POLL_MS);
    }
    await tick();
  }

  function pipelineContent(p) {
    const now = p.now;
    const dead = Object.entries(p.deadLetters || {}).sort();
    const card = (label, value, id) => el('div', { class: 'card', id }, el('span', { class: 'label' }, label), el('span', { class: 'value' }, value));
    return [
      el('div', { class: 'cards' },
        card('Queue depth', fmt(now.queueDepth, 0), 'queue-depth'),
        card('Oldest waiting', age(now.oldestAgeSeconds), 'oldest-age'),
        card('Accepted / s', fmt(now.acceptedPerSecond), 'accepted-rate'),
        card('Anchored / s', fmt(now.anchoredPerSecond), 'anchored-rate'),
        card('Accepted since start', fmt(now.accepted, 0), 'accepted-total'),
        card('Anchored since start', fmt(now.anchored, 0), 'anchored-total')),
      el('h2', null, 'Operations per second'),
      rateChart(p.history, p.intervalSeconds),
      el('h2', null, 'Recent batches'),
      batchChart(p.recentBatches),
      p.recentBatches.length ? el('details', null, el('summary', null, 'Batches as a table'),
        table('Recent batches, newest first', ['#Anchor', 'Created', '#Operations', 'Status'], p.recentBatches.map((b) => [
          el('a', { href: anchorPath(b.seq) }, String(b.seq)), time(b.createdAt), fmt(b.operationCount, 0), statusBadge(b.status),
        ]))) : null,
      el('h2', null, 'Dead letters'),
      dead.length
        ? [table('Dead letters by kind', ['Kind', '#Parked'], dead.map(([k, n]) => [k, fmt(n, 0)])),
          el('p', { class: 'hint' }, 'List, retry or drop them with anchord admin dead-letters.')]
        : notice('No dead letters.'),
    ];
  }

  // ---- federation ----

  async function viewFederation(_args, _params, signal) {
    const f = await apiOK('/explorer/api/federation', signal);
    if (!f.enabled) {
      show('Federation', el('div', { class: 'state', 'data-state': 'not-federated' }, el('strong', null, 'Not federated'),
        el('span', null, 'This domain follows no one, has no followers and no witnesses.')));
      return;
    }
    // The deliveries are ours, to each domain: what a followed domain sends shows as its
    // anchors, observed here.
    const peers = (caption, list, empty) => list.length
      ? table(caption, ['Domain', 'Since', 'Last sent to it', 'State', '#Attempts', 'Error'], list.map((p) => {
        const d = p.lastDelivery;
        return [el('span', { class: 'mono' }, p.actor), time(p.since), d ? [d.activity, ' ', time(d.at)] : '—',
          d ? statusBadge(d.state) : '—', d ? String(d.attempts) : '—', d && d.error ? d.error : ''];
      }))
      : notice(empty);
    show('Federation',
      facts([['This domain', el('span', { class: 'mono' }, f.actor || '—')]]),
      el('h2', null, 'Followers'), peers('Domains that follow this one', f.followers, 'No followers.'),
      el('h2', null, 'Following'), peers('Domains this one follows', f.following, 'Following no one.'),
      el('h2', null, 'Witnesses'), peers('Domains that witness this one\'s anchors', f.witnesses, 'No witnesses.'),
      el('h2', null, 'Witnessing for'), peers('Domains this one witnesses for', f.witnessing, 'Witnessing for no one.'));
  }

  render();
})();
