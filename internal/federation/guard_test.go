package federation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
)

// signedAs builds an inbox POST of body signed with key under keyID.
func signedAs(t *testing.T, url, keyID string, d *testDomain, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: keyID, PrivateKey: d.key})
	require.NoError(t, err)
	require.NoError(t, s.Sign(req))
	return req
}

func followFrom(actor, to string, id string) string {
	return fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
		actor+"/activities/"+id, actor, to, to)
}

// TestInboxKeyFailuresAreAnsweredAlike: whatever a keyId points at, the inbox answers one
// status and one body, which names neither the keyId nor what fetching it found; keyIds off the
// claimed actor's host are not fetched at all.
func TestInboxKeyFailuresAreAnsweredAlike(t *testing.T) {
	t.Parallel()
	a, m := newDomain(t), newDomain(t)
	closedGuard := newDomainGuarded(t, guardAllowing(t, ""))
	sk := anchordtest.NewSink(t)
	closedPort := fmt.Sprintf("127.0.0.1:%d", anchordtest.FreePorts(t, 1)[0])
	garbage := anchordtest.NotHTTP(t)
	inbox := a.srv.URL + InboxPath()
	actorOn := func(hostPort string) string { return "http://" + hostPort + ServicePath }

	cases := []struct {
		name, inbox, actor, keyID string
	}{
		{"keyId on another host than the actor", inbox, m.actor(), sk.URL() + "/keys/main-key"},
		{"keyId on the admin-like sink, actor elsewhere", inbox, m.actor(), sk.URL() + "/admin/v1/dead-letters/1/retry"},
		{"keyId that is not a URL", inbox, m.actor(), "did:web:127.0.0.1#key-1"},
		{"actor and keyId on an open HTTP port", inbox, actorOn(sk.Host()), actorOn(sk.Host()) + "/keys/main-key"},
		{"actor and keyId on a closed port", inbox, actorOn(closedPort), actorOn(closedPort) + "/keys/main-key"},
		{"actor and keyId on a port that is not HTTP", inbox, actorOn(garbage), actorOn(garbage) + "/keys/main-key"},
		{"the actor's own key, but another private key", inbox, a.actor(), a.svc.KeyID()},
		{"a keyId the guard refuses", closedGuard.srv.URL + InboxPath(), m.actor(), m.svc.KeyID()},
	}
	type answer struct {
		status int
		body   string
	}
	var first *answer
	for i, tc := range cases {
		status, body := send(t, signedAs(t, tc.inbox, tc.keyID, m, followFrom(tc.actor, a.actor(), fmt.Sprint("k", i))))
		got := answer{status, body}
		require.Equal(t, http.StatusUnauthorized, status, "%s: %s", tc.name, body)
		require.NotContains(t, body, "127.0.0.1", tc.name)
		require.NotContains(t, body, "keys", tc.name)
		if first == nil {
			first = &got
			continue
		}
		require.Equal(t, *first, got, tc.name)
	}
	require.Contains(t, first.body, keyUnverifiedMessage)
	// The sink got only the two fetches of the case whose actor claims to live on it; the
	// keyIds that pointed at it from elsewhere were never fetched.
	require.Equal(t, int64(1), sk.Hits(), "only the key document of the actor on the sink's own port")
	require.Zero(t, inboxCount(t, a))
}

// TestRefusedDeliveryIsParkedAtOnce: a follower whose actor document names an inbox the guard
// refuses (another loopback port, the admin listener) gets no request and no retries: the
// delivery is parked on its first attempt, with the reason.
func TestRefusedDeliveryIsParkedAtOnce(t *testing.T) {
	t.Parallel()
	sk, admin := anchordtest.NewSink(t), anchordtest.NewSink(t)
	var hostile *httptest.Server
	hostile = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inbox := sk.URL() + "/inbox"
		if strings.HasPrefix(r.URL.Path, "/admin") {
			inbox = admin.URL() + "/admin/v1/dead-letters/1/retry"
		}
		a := activity.NewService(hostile.URL+r.URL.Path, "")
		a.Inbox = inbox
		w.Header().Set("Content-Type", activity.MediaTypeActivity)
		_, _ = w.Write(mustJSON(t, a))
	}))
	t.Cleanup(hostile.Close)
	host := strings.TrimPrefix(hostile.URL, "http://")
	// The hostile domain and even the admin listener's port are allowed; the admin listener
	// is refused all the same.
	a := newDomainGuarded(t, guardAllowing(t, host+","+admin.Host(), admin.Host()), fastRetries(30))
	ctx := context.Background()
	for _, actor := range []string{hostile.URL + "/sink", hostile.URL + "/admin"} {
		require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: actor, Status: store.RelationshipAccepted}))
	}
	del, _ := a.run(t)
	_, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{a.svc.FollowersIRI()}, Object: activity.IRIObject("https://x.example/anchor")})
	require.NoError(t, err)
	reasons := map[string]string{}
	for range 2 {
		o := del.delivered.WaitOrTimeout(t, 10*time.Second)
		require.Equal(t, outcomeParked, o.Outcome, o.Err)
		require.ErrorIs(t, o.Err, egress.ErrRefused)
		var re *egress.RefusedError
		require.ErrorAs(t, o.Err, &re)
		reasons[o.Recipient] = re.Reason
	}
	require.Equal(t, map[string]string{hostile.URL + "/sink": egress.ReasonLoopback, hostile.URL + "/admin": egress.ReasonAdmin}, reasons)
	dls, err := a.st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterActivity, Limit: 10})
	require.NoError(t, err)
	require.Len(t, dls, 2)
	for _, dl := range dls {
		require.Equal(t, 1, dl.Attempts)
		require.Contains(t, dl.Reason, "failed permanently")
		require.Contains(t, dl.Reason, "refused")
	}
	require.Zero(t, sk.Hits())
	require.Zero(t, admin.Hits())
}
