package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpsig"
)

// fedDomain is one anchord domain of a federation test: an embedded anchord on its own port and
// data directory, with its external endpoint on loopback.
type fedDomain struct {
	t    *testing.T
	name string
	dir  string
	addr string
	args []string
	p    *anchordtest.Process
}

func newFedDomain(t *testing.T, name, addr string, args ...string) *fedDomain {
	t.Helper()
	return &fedDomain{t: t, name: name, dir: t.TempDir(), addr: addr, args: args}
}

func (d *fedDomain) start() *fedDomain {
	d.t.Helper()
	args := append([]string{"serve", "--host-url", d.addr, "--data-dir", d.dir + "/data",
		"--external-endpoint", "http://" + d.addr}, d.args...)
	d.p = anchordtest.StartProcess(d.t, anchordtest.ProcessConfig{Args: args, Dir: d.dir, Addr: d.addr})
	d.p.WaitHealthy(30 * time.Second)
	return d
}

func (d *fedDomain) actor() string { return "http://" + d.addr + "/services/anchord" }

// admin runs `anchord admin …` against the domain's admin listener.
func (d *fedDomain) admin(args ...string) (int, string, string) {
	d.t.Helper()
	target, token := "http://"+d.p.AdminAddr(), d.p.AdminToken()
	var out, errOut bytes.Buffer
	env := func(k string) (string, bool) {
		switch k {
		case "ANCHORD_TARGET":
			return target, true
		case "ANCHORD_ADMIN_TOKEN":
			return token, true
		}
		return "", false
	}
	code := runWithEnv(append([]string{"admin"}, args...), env, &out, &errOut)
	return code, out.String(), errOut.String()
}

// relationships returns `anchord admin follow list` (or followers list) as actor → status.
func (d *fedDomain) relationships(noun string) map[string]string {
	d.t.Helper()
	code, out, errOut := d.admin(noun, "list", "--json")
	require.Equal(d.t, 0, code, errOut)
	var list struct {
		Items []struct{ Actor, Status string }
	}
	require.NoError(d.t, json.Unmarshal([]byte(out), &list), out)
	m := map[string]string{}
	for _, r := range list.Items {
		m[r.Actor] = r.Status
	}
	return m
}

func (d *fedDomain) waitRelationship(noun, actor, status string) {
	d.t.Helper()
	anchordtest.Eventually(d.t, 30*time.Second, 50*time.Millisecond, func() bool {
		return d.relationships(noun)[actor] == status
	}, "%s: %s %s never became %s", d.name, noun, actor, status)
}

// TestFederationFollowThroughTheCLI: three embedded domains follow each other through the admin
// CLI; each Follow comes back accepted, the lists on both sides agree, and an unfollow reaches
// the followed domain.
func TestFederationFollowThroughTheCLI(t *testing.T) {
	t.Parallel()
	addrs := anchordtest.FreePorts(t, 3)
	a := newFedDomain(t, "A", fmt.Sprintf("127.0.0.1:%d", addrs[0])).start()
	b := newFedDomain(t, "B", fmt.Sprintf("127.0.0.1:%d", addrs[1])).start()
	c := newFedDomain(t, "C", fmt.Sprintf("127.0.0.1:%d", addrs[2])).start()

	for _, f := range []struct{ from, to *fedDomain }{{b, a}, {c, a}, {a, b}} {
		code, out, errOut := f.from.admin("follow", "add", f.to.actor())
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "following "+f.to.actor()+": pending")
	}
	b.waitRelationship("follow", a.actor(), "accepted")
	c.waitRelationship("follow", a.actor(), "accepted")
	a.waitRelationship("follow", b.actor(), "accepted")
	require.Equal(t, map[string]string{b.actor(): "accepted", c.actor(): "accepted"}, a.relationships("followers"))
	require.Equal(t, map[string]string{a.actor(): "accepted"}, b.relationships("followers"))
	require.Empty(t, c.relationships("followers"))

	code, out, errOut := a.admin("follow", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `ACTOR\s+STATUS\s+SINCE\s+ACTIVITY`, out)
	require.Contains(t, out, b.actor())

	// C witnesses only for the domains on its list (the default accept-list policy).
	code, _, errOut = c.admin("acceptlist", "add", "--type", "invite-witness", a.actor())
	require.Equal(t, 0, code, errOut)
	code, out, errOut = a.admin("witness", "add", c.actor())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "invited "+c.actor()+": pending")
	a.waitRelationship("witness", c.actor(), "accepted")
	require.Equal(t, map[string]string{a.actor(): "accepted"}, c.relationships("witnessing"))

	code, _, errOut = c.admin("follow", "remove", a.actor())
	require.Equal(t, 0, code, errOut)
	require.Empty(t, c.relationships("follow"))
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		_, ok := a.relationships("followers")[c.actor()]
		return !ok
	}, "C's Undo never reached A")
	code, _, errOut = c.admin("follow", "remove", a.actor())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not_found")

	code, _, errOut = a.admin("follow", "add", "not-an-iri")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "invalid_parameter")
	code, _, _ = a.admin("follow", "add")
	require.Equal(t, 2, code)
}

// peerStandIn is another domain in the test process: an actor and key document, and an inbox
// that records what it receives, so a test can sign requests as this peer and see the answers.
type peerStandIn struct {
	srv *httptest.Server
	key ed25519.PrivateKey

	mu       sync.Mutex
	received []*activity.Activity
}

func newPeerStandIn(t *testing.T) *peerStandIn {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	p := &peerStandIn{key: key}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peerStandIn) actor() string { return p.srv.URL + "/services/anchord" }
func (p *peerStandIn) keyID() string { return p.actor() + "/keys/main-key" }

func (p *peerStandIn) serve(w http.ResponseWriter, r *http.Request) {
	pemText, _ := httpsig.EncodePublicKeyPEM(p.key.Public().(ed25519.PublicKey))
	switch {
	case r.Method == "GET" && r.URL.Path == "/services/anchord":
		_ = json.NewEncoder(w).Encode(activity.NewService(p.actor(), pemText))
	case r.Method == "GET" && r.URL.Path == "/services/anchord/keys/main-key":
		_ = json.NewEncoder(w).Encode(map[string]string{"id": p.keyID(), "owner": p.actor(), "publicKeyPem": pemText})
	case r.Method == "GET" && r.URL.Path == "/keys/stolen":
		// A key this peer holds, claimed to be another actor's.
		_ = json.NewEncoder(w).Encode(map[string]string{"id": p.srv.URL + "/keys/stolen", "owner": r.URL.Query().Get("owner"), "publicKeyPem": pemText})
	case r.Method == "POST" && r.URL.Path == "/services/anchord/inbox":
		body, _ := io.ReadAll(r.Body)
		a, err := activity.Parse(body)
		if err != nil || r.Header.Get("Signature") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.received = append(p.received, a)
		p.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

func (p *peerStandIn) inbox() []*activity.Activity {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*activity.Activity(nil), p.received...)
}

// post sends body to url signed with keyID (the peer's own key by default).
func (p *peerStandIn) signed(t *testing.T, url string, body []byte, keyID string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	require.NoError(t, err)
	s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: keyID, PrivateKey: p.key})
	require.NoError(t, err)
	require.NoError(t, s.Sign(req))
	return req
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFederationInboxRefusals runs the inbox's refusals against a real anchord: an unsigned
// POST, a signature by a key that is not the actor's, a replayed request, and, under the
// accept-list policy, a Follow from an actor not on the list, which is answered with a Reject;
// once the actor is listed, its Follow is accepted.
func TestFederationInboxRefusals(t *testing.T) {
	t.Parallel()
	a := newFedDomain(t, "A", anchordtest.FreeAddr(t), "--follow-auth-policy", "accept-list").start()
	m := newPeerStandIn(t)
	inbox := a.actor() + "/inbox"
	followBody := func(id string) []byte {
		return []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
			m.actor()+"/activities/"+id, m.actor(), a.actor(), a.actor()))
	}

	req, _ := http.NewRequest("POST", inbox, bytes.NewReader(followBody("unsigned")))
	status, body := do(t, req)
	require.Equal(t, http.StatusUnauthorized, status, body)

	// M signs with a key it holds but says is the victim's; the victim's actor names its own.
	victim := a.actor()
	victimFollow := []byte(strings.ReplaceAll(string(followBody("stolen")), `"actor":"`+m.actor()+`"`, `"actor":"`+victim+`"`))
	status, body = do(t, m.signed(t, inbox, victimFollow, m.srv.URL+"/keys/stolen?owner="+victim))
	require.Equal(t, http.StatusUnauthorized, status, body)
	// M's own key, but an activity by another actor.
	status, body = do(t, m.signed(t, inbox, victimFollow, m.keyID()))
	require.Equal(t, http.StatusUnauthorized, status, body)

	first := m.signed(t, inbox, followBody("1"), m.keyID())
	replay, _ := http.NewRequest("POST", inbox, bytes.NewReader(followBody("1")))
	replay.Header = first.Header.Clone()
	status, body = do(t, first)
	require.Equal(t, http.StatusOK, status, body)
	status, body = do(t, replay)
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.JSONEq(t, `{"code":"unauthorized","message":"the request's HTTP signature is not accepted"}`, body,
		"why (a replay) goes to the log, not to the client")

	// M is not on A's accept list: A answers the Follow with a Reject that embeds it.
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool { return len(m.inbox()) == 1 }, "A never answered the Follow")
	reject := m.inbox()[0]
	require.Equal(t, activity.TypeReject, reject.Type)
	require.Equal(t, a.actor(), reject.Actor)
	require.Equal(t, m.actor()+"/activities/1", reject.Object.Activity.ID)
	require.Empty(t, a.relationships("followers"))

	code, out, errOut := a.admin("acceptlist", "add", "--type", "follow", m.actor())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "added to the follow accept list")
	code, out, _ = a.admin("acceptlist", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "follow  "+m.actor())
	time.Sleep(1100 * time.Millisecond) // a new Date second, or the signature of the same body repeats
	status, body = do(t, m.signed(t, inbox, followBody("2"), m.keyID()))
	require.Equal(t, http.StatusOK, status, body)
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool { return len(m.inbox()) == 2 }, "A never answered the second Follow")
	require.Equal(t, activity.TypeAccept, m.inbox()[1].Type)
	require.Equal(t, map[string]string{m.actor(): "accepted"}, a.relationships("followers"))

	code, _, errOut = a.admin("acceptlist", "remove", "--type", "follow", m.actor())
	require.Equal(t, 0, code, errOut)
	code, _, errOut = a.admin("acceptlist", "add", m.actor())
	require.Equal(t, 2, code, "the type is required")
	require.Contains(t, errOut, "--type")
}

// TestFederationDeliveryOutlivesKills: A's Follow of B is queued while B is down; A is killed
// (SIGKILL) while retrying; B comes up; A restarts and delivers from its outbox rows, and the
// relationship completes. Then a delivery that runs out of attempts is parked, and an
// operator's `dead-letters retry` delivers it once its recipient is back.
func TestFederationDeliveryOutlivesKills(t *testing.T) {
	t.Parallel()
	ports := anchordtest.FreePorts(t, 3)
	fast := []string{"--mq-redelivery-initial-interval", "100ms", "--mq-redelivery-max-interval", "300ms"}
	a := newFedDomain(t, "A", fmt.Sprintf("127.0.0.1:%d", ports[0]), append(fast, "--mq-redelivery-max-attempts", "1000")...).start()
	b := newFedDomain(t, "B", fmt.Sprintf("127.0.0.1:%d", ports[1]))

	code, _, errOut := a.admin("follow", "add", b.actor())
	require.Equal(t, 0, code, errOut)
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		return strings.Count(a.p.Log(), `msg="delivery failed; will retry"`) >= 2
	}, "A never retried the delivery to B")
	a.p.Kill()
	b.start()
	a.start()
	a.waitRelationship("follow", b.actor(), "accepted")
	require.Equal(t, map[string]string{a.actor(): "accepted"}, b.relationships("followers"))

	// Parking: C is down and A gives up after two attempts.
	a.p.Signal(15)
	_, err := a.p.Wait(30 * time.Second)
	require.NoError(t, err)
	a.args = append(fast, "--mq-redelivery-max-attempts", "2")
	a.start()
	c := newFedDomain(t, "C", fmt.Sprintf("127.0.0.1:%d", ports[2]))
	code, _, errOut = a.admin("follow", "add", c.actor())
	require.Equal(t, 0, code, errOut)
	var id string
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		code, out, _ := a.admin("dead-letters", "list", "--kind", "activity", "--json")
		var page struct {
			DeadLetters []struct {
				ID     int64
				Ref    string
				Reason string
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.DeadLetters) == 0 {
			return false
		}
		id = fmt.Sprint(page.DeadLetters[0].ID)
		require.Contains(t, page.DeadLetters[0].Reason, c.actor())
		require.True(t, strings.HasPrefix(page.DeadLetters[0].Ref, "delivery/"))
		return true
	}, "the delivery to C was never parked")
	require.Equal(t, "pending", a.relationships("follow")[c.actor()])
	c.start()
	code, out, errOut := a.admin("dead-letters", "retry", id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "retried "+id)
	a.waitRelationship("follow", c.actor(), "accepted")
	require.Equal(t, http.StatusOK, a.p.Health(), "a peer being down never made A unhealthy")
}

// TestFederationCluster: domain A is two instances on PostgreSQL and RabbitMQ behind one
// external endpoint (a round-robin proxy); B is embedded. B follows A and A follows B; with
// one of A's instances killed, C's Follow of A is still answered, by the survivor.
func TestFederationCluster(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var backends []*url.URL
	next := 0
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		mu.Lock()
		u := backends[next%len(backends)]
		next++
		mu.Unlock()
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}})
	defer proxy.Close()
	a := startCluster(t, 2, "--external-endpoint", proxy.URL)
	mu.Lock()
	for _, n := range a.nodes {
		u, _ := url.Parse("http://" + n.addr)
		backends = append(backends, u)
	}
	mu.Unlock()
	aActor := proxy.URL + "/services/anchord"
	ports := anchordtest.FreePorts(t, 2)
	b := newFedDomain(t, "B", fmt.Sprintf("127.0.0.1:%d", ports[0])).start()
	aAdmin := &fedDomain{t: t, name: "A", p: a.nodes[0].process()}

	code, _, errOut := b.admin("follow", "add", aActor)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = aAdmin.admin("follow", "add", b.actor())
	require.Equal(t, 0, code, errOut)
	b.waitRelationship("follow", aActor, "accepted")
	aAdmin.waitRelationship("follow", b.actor(), "accepted")
	require.Equal(t, map[string]string{b.actor(): "accepted"}, aAdmin.relationships("followers"))

	a.nodes[1].process().Kill()
	mu.Lock()
	backends = backends[:1]
	mu.Unlock()
	c := newFedDomain(t, "C", fmt.Sprintf("127.0.0.1:%d", ports[1])).start()
	code, _, errOut = c.admin("follow", "add", aActor)
	require.Equal(t, 0, code, errOut)
	c.waitRelationship("follow", aActor, "accepted")
	require.Equal(t, map[string]string{b.actor(): "accepted", c.actor(): "accepted"}, aAdmin.relationships("followers"))
}
