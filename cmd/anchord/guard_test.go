package main

// The outbound guard against a hostile domain, with real processes: a stand-in domain on
// loopback (allowed by --peer-allowed-addresses) names inboxes and keyIds that point at a sink
// on another loopback port and at the node's own admin listener.

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/httpsig"
)

// countingServer counts the requests that reach it and answers 404.
type countingServer struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	c := &countingServer{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *countingServer) host() string { return strings.TrimPrefix(c.srv.URL, "http://") }

// nonHTTPPort listens on loopback and greets every connection with a line that is not HTTP, as
// an SSH server does.
func nonHTTPPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// hostileDomain is a stand-in domain: its actors' documents name inboxes of its choosing, and
// it signs what it posts with its key.
type hostileDomain struct {
	srv *httptest.Server
	key ed25519.PrivateKey
	pem string

	mu      sync.Mutex
	inboxes map[string]string // actor name → the inbox its document names
}

func newHostileDomain(t *testing.T) *hostileDomain {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	pemText, err := httpsig.EncodePublicKeyPEM(key.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	h := &hostileDomain{key: key, pem: pemText, inboxes: map[string]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostileDomain) host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

func (h *hostileDomain) actor(name string) string { return h.srv.URL + "/actors/" + name }

// aim makes actor name's document name inbox as its inbox.
func (h *hostileDomain) aim(name, inbox string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inboxes[name] = inbox
}

func (h *hostileDomain) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/actors/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, key := strings.CutSuffix(rest, activity.PathMainKey)
	iri := h.actor(name)
	w.Header().Set("Content-Type", activity.MediaTypeActivity)
	if key {
		_ = json.NewEncoder(w).Encode(map[string]string{"id": iri + activity.PathMainKey, "owner": iri, "publicKeyPem": h.pem})
		return
	}
	a := activity.NewService(iri, h.pem)
	h.mu.Lock()
	if inbox, ok := h.inboxes[name]; ok {
		a.Inbox = inbox
	}
	h.mu.Unlock()
	_ = json.NewEncoder(w).Encode(a)
}

// post sends body to url signed with the hostile key under keyID, and returns the answer.
func (h *hostileDomain) post(t *testing.T, url, keyID, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: keyID, PrivateKey: h.key})
	require.NoError(t, err)
	require.NoError(t, s.Sign(req))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func followOf(actor, object, id string) string {
	return fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
		actor+"/activities/"+id, actor, object, object)
}

// TestHostileDomainReachesNothingOfOurs: a domain that follows us with inboxes aimed at a sink
// on another loopback port and at our admin listener gets its Accepts parked at once, with the
// reason, and nothing reaches either; keyIds aimed at the sink, the admin listener, a closed
// port and a port that is not HTTP all get one answer, which tells nothing of what is there,
// also when the operator allows all of loopback.
func TestHostileDomainReachesNothingOfOurs(t *testing.T) {
	t.Parallel()
	h := newHostileDomain(t)
	sink := newCountingServer(t)
	// A allows the hostile domain's own port, nothing else of loopback.
	a := startDomain(t, "A", "--peer-allowed-addresses", h.host())
	adminA := a.process().AdminAddr()

	// Inboxes aimed at the sink and at the admin API; the Follows themselves are well signed.
	h.aim("sink", sink.srv.URL+"/inbox")
	h.aim("admin", "http://"+adminA+"/admin/v1/dead-letters/1/retry")
	for _, name := range []string{"sink", "admin"} {
		status, body := h.post(t, a.actor+"/inbox", h.actor(name)+activity.PathMainKey, followOf(h.actor(name), a.actor, "follow"))
		require.Equal(t, http.StatusOK, status, body)
	}
	var parked []httpapi.DeadLetterView
	anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		var page httpapi.DeadLetterPage
		if json.Unmarshal([]byte(a.admin("dead-letters", "list", "--kind", "activity", "--json")), &page) != nil {
			return false
		}
		parked = page.DeadLetters
		return len(parked) == 2
	}, "both Accepts are parked")
	reasons := map[string]string{}
	for _, dl := range parked {
		require.Equal(t, 1, dl.Attempts, "parked at the first attempt, not retried: %s", dl.Reason)
		require.Contains(t, dl.Reason, "failed permanently")
		for _, name := range []string{"sink", "admin"} {
			if strings.Contains(dl.Reason, h.actor(name)+" ") {
				reasons[name] = dl.Reason
			}
		}
	}
	require.Contains(t, reasons["sink"], "a loopback address, not allowed by --peer-allowed-addresses")
	require.Contains(t, reasons["admin"], "the node's own admin listener")

	// keyIds: against A (loopback not allowed) and B (all of loopback allowed, as a careless
	// operator might): one answer for all.
	b := startDomain(t, "B", "--peer-allowed-addresses", "127.0.0.0/8")
	adminB := b.process().AdminAddr()
	closed := fmt.Sprintf("127.0.0.1:%d", anchordtest.FreePorts(t, 1)[0])
	notHTTP := nonHTTPPort(t)
	sinkB := newCountingServer(t)
	type answer struct {
		status int
		body   string
	}
	answers := map[string]answer{}
	for _, d := range []struct {
		dom   *relayDomain
		admin string
		sink  *countingServer
	}{{a, adminA, sink}, {b, adminB, sinkB}} {
		for i, tc := range []struct{ name, actor, keyID string }{
			{"keyId on the sink, actor elsewhere", h.actor("plain"), sink.srv.URL + "/keys/main-key"},
			{"keyId on the admin listener, actor elsewhere", h.actor("plain"), "http://" + d.admin + "/admin/v1/dead-letters/1/retry"},
			{"actor and keyId on an open HTTP port", "http://" + d.sink.host() + "/actor", "http://" + d.sink.host() + "/actor/keys/main-key"},
			{"actor and keyId on the admin listener", "http://" + d.admin + "/actor", "http://" + d.admin + "/admin/v1/dead-letters/1/retry"},
			{"actor and keyId on a closed port", "http://" + closed + "/actor", "http://" + closed + "/actor/keys/main-key"},
			{"actor and keyId on a port that is not HTTP", "http://" + notHTTP + "/actor", "http://" + notHTTP + "/actor/keys/main-key"},
		} {
			status, body := h.post(t, d.dom.actor+"/inbox", tc.keyID, followOf(tc.actor, d.dom.actor, fmt.Sprint("k", i)))
			answers[d.dom.name+": "+tc.name] = answer{status, body}
		}
	}
	var first *answer
	for name, got := range answers {
		require.Equal(t, http.StatusUnauthorized, got.status, "%s: %s", name, got.body)
		require.NotContains(t, got.body, "127.0.0.1", name)
		if first == nil {
			first = &got
			continue
		}
		require.Equal(t, *first, got, "%s answers like the others", name)
	}
	t.Logf("every key failure, at A and at B: %d %s", first.status, first.body)

	require.Zero(t, sink.hits.Load(), "nothing reached the sink of A's phase")
	require.Equal(t, int64(1), sinkB.hits.Load(), "at B, which allows loopback, only the key of the actor that claims the sink's own port")
	for _, d := range []*relayDomain{a, b} {
		require.NotContains(t, d.process().Log(), `msg="admin action"`, "no admin action at %s", d.name)
	}
	require.GreaterOrEqual(t, a.api.metric(t, `anchord_egress_refused_total{reason="admin_listener"}`), 2.0)
	require.GreaterOrEqual(t, b.api.metric(t, `anchord_egress_refused_total{reason="admin_listener"}`), 1.0)
	require.GreaterOrEqual(t, a.api.metric(t, `anchord_egress_refused_total{reason="loopback"}`), 1.0)
}
