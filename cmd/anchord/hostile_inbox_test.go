package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/witness"
)

// hostileLoad posts n activities made by body(i) to inbox, signed by p, from 16 goroutines, and
// counts the answers by status. It returns how long that took.
func hostileLoad(t *testing.T, p *peerStandIn, inbox string, n int, body func(i int) []byte) (map[int]int, time.Duration) {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	next := make(chan int)
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				resp, err := http.DefaultClient.Do(p.signed(t, inbox, body(i), p.keyID()))
				require.NoError(t, err)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusTooManyRequests {
					_, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					require.NoError(t, err, "a 429 says when to come back")
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return codes, time.Since(start)
}

func activityJSON(p *peerStandIn, to, typ, id, object string) []byte {
	return []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":%q,"actor":%q,"to":%q,"object":%q}`,
		p.actor()+"/activities/"+id, typ, p.actor(), to, object))
}

// inboxTableRows counts the rows of a stopped or running embedded domain's inbox table.
func inboxTableRows(t *testing.T, dataDir string) int {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dataDir})
	require.NoError(t, err)
	defer st.Close()
	rows, err := st.ActivityInboxList(context.Background(), store.ActivityPageParams{Limit: 1 << 20})
	require.NoError(t, err)
	return len(rows)
}

// TestHostilePeerGetsNothingFromTheInboxOrTheAdminAPI replays, against a real anchord, what a
// hostile domain on loopback (a stand-in actor that signs its requests properly) tried: admin
// calls without a token, bodies too large for the inbox, a flood of Likes, a flood of repeated
// Follows, and policies the parser used to take for something else.
func TestHostilePeerGetsNothingFromTheInboxOrTheAdminAPI(t *testing.T) {
	t.Parallel()
	a := newFedDomain(t, "A", anchordtest.FreeAddr(t)).start()
	m, stranger := newPeerStandIn(t), newPeerStandIn(t)
	inbox := a.actor() + "/inbox"
	adminAddr := a.p.AdminAddr()

	t.Run("admin calls without the token get 401 from loopback", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, "/admin/v1/dead-letters", ""},
			{http.MethodPost, "/admin/v1/dead-letters/1/retry", ""},
			{http.MethodDelete, "/admin/v1/dead-letters/1", ""},
			{http.MethodPost, "/admin/v1/following", `{"actor":"` + m.actor() + `"}`},
			{http.MethodGet, "/policy", ""},
			{http.MethodPost, "/policy", "OutOf(1,system)"},
			{http.MethodGet, "/debug/pprof/", ""},
		} {
			for _, auth := range []string{"", "Bearer wrong", "Bearer "} {
				req, err := http.NewRequest(c.method, "http://"+adminAddr+c.path, strings.NewReader(c.body))
				require.NoError(t, err)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				status, body := do(t, req)
				require.Equal(t, http.StatusUnauthorized, status, "%s %s (%q): %s", c.method, c.path, auth, body)
			}
		}
		require.NotContains(t, a.p.Log(), `msg="admin action"`, "no admin action was taken")
	})

	t.Run("bodies too large get 413 before any signature work", func(t *testing.T) {
		warnings := strings.Count(a.p.Log(), "level=WARN")
		huge := append([]byte(`{"type":"Create","pad":"`), bytes.Repeat([]byte("x"), 3<<20)...)
		huge = append(huge, `"}`...)
		bigLike := append([]byte(`{"type":"Like","pad":"`), bytes.Repeat([]byte("x"), 100<<10)...)
		bigLike = append(bigLike, `"}`...)
		for i := range 10 {
			for _, body := range [][]byte{huge, bigLike} {
				req, err := http.NewRequest(http.MethodPost, inbox, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
				req.Header.Set("Digest", "SHA-256=AAAA")
				req.Header.Set("Signature", `keyId="`+m.keyID()+`",algorithm="hs2019",headers="(request-target) date digest",signature="`+
					strings.Repeat("A", 86)+strconv.Itoa(10+i)+`"`)
				status, answer := do(t, req)
				require.Equal(t, http.StatusRequestEntityTooLarge, status, answer)
				require.Contains(t, answer, `"code":"request_too_large"`)
			}
		}
		// A signed GET of a collection with a body past the server's limit for that path.
		status, answer := do(t, m.signedGet(t, a.actor()+"/followers", bytes.Repeat([]byte("x"), 100<<10)))
		require.Equal(t, http.StatusRequestEntityTooLarge, status, answer)
		require.Equal(t, warnings, strings.Count(a.p.Log(), "level=WARN"), "no warning per refused body")
	})

	// M becomes a follower, as any domain may: Likes are what followers post.
	status, body := do(t, m.signed(t, inbox, activityJSON(m, a.actor(), "Follow", "follow-0", a.actor()), m.keyID()))
	require.Equal(t, http.StatusOK, status, body)
	a.waitRelationship("followers", m.actor(), "accepted")

	t.Run("3,000 Likes from one actor meet 429s and the inbox stays bounded", func(t *testing.T) {
		before := inboxTableRows(t, a.dir+"/data")
		codes, took := hostileLoad(t, m, inbox, 3000, func(i int) []byte {
			return activityJSON(m, a.actor(), "Like", "like-"+strconv.Itoa(i), "https://x.example/anchor/"+strconv.Itoa(i))
		})
		t.Logf("3,000 Likes in %s: %v", took.Round(time.Millisecond), codes)
		require.Equal(t, 3000, codes[http.StatusOK]+codes[http.StatusTooManyRequests], "every answer is 200 or 429: %v", codes)
		require.Positive(t, codes[http.StatusTooManyRequests])
		// At most the burst and the sustained rate over the run, with a token of slack each side.
		bound := federation.InboxActorBurstDefault + int(federation.InboxActorRateDefault*took.Seconds()) + 2
		require.LessOrEqual(t, codes[http.StatusOK], bound)
		rows := inboxTableRows(t, a.dir+"/data")
		require.Equal(t, before+codes[http.StatusOK], rows, "only the Likes answered 200 were stored")
		t.Logf("inbox table: %d rows (bound %d + %d)", rows, before, bound)

		// A stranger's Likes are taken and dropped: nothing stored.
		codes, _ = hostileLoad(t, stranger, inbox, 50, func(i int) []byte {
			return activityJSON(stranger, a.actor(), "Like", "like-"+strconv.Itoa(i), "https://x.example/anchor")
		})
		require.Equal(t, map[int]int{http.StatusAccepted: 50}, codes)
		require.Equal(t, rows, inboxTableRows(t, a.dir+"/data"))
	})

	t.Run("malformed policies get 400", func(t *testing.T) {
		token := a.p.AdminToken()
		set := func(policy string) (int, string) {
			req, err := http.NewRequest(http.MethodPost, "http://"+adminAddr+"/admin/v1/policy", strings.NewReader(policy))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			return do(t, req)
		}
		status, body := set("OutOf(1,system)")
		require.Equal(t, http.StatusOK, status, body)
		for _, policy := range []string{"AND", "OR", "OR OR", "OutOf(1,system) AND", "AND OutOf(1,system)",
			"OutOf(1,system) OR OR OutOf(1,batch)", "OutOf(1,system) AND OutOf(2,system)", "LogRequired OutOf(1,system)",
			"OutOf(+1,system)", "OutOf(1,system)  AND OutOf(1,batch)", "MinPercent(101,batch)"} {
			status, body := set(policy)
			require.Equal(t, http.StatusBadRequest, status, "%q: %s", policy, body)
			require.Contains(t, body, `"code":"invalid_policy"`)
		}
		code, out, errOut := a.admin("policy", "get")
		require.Equal(t, 0, code, errOut)
		want, err := witness.Parse("OutOf(1,system)")
		require.NoError(t, err)
		require.Equal(t, want.String()+"\n", out, "no refused policy replaced the stored one")
	})
}

// TestHostileRepeatedFollowsAreAnsweredOnce: 500 Follows from one actor, all taken (the domain's
// inbox rates are raised out of the way, so that what bounds the outbox is the answer itself),
// leave at most a few Accepts in the outbox.
func TestHostileRepeatedFollowsAreAnsweredOnce(t *testing.T) {
	t.Parallel()
	high := []string{"--inbox-actor-rate-limit", "100000", "--inbox-actor-rate-burst", "100000",
		"--inbox-domain-rate-limit", "100000", "--inbox-domain-rate-burst", "100000"}
	b := newFedDomain(t, "B", anchordtest.FreeAddr(t), high...).start()
	m := newPeerStandIn(t)
	codes, took := hostileLoad(t, m, b.actor()+"/inbox", 500, func(i int) []byte {
		return activityJSON(m, b.actor(), "Follow", "follow-"+strconv.Itoa(i), b.actor())
	})
	t.Logf("500 Follows in %s: %v", took.Round(time.Millisecond), codes)
	require.Equal(t, map[int]int{http.StatusOK: 500}, codes)
	api := newClient(b.addr)
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return api.metricTotal(t, `anchord_federation_inbox_activities_total{outcome="done",type="Follow"}`) == 500
	}, "B handled the 500 Follows")
	accepts := api.metricTotal(t, `anchord_federation_outbox_activities_total{type="Accept"}`)
	t.Logf("Accepts posted for 500 Follows: %v", accepts)
	require.GreaterOrEqual(t, accepts, 1.0)
	// Follows handled at once before the follower existed may each be answered (the inbox
	// handles five at a time); every later one is a repeat within the interval.
	require.LessOrEqual(t, accepts, 5.0)
	require.Equal(t, map[string]string{m.actor(): "accepted"}, b.relationships("followers"))
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		return len(m.inbox()) == int(accepts)
	}, "the stand-in received each Accept once")
}

// signedGet is a GET signed by the stand-in, with a body (which a GET may carry, and a hostile
// peer may make as large as it likes).
func (p *peerStandIn) signedGet(t *testing.T, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, bytes.NewReader(body))
	require.NoError(t, err)
	s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: p.keyID(), PrivateKey: p.key, MaxBodyBytes: 8 << 20})
	require.NoError(t, err)
	require.NoError(t, s.Sign(req))
	return req
}
