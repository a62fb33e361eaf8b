package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// explorerToken is the read token of the test server's explorer API and CAS.
const explorerToken = "explorer-read-token"

// browser is a headless Chromium tab with the console messages it collected.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// startBrowser starts Debian's Chromium headless with a fresh profile and collects every
// console message of the tab; the browser is stopped, and its collector awaited, at the end
// of the test.
func startBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(anchordtest.ChromiumBin(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	b := &browser{t: t, ctx: ctx, base: base}
	messages := chromedp.Console(ctx)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-collected
	})
	return b
}

// do runs actions in the tab, each step bounded so a hung page fails the test with its step.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...), what)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(b.t, err, js)
	return v
}

// waitFor waits until a JavaScript expression is truthy in the page. A poll that fails because
// the document it ran in went away (a navigation that had not finished when the step before
// returned) is started again in the new one.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(b.ctx, deadline)
		_, err := chromedp.Run(ctx, chromedp.Poll[any](js, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(100*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.NoError(b.t, err, "wait for %s", what)
		}
		b.t.Logf("wait for %s: %v; polling again", what, err)
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path))
}

func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	path := filepath.Join(dir, name)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot %s", path)
}

// pageErrors returns the console messages that are errors of the page: console.error calls,
// uncaught exceptions, and browser-log errors. A network entry for a 4xx answer is not one:
// the page asks for a missing DID (404), a deactivated one (410), and for data before it has
// a token (401), and shows each state; any other network error (a 5xx, a refused
// connection) is.
func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		if m.Source == "network" && strings.Contains(m.Text, "status of 4") {
			continue
		}
		out = append(out, m.String()+" ("+m.URL+")")
	}
	return out
}

// a11yProblems is a script that lists what keeps the page from being usable without a mouse or
// a good eye: form fields without a label, links and buttons without a name, images without
// a text alternative, text with a contrast below 4.5:1 (3:1 for large text) against the
// background it is drawn on, and content wider than the window.
const a11yProblems = `(() => {
  const problems = [];
  const named = (e) => (e.getAttribute('aria-label') || e.textContent || '').trim() !== '';
  for (const e of document.querySelectorAll('input, select, textarea')) {
    if (e.type === 'hidden') continue;
    if (!(e.labels && e.labels.length) && !e.getAttribute('aria-label')) problems.push('unlabelled field #' + e.id);
  }
  for (const e of document.querySelectorAll('a[href], button')) {
    if (!named(e) && e.offsetParent !== null) problems.push('nameless ' + e.tagName + ' ' + e.outerHTML.slice(0, 80));
  }
  for (const e of document.querySelectorAll('img, [role=img]')) {
    if (!e.getAttribute('alt') && !e.getAttribute('aria-label')) problems.push('image without text alternative');
  }
  const rgb = (c) => { const m = c.match(/[\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; };
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (e) => {
    for (; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length < 4 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    if (!e || seen.has(e) || !n.textContent.trim()) continue;
    seen.add(e);
    const s = getComputedStyle(e);
    if (s.visibility === 'hidden' || s.display === 'none' || e.closest('[hidden], .visually-hidden, .skip, svg')) continue;
    if (!e.getClientRects().length) continue;
    const [l1, l2] = [lum(rgb(s.color)), lum(background(e))];
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) problems.push('contrast ' + ratio.toFixed(2) + ' of "' + n.textContent.trim().slice(0, 30) + '"');
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push('page wider than the window: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  }
  return problems;
})()`

func (b *browser) requireAccessible(view string) {
	b.t.Helper()
	require.Empty(b.t, eval[[]string](b, a11yProblems), "accessibility of %s", view)
}

// TestExplorerInABrowser drives the explorer in headless Chromium against a server under
// anchord loadgen traffic: the token prompt of a server whose read API is guarded (and "Forget
// token" only while a token is kept), the pipeline
// chart moving while the load runs, a DID found by typing it and its history, an anchor opened
// from that history, a batch file opened from the anchor, the deactivated and not-found states,
// the federation's "not federated", keyboard use, contrast, and the phone width. Any error on
// the page's console fails it. Screenshots at desktop and phone width are left in the
// artifact directory ($ANCHORD_TEST_ARTIFACTS, else the test's temporary directory).
func TestExplorerInABrowser(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	srv := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Addr: addr, Args: []string{
		"serve", "--host-url", addr, "--data-dir", t.TempDir(), "--batch-writer-timeout", "500ms",
		// The explorer's data and the batch files need the read token; the page's own files and
		// the Sidetree API (which loadgen uses) stay open.
		"--auth-tokens-def", `^/explorer/api/|read|,^/cas/|read|`, "--auth-tokens", "read=" + explorerToken,
	}})
	srv.WaitHealthy(60 * time.Second)
	base := "http://" + addr
	artifacts := anchordtest.ArtifactDir(t)

	// Few deactivates among many published DIDs: the test needs an updated DID that is still
	// active, and one deactivated DID.
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	gen := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: []string{
		"loadgen", "--target", base, "--rate", "30", "--concurrency", "8", "--duration", "20s",
		"--mix", "create=70,update=28,deactivate=2", "--warmup-dids", "40", "--sample-every", "20",
		"--accepted-out", accepted,
	}})

	b := startBrowser(t, base)

	// The data is guarded: the page asks for the token, then shows the pipeline.
	b.open("/explorer/pipeline")
	b.waitFor("the token prompt", `!document.getElementById('auth').hidden`)
	b.requireAccessible("the token prompt")
	require.False(t, eval[bool](b, forgetShown), `no "Forget token" without a token`)
	b.do("enter the token",
		chromedp.SendKeys(chromedp.CSS("#auth-token"), explorerToken),
		chromedp.KeyEvent(kb.Enter))
	b.waitFor("the rate chart", `document.getElementById('rate-chart') !== null && document.getElementById('auth').hidden`)
	require.True(t, eval[bool](b, forgetShown), `"Forget token" once a token is kept`)

	// The chart moves under load: new samples arrive and the counters climb.
	type chartState struct {
		Last     string  `json:"last"`
		Samples  int     `json:"samples"`
		Accepted float64 `json:"accepted"`
	}
	const readChart = `(() => {
		const c = document.getElementById('rate-chart');
		const n = (id) => Number(document.querySelector('#' + id + ' .value').textContent.replace(/[^0-9.]/g, ''));
		return {last: c.dataset.last, samples: Number(c.dataset.samples), accepted: n('accepted-total')};
	})()`
	b.waitFor("accepted operations on the pipeline page", `Number((document.querySelector('#accepted-total .value') || {}).textContent || '0') > 0`)
	before := eval[chartState](b, readChart)
	b.waitFor("a new sample", fmt.Sprintf(`document.getElementById('rate-chart').dataset.last !== %q`, before.Last))
	b.waitFor("more accepted operations", fmt.Sprintf(`Number(document.querySelector('#accepted-total .value').textContent.replace(/[^0-9.]/g, '')) > %v`, before.Accepted))
	after := eval[chartState](b, readChart)
	require.Greater(t, after.Samples, 1, "the chart has a history")
	require.Greater(t, after.Accepted, before.Accepted)
	require.NotEmpty(t, eval[string](b, `document.querySelector('#rate-chart .line-accepted').getAttribute('points')`))
	require.Positive(t, eval[int](b, `document.querySelectorAll('#batch-chart rect').length`), "batches are charted")
	b.requireAccessible("the pipeline")

	code, err := gen.Wait(3 * time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, code, "loadgen:\n%s", gen.Log())
	// The whole run, charted from the server's samples; every operation loadgen saw accepted is
	// counted as accepted and, once its batch is anchored, as anchored.
	ops := readAccepted(t, accepted)
	total := 0
	for _, n := range ops {
		total += n
	}
	b.waitFor("the samples of the whole run", fmt.Sprintf(`Number(document.getElementById('rate-chart').dataset.samples) > %d`, after.Samples+5))
	b.waitFor("every accepted operation anchored", fmt.Sprintf(`(() => {
		const n = (id) => Number(document.querySelector('#' + id + ' .value').textContent.replace(/[^0-9.]/g, ''));
		return n('accepted-total') === %d && n('anchored-total') === %d && n('queue-depth') === 0;
	})()`, total, total))
	b.screenshot(artifacts, "pipeline-desktop.png")

	// A DID with a create and an update, one deactivated; wait until the server has indexed them.
	perDID := map[string]map[string]int{}
	for k, n := range ops {
		if perDID[k.suffix] == nil {
			perDID[k.suffix] = map[string]int{}
		}
		perDID[k.suffix][k.typ] += n
	}
	var updated, deactivated string
	for suffix, types := range perDID {
		if updated == "" && types["create"] == 1 && types["update"] > 0 && types["deactivate"] == 0 {
			updated = suffix
		}
		if deactivated == "" && types["create"] == 1 && types["deactivate"] == 1 {
			deactivated = suffix
		}
	}
	require.NotEmpty(t, updated, "loadgen updated a DID")
	require.NotEmpty(t, deactivated, "loadgen deactivated a DID")
	for _, suffix := range []string{updated, deactivated} {
		want := 0
		for _, n := range perDID[suffix] {
			want += n
		}
		waitIndexed(t, base, "did:sidetree:"+suffix, want)
	}
	did := "did:sidetree:" + updated

	// Search by typing, with the keyboard only: the skip link first, then into the form.
	b.open("/explorer/")
	b.waitFor("the search form", `document.getElementById('did-input') !== null`)
	b.do("tab to the skip link", chromedp.KeyEvent(kb.Tab))
	require.Equal(t, "Skip to content", eval[string](b, `document.activeElement.textContent`))
	b.do("search the DID",
		chromedp.Focus(chromedp.CSS("#did-input")),
		chromedp.SendKeys(chromedp.CSS("#did-input"), did),
		chromedp.KeyEvent(kb.Enter))
	b.waitFor("the DID's history", `document.querySelector('#history + .table-wrap tbody tr') !== null`)
	require.Equal(t, "/explorer/did/"+did, eval[string](b, `location.pathname`), "the view has its own URL")
	require.Equal(t, "H1", eval[string](b, `document.activeElement.tagName`), "focus moves to the new view's heading")
	require.Equal(t, "active", eval[string](b, `document.querySelector('.state').dataset.state`))
	types := eval[[]string](b, `[...document.querySelectorAll('#history + .table-wrap tbody tr td:nth-child(2)')].map((td) => td.textContent)`)
	require.Equal(t, "create", types[0])
	require.Contains(t, types, "update")
	require.Len(t, types, perDID[updated]["create"]+perDID[updated]["update"])
	b.requireAccessible("the DID page")
	b.screenshot(artifacts, "did-desktop.png")

	// Open the anchor of the update, then its core index file.
	b.do("open the update's anchor", chromedp.Click(chromedp.CSS(`#history + .table-wrap tbody tr:last-child td:nth-child(3) a`)))
	b.waitFor("the anchor's files", `location.pathname.startsWith('/explorer/anchor/') && document.querySelector('main .table-wrap a.cid') !== null`)
	require.Contains(t, eval[string](b, `document.querySelector('main').textContent`), did, "the anchor lists the DID's operation")
	require.Contains(t, eval[string](b, `document.querySelector('main').textContent`), "completed")
	b.requireAccessible("the anchor page")
	b.screenshot(artifacts, "anchor-desktop.png")
	b.do("open the core index file", chromedp.Click(chromedp.CSS(`main .table-wrap a.cid`)))
	b.waitFor("the file's JSON", `location.pathname.startsWith('/explorer/file/') && document.querySelector('h1').textContent === 'The core index file' && document.querySelector('pre.json') !== null`)
	content := eval[string](b, `document.querySelector('pre.json').textContent`)
	require.Contains(t, content, `"provisionalIndexFileUri"`, "the core index file, decompressed")
	require.Positive(t, eval[int](b, `document.querySelectorAll('main ul.files a').length`), "links to the files it names")
	b.requireAccessible("the file page")

	// Back to the DID with the browser's history.
	b.do("go back twice", chromedp.NavigateBack(), chromedp.NavigateBack())
	b.waitFor("the DID page again", fmt.Sprintf(`location.pathname === %q && document.querySelector('#history') !== null`, "/explorer/did/"+did))

	// Deep links: a deactivated DID, a DID nobody created, the federation.
	b.open("/explorer/did/did:sidetree:" + deactivated)
	b.waitFor("the deactivated state", `(document.querySelector('.state') || {dataset: {}}).dataset.state === 'deactivated' && document.querySelector('#history + .table-wrap') !== null`)
	require.Contains(t, eval[[]string](b, `[...document.querySelectorAll('#history + .table-wrap tbody td:nth-child(2)')].map((td) => td.textContent)`), "deactivate")
	b.open("/explorer/did/did:sidetree:EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A")
	b.waitFor("the not-found state", `(document.querySelector('.state') || {dataset: {}}).dataset.state === 'not-found'`)
	b.open("/explorer/federation")
	b.waitFor("not federated", `(document.querySelector('.state') || {dataset: {}}).dataset.state === 'not-federated'`)
	b.open("/explorer/anchors")
	b.waitFor("the anchors", `document.querySelectorAll('main tbody tr').length > 0`)
	b.requireAccessible("the anchors page")

	// Phone width: the same views fit the screen.
	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.open("/explorer/did/" + did)
	b.waitFor("the DID's history on a phone", `document.querySelector('#history + .table-wrap tbody tr') !== null`)
	b.requireAccessible("the DID page on a phone")
	b.screenshot(artifacts, "did-phone.png")
	b.open("/explorer/pipeline")
	b.waitFor("the pipeline on a phone", `document.getElementById('rate-chart') !== null`)
	b.requireAccessible("the pipeline on a phone")
	b.screenshot(artifacts, "pipeline-phone.png")

	b.do("forget the token", chromedp.Click(chromedp.CSS("#forget-token")))
	b.waitFor(`"Forget token" gone`, "!("+forgetShown+")")

	require.Empty(t, b.pageErrors(), "errors on the page's console")
}

// forgetShown is whether the "Forget token" button takes space on the page (a CSS rule could
// show an element whose hidden attribute is set).
const forgetShown = `(() => {
	const f = document.getElementById('forget-token');
	return getComputedStyle(f).display !== 'none' && f.getClientRects().length > 0;
})()`

// waitIndexed waits until the explorer API lists want operations of did.
func waitIndexed(t *testing.T, base, did string, want int) {
	t.Helper()
	u := base + "/explorer/api/dids/" + url.PathEscape(did) + "/operations"
	anchordtest.Eventually(t, 60*time.Second, 100*time.Millisecond, func() bool {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+explorerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h struct {
			Total int `json:"total"`
		}
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Total == want
	}, "%s has %d anchored operations", did, want)
}

// TestExplorerOfAFollowerInABrowser: B follows A. B's explorer shows a DID anchored at A with
// the anchor origin its resolution metadata names, and its federation view shows A under
// "Following", the last activity B sent it (its Follow) labelled as sent to it.
func TestExplorerOfAFollowerInABrowser(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A")
	b := startDomain(t, "B")
	b.follow(a)
	load := newFedLoad(t, a.api)
	load.creates(1, 1)
	did := load.dids()[0]
	var origin string
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		r := b.resolve(did)
		origin = r.origin
		return r.published && origin != ""
	}, "the DID resolves at B with its anchor origin")

	br := startBrowser(t, "http://"+b.addr)
	br.open("/explorer/did/" + did)
	br.waitFor("the DID's facts", `document.querySelector('[data-fact="anchor-origin"]') !== null`)
	require.Equal(t, origin, eval[string](br, `document.querySelector('[data-fact="anchor-origin"]').textContent`))
	require.Equal(t, "Anchor origin", eval[string](br, `document.querySelector('[data-fact="anchor-origin"]').closest('div, tr, dd').previousElementSibling.textContent`))
	br.requireAccessible("a follower's DID page")

	br.open("/explorer/federation")
	br.waitFor("the federation view", `[...document.querySelectorAll('main h2')].some((h) => h.textContent === 'Following')`)
	const following = `(() => {
		const h = [...document.querySelectorAll('main h2')].find((h) => h.textContent === 'Following');
		const t = h.nextElementSibling.querySelector('table');
		return {head: [...t.querySelectorAll('thead th')].map((th) => th.textContent),
			row: [...t.querySelectorAll('tbody tr:first-child td')].map((td) => td.textContent)};
	})()`
	type table struct {
		Head []string `json:"head"`
		Row  []string `json:"row"`
	}
	got := eval[table](br, following)
	require.Equal(t, "Last sent to it", got.Head[2])
	require.Equal(t, a.actor, got.Row[0])
	require.Contains(t, got.Row[2], "Follow", "what B last sent A")
	br.requireAccessible("the federation view")
	require.Empty(t, br.pageErrors(), "errors on the page's console")
}
