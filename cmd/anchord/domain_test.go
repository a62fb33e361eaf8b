package main

// Helpers of the multi-domain tests: domains as processes, their admin CLI, loads and what
// their databases hold.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/relay"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// fedTiming makes federation quick enough for tests: batches cut at 300 ms, the activity sync
// every 2 s for activities older than 2 s, and retries of failed deliveries from 500 ms.
var fedTiming = []string{
	"--batch-writer-timeout", "300ms", "--sync-interval", "2s", "--sync-accelerated-interval", "1s",
	"--sync-min-activity-age", "2s", "--mq-redelivery-initial-interval", "500ms", "--mq-redelivery-max-interval", "3s",
}

// relayDomain is one anchord domain of a multi-domain test: an embedded process on a loopback
// port, its data directory, and its actor.
type relayDomain struct {
	t     *testing.T
	name  string
	addr  string
	dir   string
	args  []string
	env   []string
	actor string
	api   *apiClient

	mu   sync.Mutex
	proc *anchordtest.Process
}

// startDomain starts an embedded domain on a fresh port and data directory.
func startDomain(t *testing.T, name string, extra ...string) *relayDomain {
	t.Helper()
	return startDomainEnv(t, name, nil, extra...)
}

// startDomainEnv is startDomain with environment variables for the process.
func startDomainEnv(t *testing.T, name string, env []string, extra ...string) *relayDomain {
	t.Helper()
	addr := anchordtest.FreeAddr(t)
	d := &relayDomain{t: t, name: name, addr: addr, dir: t.TempDir(), env: env, actor: "http://" + addr + federation.ServicePath, api: newClient(addr)}
	d.args = append([]string{"serve", "--host-url", addr, "--data-dir", d.dir, "--external-endpoint", "http://" + addr}, fedTiming...)
	d.args = append(d.args, extra...)
	d.start()
	return d
}

func (d *relayDomain) start() {
	d.t.Helper()
	p := anchordtest.StartProcess(d.t, anchordtest.ProcessConfig{Args: d.args, Env: d.env, Addr: d.addr})
	p.WaitHealthy(60 * time.Second)
	d.mu.Lock()
	d.proc = p
	d.mu.Unlock()
}

func (d *relayDomain) process() *anchordtest.Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proc
}

// admin runs `anchord admin …` against the domain's admin listener.
func (d *relayDomain) admin(args ...string) string {
	d.t.Helper()
	p := d.process()
	cmd := exec.Command(anchordtest.Binary(d.t), append(append([]string{"admin"}, args...), "--target", "http://"+p.AdminAddr())...)
	cmd.Env = append(os.Environ(), "ANCHORD_ADMIN_TOKEN="+p.AdminToken())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(d.t, cmd.Run(), "anchord admin %v: %s", args, errOut.String())
	return out.String()
}

// follow makes d follow other through the admin CLI and waits for the Accept.
func (d *relayDomain) follow(other *relayDomain) {
	d.t.Helper()
	require.Contains(d.t, d.admin("follow", "add", other.actor), "following "+other.actor)
	anchordtest.Eventually(d.t, 30*time.Second, 100*time.Millisecond, func() bool {
		var list struct {
			Items []federation.RelationshipView `json:"items"`
		}
		if err := json.Unmarshal([]byte(d.admin("follow", "list", "--json")), &list); err != nil {
			return false
		}
		return slices.ContainsFunc(list.Items, func(r federation.RelationshipView) bool {
			return r.Actor == other.actor && r.Status == store.RelationshipAccepted
		})
	}, "%s follows %s", d.name, other.name)
}

// resolution is what a test compares of a DID's resolution result.
type resolution struct {
	status    int
	document  string
	published bool
	update    string
	origin    string
}

func (d *relayDomain) resolve(did string) resolution {
	code, body, err := d.api.resolve(did)
	if err != nil || code != http.StatusOK {
		return resolution{status: code}
	}
	var r struct {
		Document json.RawMessage `json:"didDocument"`
		Meta     struct {
			Method struct {
				Published        bool   `json:"published"`
				UpdateCommitment string `json:"updateCommitment"`
				AnchorOrigin     string `json:"anchorOrigin"`
			} `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	if json.Unmarshal(body, &r) != nil {
		return resolution{status: -1}
	}
	return resolution{status: code, document: string(r.Document), published: r.Meta.Method.Published,
		update: r.Meta.Method.UpdateCommitment, origin: r.Meta.Method.AnchorOrigin}
}

// sameAs reports whether every DID resolves at d as it does at origin, published, with origin
// named as the anchor origin; it returns how many do not.
func (d *relayDomain) sameAs(origin *relayDomain, dids []string) int {
	missing := 0
	for _, did := range dids {
		want, got := origin.resolve(did), d.resolve(did)
		if want.status != http.StatusOK || got != (resolution{status: http.StatusOK, document: want.document, published: true, update: want.update, origin: origin.actor}) {
			missing++
		}
	}
	return missing
}

// fedLoad posts creates and updates to one domain, keeping the identities it created.
type fedLoad struct {
	t      *testing.T
	api    *apiClient
	wallet *wallet.Wallet

	// abandon, if set, makes a request give up (unrecorded, not an error) once it reports
	// true: a test that kills the domain mid-load restarts it only after the load returns.
	abandon func() bool

	mu      sync.Mutex
	ids     []*wallet.Identity
	updated map[string]int // DID → updates accepted
}

func newFedLoad(t *testing.T, api *apiClient) *fedLoad {
	return &fedLoad{t: t, api: api, wallet: wallet.New(wallet.Config{}), updated: map[string]int{}}
}

// creates posts n creates with the given concurrency; each is retried until accepted.
func (l *fedLoad) creates(n, concurrency int) {
	l.t.Helper()
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for range jobs {
				id, req, err := l.wallet.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
				if err != nil {
					l.t.Errorf("create: %v", err)
					return
				}
				if !l.post(req) {
					return
				}
				l.mu.Lock()
				l.ids = append(l.ids, id)
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// post submits one request until the server accepts it; false if it refuses it for good.
func (l *fedLoad) post(req []byte) bool {
	for range 600 {
		code, body, err := l.api.post(req)
		switch {
		case err == nil && code == http.StatusOK:
			return true
		case err == nil && code == http.StatusBadRequest:
			l.t.Errorf("request refused: %s", body)
			return false
		case l.abandon != nil && l.abandon():
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.t.Errorf("request not accepted within a minute")
	return false
}

// updates posts one update of each of the first n DIDs, once each is anchored at the origin.
func (l *fedLoad) updates(n int, origin *relayDomain) {
	l.t.Helper()
	l.mu.Lock()
	ids := slices.Clone(l.ids[:min(n, len(l.ids))])
	l.mu.Unlock()
	for i, id := range ids {
		anchordtest.Eventually(l.t, 30*time.Second, 50*time.Millisecond, func() bool {
			return origin.resolve(id.DID()).published
		}, "DID %d anchored at the origin", i)
		req, err := l.wallet.Update(id, wallet.AddServices(wallet.Service{ID: fmt.Sprintf("u%d", l.updated[id.DID()]), Type: "LinkedDomains", Endpoint: "https://example.org"}))
		require.NoError(l.t, err)
		if l.post(req) {
			l.mu.Lock()
			l.updated[id.DID()]++
			l.mu.Unlock()
		}
	}
}

func (l *fedLoad) dids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.ids))
	for i, id := range l.ids {
		out[i] = id.DID()
	}
	return out
}

// waitSame waits until every DID resolves at d as at origin.
func waitSame(t *testing.T, d, origin *relayDomain, dids []string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		differ := d.sameAs(origin, dids)
		if differ == 0 {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("after %s, %d of %d DIDs do not resolve at %s as at %s", timeout, differ, len(dids), d.name, origin.name)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// indexRows opens a stopped domain's database and returns, per DID suffix, its index rows.
func (d *relayDomain) indexRows(suffixes []string) map[string][]store.DIDOperation {
	d.t.Helper()
	require.True(d.t, d.process().Exited(), "the domain is stopped")
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: d.dir})
	require.NoError(d.t, err)
	defer st.Close()
	out := map[string][]store.DIDOperation{}
	for _, s := range suffixes {
		rows, err := st.DIDOperationList(ctx, s)
		require.NoError(d.t, err)
		out[s] = rows
	}
	return out
}

// indexHistories is indexRows with each row's request, read back from the domain's batch files
// as its resolver reads them (the index keeps no request). The domain uses the default profile.
func (d *relayDomain) indexHistories(suffixes []string) map[string][]store.DIDOperation {
	d.t.Helper()
	require.True(d.t, d.process().Exited(), "the domain is stopped")
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: d.dir})
	require.NoError(d.t, err)
	defer st.Close()
	cs, err := cas.NewStore(cas.StoreConfig{}, st)
	require.NoError(d.t, err)
	limits := batchfile.DefaultLimits()
	limits.CheckURIFunc = func(uri string) error { _, err := cas.ParseCID(uri); return err }
	batches, err := observer.NewBatches(observer.BatchesConfig{
		Profile: sidetree.DefaultProfile(), Limits: limits, ForeignLimits: relay.ForeignLimits(limits),
	}, cs.FetchFunc)
	require.NoError(d.t, err)
	out := map[string][]store.DIDOperation{}
	for _, s := range suffixes {
		rows, err := st.DIDOperationList(ctx, s)
		require.NoError(d.t, err)
		require.NoError(d.t, batches.Requests(ctx, rows))
		out[s] = rows
	}
	return out
}

// stop stops the domain gracefully.
func (d *relayDomain) stop() {
	d.t.Helper()
	p := d.process()
	p.Signal(syscall.SIGTERM)
	code, err := p.Wait(30 * time.Second)
	require.NoError(d.t, err)
	require.Zero(d.t, code)
}

// logLines returns the lines of the domain's log at level, for the test log.
func (d *relayDomain) logLines(level string) []string {
	var out []string
	for _, l := range strings.Split(d.process().Log(), "\n") {
		if strings.Contains(l, "level="+level) {
			out = append(out, l)
		}
	}
	return out
}

func suffixOf(did string) string { return did[len("did:sidetree:"):] }

// writeKeyFile writes a fresh Ed25519 domain key as --key-file takes it and returns both.
func writeKeyFile(t *testing.T) (string, ed25519.PrivateKey) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "domain.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return path, key
}

// outboxItems returns the raw activities of the first page of a domain's public outbox.
func (d *relayDomain) outboxItems() []json.RawMessage {
	d.t.Helper()
	resp, err := d.api.http.Get(d.api.base + federation.ServicePath + "/outbox?page=true&page-num=0")
	require.NoError(d.t, err)
	defer resp.Body.Close()
	require.Equal(d.t, http.StatusOK, resp.StatusCode)
	var page struct {
		Items []json.RawMessage `json:"orderedItems"`
	}
	require.NoError(d.t, json.NewDecoder(resp.Body).Decode(&page))
	return page.Items
}

// postAs posts activities to a domain's inbox signed with another domain's key, as that domain's
// deliverer would.
func postAs(t *testing.T, from *relayDomain, key ed25519.PrivateKey, to *relayDomain, activities ...json.RawMessage) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	client, err := peer.New(peer.Config{KeyID: from.actor + "/keys/main-key", PrivateKey: key, HTTP: loopbackPeers(t)}, st)
	require.NoError(t, err)
	defer client.Close()
	for _, a := range activities {
		require.NoError(t, client.Post(context.Background(), to.actor+"/inbox", a))
	}
}

// loopbackPeers is the HTTP client of a test that speaks to domains as another domain would:
// through an outbound guard that lets loopback through.
func loopbackPeers(t *testing.T) *http.Client {
	t.Helper()
	allowed, err := egress.ParseAllowed(anchordtest.LoopbackPeers)
	require.NoError(t, err)
	g, err := egress.New(egress.Config{Allowed: allowed})
	require.NoError(t, err)
	t.Cleanup(g.CloseIdleConnections)
	return g.Client()
}

// creates returns the Create activities among raw activities.
func creates(t *testing.T, items []json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, item := range items {
		var head struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(item, &head))
		if head.Type == "Create" {
			out = append(out, item)
		}
	}
	return out
}

// runLoadgen runs `anchord loadgen` against a domain and returns its summary lines.
func runLoadgen(t *testing.T, d *relayDomain, args ...string) string {
	t.Helper()
	cmd := exec.Command(anchordtest.Binary(t), append([]string{"loadgen", "--target", "http://" + d.addr}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "loadgen: %s", out)
	var summary []string
	keep := false
	for _, l := range strings.Split(string(out), "\n") {
		keep = keep || strings.HasPrefix(l, "summary:")
		if keep && l != "" {
			summary = append(summary, l)
		}
	}
	return strings.Join(summary, "\n")
}

// anchorRows opens a stopped domain's database and returns its anchors.
func (d *relayDomain) anchorRows() []store.Anchor {
	d.t.Helper()
	require.True(d.t, d.process().Exited(), "the domain is stopped")
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: d.dir})
	require.NoError(d.t, err)
	defer st.Close()
	var out []store.Anchor
	for after := int64(0); ; {
		page, err := st.AnchorList(ctx, store.AnchorListParams{AfterSeq: after, Limit: 1000})
		require.NoError(d.t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Seq
	}
}

// percentiles formats p50, p95 and the maximum of ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return fmt.Sprintf("p50 %s, p95 %s, max %s (%d anchors)", at(0.50).Round(time.Millisecond), at(0.95).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}

// waitAnchors waits until d has recorded n anchors and returns how long that took.
func (d *relayDomain) waitAnchors(n int, timeout time.Duration) time.Duration {
	d.t.Helper()
	start := time.Now()
	anchordtest.Eventually(d.t, timeout, 100*time.Millisecond, func() bool {
		return len(d.api.anchors(d.t)) >= n
	}, "%s records %d anchors", d.name, n)
	return time.Since(start)
}

// outboxCreateActivities returns every Create in a domain's public outbox, page by page.
func (d *relayDomain) outboxCreateActivities() []json.RawMessage {
	d.t.Helper()
	var out []json.RawMessage
	for page := 0; ; page++ {
		resp, err := d.api.http.Get(fmt.Sprintf("%s%s/outbox?page=true&page-num=%d", d.api.base, federation.ServicePath, page))
		require.NoError(d.t, err)
		require.Equal(d.t, http.StatusOK, resp.StatusCode, "outbox page %d", page)
		var p struct {
			Items []json.RawMessage `json:"orderedItems"`
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		require.NoError(d.t, err)
		if len(p.Items) == 0 {
			return out
		}
		out = append(out, creates(d.t, p.Items)...)
	}
}

// outboxCreates counts, per anchor hashlink, the Creates in a domain's public outbox.
func (d *relayDomain) outboxCreates() map[string]int {
	d.t.Helper()
	out := map[string]int{}
	for _, raw := range d.outboxCreateActivities() {
		var c struct {
			Object struct {
				Object struct {
					Linkset []struct {
						Anchor string `json:"anchor"`
					} `json:"linkset"`
				} `json:"object"`
			} `json:"object"`
		}
		require.NoError(d.t, json.Unmarshal(raw, &c))
		require.Len(d.t, c.Object.Object.Linkset, 1)
		out[c.Object.Object.Linkset[0].Anchor]++
	}
	return out
}
