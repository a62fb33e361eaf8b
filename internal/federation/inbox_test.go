package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
)

func like(from, to *testDomain, id string) []byte {
	return []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Like","actor":%q,"to":%q,"object":"https://x.example/anchor"}`,
		from.actor()+"/activities/"+id, from.actor(), to.actor()))
}

func inboxCount(t *testing.T, d *testDomain) int {
	t.Helper()
	return len(inboxRows(t, d))
}

// TestOversizedBodiesAreRefusedBeforeTheSignature: a body over the inbox's cap, or over its
// type's, is answered 413 without a key being fetched or a warning logged, whatever its
// signature claims.
func TestOversizedBodiesAreRefusedBeforeTheSignature(t *testing.T) {
	t.Parallel()
	var logs anchordtest.SyncBuffer
	a := newDomain(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var keyFetches atomic.Int64
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		keyFetches.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(keys.Close)
	forged := func(body []byte, contentLength bool) (int, string) {
		req, err := http.NewRequest(http.MethodPost, a.srv.URL+InboxPath(), bytes.NewReader(body))
		require.NoError(t, err)
		if !contentLength {
			req.ContentLength = -1 // chunked: the cap is found by reading
		}
		req.Header.Set("Date", a.svc.cfg.NowFunc().UTC().Format(http.TimeFormat))
		req.Header.Set("Digest", "SHA-256=AAAA")
		req.Header.Set("Signature", `keyId="`+keys.URL+`/key",algorithm="hs2019",headers="(request-target) date digest",signature="`+strings.Repeat("A", 88)+`"`)
		return send(t, req)
	}
	huge := append([]byte(`{"type":"Create","pad":"`), bytes.Repeat([]byte("x"), 3<<20)...)
	huge = append(huge, `"}`...)
	for _, cl := range []bool{true, false} {
		status, body := forged(huge, cl)
		require.Equal(t, http.StatusRequestEntityTooLarge, status, body)
		require.JSONEq(t, `{"code":"request_too_large","message":"an activity is limited to 2097152 bytes"}`, body)
	}
	bigLike := append([]byte(`{"type":"Like","pad":"`), bytes.Repeat([]byte("x"), 100<<10)...)
	bigLike = append(bigLike, `"}`...)
	status, body := forged(bigLike, true)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, body)
	require.Contains(t, body, "a Like activity is limited to 65536 bytes")
	require.Zero(t, keyFetches.Load(), "no key was fetched for a body refused for its size")
	require.NotContains(t, logs.String(), "level=WARN")
	require.Zero(t, inboxCount(t, a))
}

// TestInboxQuotaPerActorAndDomain: beyond its burst an actor gets 429 with Retry-After, and
// nothing of what was refused is stored; another domain keeps its own bucket.
func TestInboxQuotaPerActorAndDomain(t *testing.T) {
	t.Parallel()
	a := newDomain(t, func(c *Config) { c.InboxActorRate, c.InboxActorBurst = 0.001, 5 })
	m, other := newDomain(t), newDomain(t)
	ctx := context.Background()
	for _, d := range []*testDomain{m, other} {
		require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: d.actor(), Status: store.RelationshipAccepted}))
	}
	codes := map[int]int{}
	var retryAfter string
	for i := range 20 {
		req := m.signedRequest(t, http.MethodPost, a.srv.URL+InboxPath(), like(m, a, "l"+strconv.Itoa(i)))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = resp.Header.Get("Retry-After")
		}
	}
	require.Equal(t, map[int]int{http.StatusOK: 5, http.StatusTooManyRequests: 15}, codes)
	secs, err := strconv.Atoi(retryAfter)
	require.NoError(t, err)
	require.Greater(t, secs, 60, "one token per 1,000 s")
	require.Equal(t, 5, inboxCount(t, a))
	status, body := send(t, other.signedRequest(t, http.MethodPost, a.srv.URL+InboxPath(), like(other, a, "o")))
	require.Equal(t, http.StatusOK, status, body)

	// A domain's actors share its bucket.
	b := newDomain(t, func(c *Config) { c.InboxDomainRate, c.InboxDomainBurst = 0.001, 3 })
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: m.actor(), Status: store.RelationshipAccepted}))
	for i := range 3 {
		status, body := send(t, m.signedRequest(t, http.MethodPost, b.srv.URL+InboxPath(), like(m, b, "d"+strconv.Itoa(i))))
		require.Equal(t, http.StatusOK, status, body)
	}
	status, body = send(t, m.signedRequest(t, http.MethodPost, b.srv.URL+InboxPath(), like(m, b, "d3")))
	require.Equal(t, http.StatusTooManyRequests, status, body)
	require.Contains(t, body, "too many activities from this domain")
}

// TestWhoMayPostWhat: a Like from a domain without a relationship is taken (202) and dropped; an
// Undo or an Accept from one is refused; a follower's Like is stored.
func TestWhoMayPostWhat(t *testing.T) {
	t.Parallel()
	a, stranger, follower := newDomain(t), newDomain(t), newDomain(t)
	ctx := context.Background()
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: follower.actor(), Status: store.RelationshipAccepted}))
	inbox := a.srv.URL + InboxPath()

	status, body := send(t, stranger.signedRequest(t, http.MethodPost, inbox, like(stranger, a, "l")))
	require.Equal(t, http.StatusAccepted, status, body)
	require.Zero(t, inboxCount(t, a), "a stranger's Like is not stored")
	status, body = send(t, follower.signedRequest(t, http.MethodPost, inbox, like(follower, a, "l")))
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, 1, inboxCount(t, a))

	undo := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Undo","actor":%q,"to":%q,"object":%s}`,
		stranger.actor()+"/activities/u", stranger.actor(), a.actor(), follow(stranger, a, "never"))
	status, body = send(t, stranger.signedRequest(t, http.MethodPost, inbox, []byte(undo)))
	require.Equal(t, http.StatusForbidden, status, body)

	// An Undo of a Follow still waiting in our inbox is taken: the two may arrive together.
	status, body = send(t, stranger.signedRequest(t, http.MethodPost, inbox, follow(stranger, a, "soon")))
	require.Equal(t, http.StatusOK, status, body)
	undo = fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Undo","actor":%q,"to":%q,"object":%s}`,
		stranger.actor()+"/activities/u2", stranger.actor(), a.actor(), follow(stranger, a, "soon"))
	status, body = send(t, stranger.signedRequest(t, http.MethodPost, inbox, []byte(undo)))
	require.Equal(t, http.StatusOK, status, body)
}

// TestInboxErrorsQuoteNothing: no refusal repeats the key id, the activity, or what a fetch
// found; every one is {code, message}.
func TestInboxErrorsQuoteNothing(t *testing.T) {
	t.Parallel()
	a, m := newDomain(t), newDomain(t)
	inbox := a.srv.URL + InboxPath()
	secret := "https://127.0.0.1:1/" + strings.Repeat("probe", 20)
	for name, req := range map[string]*http.Request{
		"unknown key": func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, inbox, bytes.NewReader(follow(m, a, "k")))
			s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: secret, PrivateKey: m.key})
			require.NoError(t, err)
			require.NoError(t, s.Sign(req))
			return req
		}(),
		"malformed": m.signedRequest(t, http.MethodPost, inbox, []byte(`{"type":"Follow","id":"`+secret+`"`)),
		"bad actor": m.signedRequest(t, http.MethodPost, inbox, []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"object":%q}`,
			m.actor()+"/activities/x", secret, a.actor()))),
	} {
		status, body := send(t, req)
		require.GreaterOrEqual(t, status, 400, name)
		require.NotContains(t, body, "probe", name)
		var eb struct{ Code, Message string }
		require.NoError(t, json.Unmarshal([]byte(body), &eb), name)
		require.NotEmpty(t, eb.Code, name)
		require.NotEmpty(t, eb.Message, name)
	}
}

func TestPeekType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"Like"}`:                               "Like",
		` { "id" : "x" , "type" : "Create" } `:          "Create",
		`{"object":{"type":"Follow"},"type":"Accept"}`:  "Accept",
		`{"a":[1,{"type":"x"},"]}"],"type":"Undo"}`:     "Undo",
		`{"TYPE":"Like"}`:                               "Like",
		`{"type":"Create","Type":"Like"}`:               "Like",
		`{"ty\u0070e":"Offer"}`:                         "Offer",
		`{"type":"L\u0069ke"}`:                          "Like",
		`{"n":-1.5e3,"t":true,"f":null,"type":"Offer"}`: "Offer",
	} {
		got, ok := peekType([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{``, `[]`, `{}`, `{"id":"x"}`, `{"type":1}`, `{"type":["Like"]}`, `{"type":null}`,
		`{"type":"Like"`, `{"type":"Like",}`, `{"a":"\"}`, `{"a":{"b":[}`, `"type"`} {
		_, ok := peekType([]byte(in))
		require.False(t, ok, in)
	}
}

// FuzzPeekType: whatever peekType reads from a JSON object is what encoding/json decodes into a
// field tagged "type"; it never panics on anything else.
func FuzzPeekType(f *testing.F) {
	for _, seed := range []string{`{"type":"Like"}`, `{"TYPE":"x","type":"y"}`, `{"a":{"type":"x"},"type":"z"}`,
		`{"type":"\u00e9"}`, `{"type":"\xff"}`, `{"a":"]}","type":"q"}`, `{"type":null}`, `[1]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := peekType(body)
		if !ok {
			return
		}
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &v) != nil {
			return // not JSON beyond what the peek walked: the parser refuses it
		}
		if got != v.Type {
			t.Fatalf("peekType(%q) = %q, encoding/json %q", body, got, v.Type)
		}
	})
}
