package federation

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

// TestDeliveryToADownFollowerIsParkedAndReArmed: a follower that stays down gets the delivery
// retried, then parked with a dead letter; once it is back, retrying the dead letter delivers.
func TestDeliveryToADownFollowerIsParkedAndReArmed(t *testing.T) {
	t.Parallel()
	a := newDomain(t, fastRetries(3))
	ctx := context.Background()

	// The follower answers 503 until it is "back".
	var mu sync.Mutex
	back := false
	var got []string
	var follower *httptest.Server
	follower = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == "GET" && r.URL.Path == ServicePath:
			w.Header().Set("Content-Type", activity.MediaTypeActivity)
			_, _ = w.Write(mustJSON(t, activity.NewService(follower.URL+ServicePath, "")))
		case r.Method == "POST" && back:
			b, _ := io.ReadAll(r.Body)
			got = append(got, string(b))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer follower.Close()
	followerActor := follower.URL + ServicePath
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: followerActor, Status: store.RelationshipAccepted}))
	del, _ := a.run(t)

	id, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{a.svc.FollowersIRI(), activity.PublicIRI},
		Object: activity.IRIObject("https://x.example/anchor")})
	require.NoError(t, err)
	var outcomes []string
	for len(outcomes) < 3 {
		outcomes = append(outcomes, del.delivered.WaitOrTimeout(t, 10*time.Second).Outcome)
	}
	require.Equal(t, []string{outcomeRetried, outcomeRetried, outcomeParked}, outcomes)
	require.Equal(t, 2.0, testutil.ToFloat64(a.svc.m.deliveries.WithLabelValues(outcomeRetried)))
	require.Equal(t, 1.0, testutil.ToFloat64(a.svc.m.deliveries.WithLabelValues(outcomeParked)))
	ds, err := a.st.ActivityDeliveryListByActivity(ctx, id)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, store.DeliveryParked, ds[0].Status)
	require.Contains(t, ds[0].LastError, "503")
	dls, err := a.st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterActivity, Limit: 10})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "delivery/"+itoa(ds[0].ID), dls[0].Ref)

	mu.Lock()
	back = true
	mu.Unlock()
	require.NoError(t, a.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := a.svc.RetryDeadLetter(ctx, tx, dls[0]); err != nil {
			return err
		}
		return tx.DeadLetterDelete(ctx, dls[0].ID)
	}))
	require.Equal(t, outcomeDelivered, del.delivered.WaitOrTimeout(t, 10*time.Second).Outcome)
	require.Equal(t, 1.0, testutil.ToFloat64(a.svc.m.deliveries.WithLabelValues(outcomeDelivered)))
	require.Equal(t, 1.0, testutil.ToFloat64(a.svc.m.gauges.WithLabelValues("followers")), "the gauges were read at the first round")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	require.Contains(t, got[0], id)
}

// TestPostAddressesFollowersOnce: the followers collection expands to the accepted followers of
// the moment; our own actor, excluded actors and Public are not recipients; a follower named
// twice gets one delivery.
func TestPostAddressesFollowersOnce(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	ctx := context.Background()
	for _, f := range []struct{ actor, status string }{
		{"https://b.example/services/anchord", store.RelationshipAccepted},
		{"https://c.example/services/anchord", store.RelationshipAccepted},
		{"https://p.example/services/anchord", store.RelationshipPending},
	} {
		require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: f.actor, Status: f.status}))
	}
	a.svc.cfg.NowFunc = func() time.Time { return time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC) }
	act := &activity.Activity{Type: activity.TypeAnnounce, To: activity.Strings{a.svc.FollowersIRI(), activity.PublicIRI, "https://b.example/services/anchord", a.actor()},
		Object: activity.IRIObject("https://x.example/anchor")}
	id, err := a.svc.Post(ctx, act, "https://c.example/services/anchord")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(id, a.actor()+"/activities/"))
	require.Equal(t, a.actor(), act.Actor)
	require.Equal(t, "2026-05-01T10:00:00Z", act.Published.Format(time.RFC3339))
	ds, err := a.st.ActivityDeliveryListByActivity(ctx, id)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "https://b.example/services/anchord", ds[0].Recipient)

	_, err = a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, Actor: "https://b.example/services/anchord", Object: activity.IRIObject("x:y")})
	require.ErrorContains(t, err, "not ours")
	_, err = a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{"ftp://nope"}, Object: activity.IRIObject("x:y")})
	require.Error(t, err)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
