package main

// The outbound guard against a hostile domain, with real processes: a stand-in domain on
// loopback (allowed by --peer-allowed-addresses) names inboxes and keyIds that point at a sink
// on another loopback port and at the node's own admin listener.

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/httpsig"
)

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
	sink := anchordtest.NewSink(t)
	// A allows the hostile domain's own port, nothing else of loopback.
	a := startDomain(t, "A", "--peer-allowed-addresses", h.host())
	adminA := a.process().AdminAddr()

	// Inboxes aimed at the sink and at the admin API; the Follows themselves are well signed.
	h.aim("sink", sink.URL()+"/inbox")
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
	notHTTP := anchordtest.NotHTTP(t)
	sinkB := anchordtest.NewSink(t)
	type answer struct {
		status int
		body   string
	}
	answers := map[string]answer{}
	for _, d := range []struct {
		dom   *relayDomain
		admin string
		sink  *anchordtest.Sink
	}{{a, adminA, sink}, {b, adminB, sinkB}} {
		for i, tc := range []struct{ name, actor, keyID string }{
			{"keyId on the sink, actor elsewhere", h.actor("plain"), sink.URL() + "/keys/main-key"},
			{"keyId on the admin listener, actor elsewhere", h.actor("plain"), "http://" + d.admin + "/admin/v1/dead-letters/1/retry"},
			{"actor and keyId on an open HTTP port", "http://" + d.sink.Host() + "/actor", "http://" + d.sink.Host() + "/actor/keys/main-key"},
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

	require.Zero(t, sink.Hits(), "nothing reached the sink of A's phase")
	require.Equal(t, int64(1), sinkB.Hits(), "at B, which allows loopback, only the key of the actor that claims the sink's own port")
	for _, d := range []*relayDomain{a, b} {
		require.NotContains(t, d.process().Log(), `msg="admin action"`, "no admin action at %s", d.name)
	}
	require.GreaterOrEqual(t, a.api.metric(t, `anchord_egress_refused_total{reason="admin_listener"}`), 2.0)
	require.GreaterOrEqual(t, b.api.metric(t, `anchord_egress_refused_total{reason="admin_listener"}`), 1.0)
	require.GreaterOrEqual(t, a.api.metric(t, `anchord_egress_refused_total{reason="loopback"}`), 1.0)
}

// slowHost is another domain that takes 10 s to answer anything, and counts how many of our
// requests it holds at once.
type slowHost struct {
	srv *httptest.Server
	all *inFlight
}

// inFlight counts requests being served at once and keeps the most there were until a
// moment: once our first requests give up, a host still counts a cancelled request until it
// notices the closed connection, and would count it twice with the one that took its slot.
type inFlight struct {
	mu        sync.Mutex
	now, most int
	until     time.Time
}

func (f *inFlight) add(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += d
	if time.Now().Before(f.until) {
		f.most = max(f.most, f.now)
	}
}

// reset starts counting the most until the moment until, and returns the most of the last
// count.
func (f *inFlight) reset(until time.Time) (most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	most, f.most, f.until = f.most, f.now, until
	return most
}

func newSlowHost(t *testing.T, all *inFlight) *slowHost {
	t.Helper()
	s := &slowHost{all: all}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		all.add(1)
		defer all.add(-1)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slowHost) host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// TestOutboundFanOutIsHeldAtTheCap: 300 inbox requests at once, each signed with its own keyId
// on hosts that take 10 s to answer, make A fetch 300 keys; A holds the fetches at the per-host
// cap (all on one host) or at the global cap (on ten hosts), and answers /healthcheck
// during it. How fast it answers, and whether every poll gets a 200 within the poll's 3 s, is
// TestOutboundFanOutFigures's: beside other tests, under the race detector, the machine's load
// decides it.
func TestOutboundFanOutIsHeldAtTheCap(t *testing.T) {
	t.Parallel()
	for _, f := range outboundFanOut(t) {
		t.Log(f)
		require.Equal(t, f.cap, f.hostsMost, "%s: the fetches in flight are held at the cap", f.phase)
		require.Equal(t, f.cap, f.gaugeMost, "%s: the guard's own count", f.phase)
		require.Greater(t, f.healthPolls, f.healthFailures, "%s: /healthcheck answered 200 during the fan-out", f.phase)
	}
}

// TestOutboundFanOutFigures measures the fan-out with the machine to itself: /healthcheck must
// answer within a second while 300 key fetches wait on the caps.
func TestOutboundFanOutFigures(t *testing.T) { //nolint:paralleltest // a measurement needs the machine to itself
	if os.Getenv("ANCHORD_TEST_FED_FIGURES") != "1" {
		t.Skip("set ANCHORD_TEST_FED_FIGURES=1 to measure the outbound fan-out figures")
	}
	for _, f := range outboundFanOut(t) {
		t.Log(f)
		require.Equal(t, f.cap, f.hostsMost, f.phase)
		require.Zero(t, f.healthFailures, f.phase)
		require.Less(t, f.healthSlowest, time.Second, "%s: /healthcheck answers within a second during the fan-out", f.phase)
	}
}

// fanOutFigures is what one phase of outboundFanOut saw.
type fanOutFigures struct {
	phase                string
	requests, cap        int
	hostsMost, gaugeMost int
	elapsed              time.Duration
	healthPolls          int
	healthFailures       int
	healthSlowest        time.Duration
	healthMedian         time.Duration
	filesBefore          int
	filesMost            int
}

func (f fanOutFigures) String() string {
	return fmt.Sprintf("%s: %d key fetches at once held at %d in flight at the hosts before the first timeout (the guard's gauge, all along: %d; cap %d); "+
		"all answered 401 in %s; /healthcheck polled %d times, median %s, slowest %s, %d failed; open files %d before, at most %d during",
		f.phase, f.requests, f.hostsMost, f.gaugeMost, f.cap, f.elapsed.Round(time.Millisecond), f.healthPolls,
		f.healthMedian.Round(time.Millisecond), f.healthSlowest.Round(time.Millisecond), f.healthFailures, f.filesBefore, f.filesMost)
}

// outboundFanOut starts A allowing ten slow hosts, then twice sends A 300 inbox requests at once
// whose keyIds are on those hosts: first all on one host, then spread over the ten. Meanwhile it
// polls A's /healthcheck every 100 ms, and its in-flight gauge and open files.
func outboundFanOut(t *testing.T) []fanOutFigures {
	t.Helper()
	var all inFlight
	hosts := make([]*slowHost, 10)
	names := make([]string, len(hosts))
	for i := range hosts {
		hosts[i] = newSlowHost(t, &all)
		names[i] = hosts[i].host()
	}
	a := startDomain(t, "A", "--peer-allowed-addresses", strings.Join(names, ","))
	pid := a.process().Pid()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 300}}
	t.Cleanup(client.CloseIdleConnections)

	const fanOut = 300
	var out []fanOutFigures
	for _, phase := range []struct {
		name  string
		hosts []*slowHost
		cap   int
	}{
		{"one host (per-host cap)", hosts[:1], egress.MaxRequestsPerHostDefault},
		{"ten hosts (global cap)", hosts, egress.MaxRequestsDefault},
	} {
		f := fanOutFigures{phase: phase.name, requests: fanOut, cap: phase.cap}
		f.filesBefore, _ = fdCount(pid)
		// Nothing ends before A's request timeout (10 s): until then the hosts count exactly
		// what A holds in flight.
		all.reset(time.Now().Add(9 * time.Second))
		done := make(chan struct{})
		var health []time.Duration
		var pollers sync.WaitGroup
		pollers.Go(func() {
			for {
				start := time.Now()
				if a.process().Health() != http.StatusOK {
					f.healthFailures++
				}
				health = append(health, time.Since(start))
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
		pollers.Go(func() {
			for {
				if n, err := fdCount(pid); err == nil {
					f.filesMost = max(f.filesMost, n)
				}
				if v, ok := gauge(a, "anchord_egress_requests_in_flight"); ok {
					f.gaugeMost = max(f.gaugeMost, int(v))
				}
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
		start := time.Now()
		statuses := make([]int, fanOut)
		var posts sync.WaitGroup
		for i := range fanOut {
			posts.Go(func() {
				actor := phase.hosts[i%len(phase.hosts)].srv.URL + fmt.Sprintf("/actors/%d-%d", len(out), i)
				req, err := http.NewRequest(http.MethodPost, a.actor+"/inbox", strings.NewReader(followOf(actor, a.actor, "f")))
				if err != nil {
					return
				}
				s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: actor + activity.PathMainKey, PrivateKey: key})
				if err != nil || s.Sign(req) != nil {
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				statuses[i] = resp.StatusCode
			})
		}
		posts.Wait()
		f.elapsed = time.Since(start)
		// The next phase opens its own connections.
		client.CloseIdleConnections()
		close(done)
		pollers.Wait()
		f.hostsMost = all.reset(time.Time{})
		f.healthPolls = len(health)
		slices.Sort(health)
		if len(health) > 0 {
			f.healthMedian, f.healthSlowest = health[len(health)/2], health[len(health)-1]
		}
		for i, s := range statuses {
			require.Equal(t, http.StatusUnauthorized, s, "%s: request %d", phase.name, i)
		}
		out = append(out, f)
		anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
			v, ok := gauge(a, "anchord_egress_requests_in_flight")
			return ok && v == 0
		}, "every slot is given back")
	}
	return out
}

// fdCount is the number of files process pid holds open.
func fdCount(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries), err
}

// gauge reads one unlabelled metric of d from /metrics, from any goroutine; ok is false when
// it cannot.
func gauge(d *relayDomain, name string) (float64, bool) {
	resp, err := d.api.http.Get(d.api.base + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v float64
		if n, _ := fmt.Sscanf(line, name+" %g", &v); n == 1 {
			return v, true
		}
	}
	return 0, false
}
