package peer

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// domain is a stand-in for another domain: an actor document and its key document, with
// switches to make them misbehave.
type domain struct {
	srv   *httptest.Server
	actor string
	key   ed25519.PrivateKey

	mu          sync.Mutex
	actorStatus int    // 0: serve the document
	actorKeyID  string // what the actor document names as its key ("": its own)
	actorHits   atomic.Int64
	keyHits     atomic.Int64
	handler     http.HandlerFunc // extra routes
}

func newDomain(t *testing.T) *domain {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	d := &domain{key: key}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	d.actor = d.srv.URL + "/services/anchord"
	return d
}

func (d *domain) keyID() string { return d.actor + activity.PathMainKey }

func (d *domain) pem(t testing.TB) string {
	p, err := httpsig.EncodePublicKeyPEM(d.key.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	return p
}

func (d *domain) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	status, keyID, extra := d.actorStatus, d.actorKeyID, d.handler
	d.mu.Unlock()
	switch r.URL.Path {
	case "/services/anchord":
		d.actorHits.Add(1)
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		pemText, _ := httpsig.EncodePublicKeyPEM(d.key.Public().(ed25519.PublicKey))
		a := activity.NewService(d.actor, pemText)
		if keyID != "" {
			a.PublicKey.ID = keyID
		}
		_ = json.NewEncoder(w).Encode(a)
	case "/services/anchord/keys/main-key":
		d.keyHits.Add(1)
		pemText, _ := httpsig.EncodePublicKeyPEM(d.key.Public().(ed25519.PublicKey))
		_ = json.NewEncoder(w).Encode(keyDocument{ID: d.keyID(), Owner: d.actor, PublicKeyPem: pemText})
	default:
		if extra != nil {
			extra(w, r)
			return
		}
		http.NotFound(w, r)
	}
}

func (d *domain) set(fn func(d *domain)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d)
}

type testBundle struct {
	guard  *egress.Guard
	client *Client
	clock  *anchordtest.Clock
	st     store.Store
	ourKey ed25519.PrivateKey
	keyID  string
}

// loopbackGuard is an outbound guard that lets the test's servers on loopback through.
func loopbackGuard(t *testing.T) *egress.Guard {
	t.Helper()
	allowed, err := egress.ParseAllowed("127.0.0.0/8")
	require.NoError(t, err)
	g, err := egress.New(egress.Config{Allowed: allowed})
	require.NoError(t, err)
	t.Cleanup(g.CloseIdleConnections)
	return g
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	clock := anchordtest.NewClock()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := &testBundle{clock: clock, st: st, ourKey: key, keyID: "http://us.example/services/anchord/keys/main-key", guard: loopbackGuard(t)}
	b.client, err = New(Config{
		KeyID: b.keyID, PrivateKey: key, Timeout: 5 * time.Second, NowFunc: clock.Now, HTTP: b.guard.Client(),
		Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry(),
	}, st)
	require.NoError(t, err)
	t.Cleanup(b.client.Close)
	return b
}

// verifier checks requests signed by the bundle's client (at the bundle's clock).
func (b *testBundle) verifier(t *testing.T) *httpsig.Verifier {
	t.Helper()
	v, err := httpsig.NewVerifier(httpsig.VerifierConfig{
		NowFunc: b.clock.Now,
		ResolveKeyFunc: func(_ context.Context, keyID string) (httpsig.PublicKey, error) {
			if keyID != b.keyID {
				return httpsig.PublicKey{}, httpsig.ErrKeyNotFound
			}
			return httpsig.PublicKey{Key: b.ourKey.Public().(ed25519.PublicKey), Owner: "http://us.example/services/anchord"}, nil
		},
	})
	require.NoError(t, err)
	return v
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	_, key, _ := ed25519.GenerateKey(nil)
	hc := loopbackGuard(t).Client()
	_, err := New(Config{PrivateKey: key, HTTP: hc}, st)
	require.ErrorContains(t, err, "key id")
	_, err = New(Config{KeyID: "http://x/k", PrivateKey: key}, st)
	require.ErrorContains(t, err, "outbound guard")
	_, err = New(Config{KeyID: "http://x/k", PrivateKey: key[:10], HTTP: hc}, st)
	require.ErrorContains(t, err, "private key")
	_, err = New(Config{KeyID: "http://x/k", PrivateKey: key, Timeout: -time.Second, HTTP: hc}, st)
	require.ErrorContains(t, err, "negative")
}

func TestFetchAndPostAreSignedAndVerifiable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := b.verifier(t)
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signer, err := v.Verify(r)
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.Header.Get("Content-Type")+" "+string(body))
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		require.Equal(t, "http://us.example/services/anchord", signer.Owner)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	ctx := context.Background()

	body, err := b.client.Fetch(ctx, srv.URL+"/services/anchord/outbox?page=true", 1024)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(body))
	b.clock.Advance(time.Second) // a new Date, so a new signature
	require.NoError(t, b.client.Post(ctx, srv.URL+"/services/anchord/inbox", []byte(`{"type":"Follow"}`)))
	require.Equal(t, []string{"GET  ", `POST application/activity+json {"type":"Follow"}`}, got)
}

func TestFetchBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := strings.Repeat("x", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, big)
		case "/chunked":
			w.Header().Set("Content-Type", "text/plain")
			for range 5 {
				_, _ = io.WriteString(w, big[:1000])
				w.(http.Flusher).Flush()
			}
		case "/redirect":
			http.Redirect(w, r, "/big", http.StatusFound)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/gone":
			w.WriteHeader(http.StatusGone)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	_, err := b.client.Fetch(ctx, srv.URL+"/big", 4999)
	require.ErrorIs(t, err, ErrTooLarge, "announced length")
	_, err = b.client.Fetch(ctx, srv.URL+"/chunked", 4999)
	require.ErrorIs(t, err, ErrTooLarge, "streamed length")
	got, err := b.client.Fetch(ctx, srv.URL+"/big", 5000)
	require.NoError(t, err)
	require.Len(t, got, 5000)

	_, err = b.client.Fetch(ctx, srv.URL+"/redirect", 1<<20)
	var se *StatusError
	require.ErrorAs(t, err, &se, "redirects are not followed")
	require.Equal(t, http.StatusFound, se.Code)

	_, err = b.client.Fetch(ctx, srv.URL+"/gone", 10)
	require.True(t, IsNotFound(err))
	_, err = b.client.Fetch(ctx, srv.URL+"/broken", 10)
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusInternalServerError, se.Code)
	require.False(t, IsNotFound(err))

	_, err = b.client.Fetch(ctx, "ftp://example.com/x", 10)
	require.ErrorContains(t, err, "scheme")

	short, err := New(Config{KeyID: b.keyID, PrivateKey: b.ourKey, Timeout: 100 * time.Millisecond, HTTP: b.guard.Client()}, b.st)
	require.NoError(t, err)
	defer short.Close()
	start := time.Now()
	_, err = short.Fetch(ctx, srv.URL+"/slow", 10)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), err)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestPostReportsStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, strings.Repeat("y", 1<<20))
	}))
	defer srv.Close()
	err := b.client.Post(context.Background(), srv.URL+"/inbox", []byte(`{}`))
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusServiceUnavailable, se.Code)
	require.Contains(t, err.Error(), "503")
}
