package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// testDomain is one domain in a test: a service on its own store behind an httptest server.
type testDomain struct {
	svc    *Service
	st     store.Store
	srv    *httptest.Server
	key    ed25519.PrivateKey
	client *peer.Client
	reg    *prometheus.Registry
}

// domainOption changes a domain's configuration.
type domainOption func(*Config)

func fastRetries(attempts int) domainOption {
	return func(c *Config) {
		c.Redelivery = pubsub.RedeliveryConfig{MaxAttempts: attempts, InitialInterval: 10 * time.Millisecond, Multiplier: 1, MaxInterval: 10 * time.Millisecond}
	}
}

func newDomain(t testing.TB, opts ...domainOption) *testDomain {
	t.Helper()
	return newDomainGuarded(t, guardAllowing(t, "127.0.0.0/8"), opts...)
}

// newDomainGuarded is newDomain with its own outbound guard.
func newDomainGuarded(t testing.TB, guard *egress.Guard, opts ...domainOption) *testDomain {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	d := &testDomain{key: key, st: storetest.Open(t, storetest.SQLiteOpener(t)), reg: prometheus.NewRegistry()}
	mux := http.NewServeMux()
	d.srv = httptest.NewServer(mux)
	t.Cleanup(d.srv.Close)
	logger := anchordtest.Logger(t)
	d.client, err = peer.New(peer.Config{KeyID: d.srv.URL + ServicePath + activity.PathMainKey, PrivateKey: key, HTTP: guard.Client(), Logger: logger}, d.st)
	require.NoError(t, err)
	t.Cleanup(d.client.Close)
	cfg := Config{
		ExternalEndpoint: d.srv.URL, Key: key, InstanceID: "test", PollInterval: 20 * time.Millisecond,
		SyncMinActivityAge: time.Nanosecond, Logger: logger, Registerer: d.reg,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d.svc, err = New(cfg, d.st, d.client)
	require.NoError(t, err)
	d.svc.Routes()(muxRouter{mux})
	d.svc.AdminRoutes()(muxRouter{mux})
	return d
}

// guardAllowing is an outbound guard that lets allowed (egress.ParseAllowed) through, and
// refuses the listeners named in refused always.
func guardAllowing(t testing.TB, allowed string, refused ...string) *egress.Guard {
	t.Helper()
	a, err := egress.ParseAllowed(allowed)
	require.NoError(t, err)
	g, err := egress.New(egress.Config{Allowed: a, Refused: refused})
	require.NoError(t, err)
	t.Cleanup(g.CloseIdleConnections)
	return g
}

// muxRouter adapts a ServeMux to httpapi.Router.
type muxRouter struct{ *http.ServeMux }

var _ httpapi.Router = muxRouter{}

// run starts the domain's deliverer and inbox processor until the test ends.
func (d *testDomain) run(t *testing.T) (*Deliverer, *Processor) {
	t.Helper()
	del, proc := d.svc.Deliverer(), d.svc.Processor()
	del.delivered.Init(t)
	proc.handled.Init(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{del.Run, proc.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = run(ctx)
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return del, proc
}

func (d *testDomain) actor() string { return d.svc.ActorIRI() }

// signedRequest builds a request signed by d's key.
func (d *testDomain) signedRequest(t *testing.T, method, url string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	signer, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: d.svc.KeyID(), PrivateKey: d.key, MaxBodyBytes: 8 << 20})
	require.NoError(t, err)
	require.NoError(t, signer.Sign(req))
	return req
}

func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func (d *testDomain) relationship(t *testing.T, kind, actor string) store.Relationship {
	t.Helper()
	r, err := d.st.RelationshipGet(context.Background(), kind, actor)
	if err != nil {
		return store.Relationship{}
	}
	return r
}

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	anchordtest.Eventually(t, 20*time.Second, 20*time.Millisecond, cond, msg)
}
