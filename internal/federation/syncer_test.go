package federation

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
)

func postCreates(t *testing.T, d *testDomain, n int, at time.Time, tag string) []string {
	t.Helper()
	d.svc.cfg.NowFunc = func() time.Time { return at }
	var ids []string
	for i := range n {
		id, err := d.svc.Post(context.Background(), &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{activity.PublicIRI},
			Object: activity.IRIObject(fmt.Sprintf("https://x.example/%s/%d", tag, i))})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func inboxRows(t *testing.T, d *testDomain) []store.InboxActivity {
	t.Helper()
	rows, err := d.st.ActivityInboxList(context.Background(), store.ActivityPageParams{Limit: 1000})
	require.NoError(t, err)
	return rows
}

func TestSyncPullsAFollowedDomainsOutboxFromItsPosition(t *testing.T) {
	t.Parallel()
	a, b := newDomain(t), newDomain(t)
	ctx := context.Background()
	a.svc.cfg.PageSize = 2
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: a.actor(), Status: store.RelationshipAccepted}))
	now := time.Now()
	old := postCreates(t, a, 5, now.Add(-2*time.Hour), "old")
	_, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeFollow, To: activity.Strings{b.actor()}, Object: activity.IRIObject(b.actor())})
	require.NoError(t, err)
	// Published after we were taken as a follower (and past the clock skew): live delivery's.
	young := postCreates(t, a, 2, now.Add(2*time.Minute), "young")

	b.svc.cfg.SyncMinActivityAge = time.Hour
	b.svc.cfg.NowFunc = func() time.Time { return now.Add(2 * time.Minute) }
	y := b.svc.Syncer()
	res, err := y.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, SyncResult{Queued: 5, Sources: 1}, res, "activities younger than the minimum age are left to live delivery")
	rows := inboxRows(t, b)
	require.Len(t, rows, 5)
	for i, r := range rows {
		require.Equal(t, old[i], r.ActivityID, "queued in the order published")
		require.Equal(t, store.InboxSourceSync, r.Source)
		require.Equal(t, a.actor(), r.Actor)
		require.Equal(t, a.actor(), r.From)
		sent, err := a.st.ActivityOutboxGet(ctx, r.ActivityID)
		require.NoError(t, err)
		require.Equal(t, sent.Body, r.Body, "stored as the peer served it")
	}
	require.Zero(t, y.NextInterval())

	res, err = y.runOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Queued, "the position was kept")

	b.svc.cfg.NowFunc = func() time.Time { return now.Add(2 * time.Hour) }
	res, err = y.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Queued)
	rows = inboxRows(t, b)
	require.Equal(t, young, []string{rows[5].ActivityID, rows[6].ActivityID})

	// A live copy that arrived first makes the synced one a no-op, and the reverse.
	more := postCreates(t, a, 1, now, "more")
	_, ok, err := b.st.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{ActivityID: more[0], Actor: a.actor(), From: a.actor(),
		Type: "Create", Body: []byte("{}"), Source: store.InboxSourceLive})
	require.NoError(t, err)
	require.True(t, ok)
	res, err = y.runOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Queued)
}

// TestSyncTakesWhatWasPublishedBeforeWeFollowedAtOnce: activities a domain published before it
// took us as a follower never come live, so a new follower syncs them however young they are;
// what is published later is left to live delivery for the minimum age, as before.
func TestSyncTakesWhatWasPublishedBeforeWeFollowedAtOnce(t *testing.T) {
	t.Parallel()
	a, b := newDomain(t), newDomain(t)
	ctx := context.Background()
	now := time.Now()
	before := postCreates(t, a, 3, now.Add(-5*time.Minute), "before")
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: a.actor(), Status: store.RelationshipAccepted}))
	postCreates(t, a, 2, now.Add(5*time.Minute), "after")

	b.svc.cfg.SyncMinActivityAge = time.Hour
	b.svc.cfg.NowFunc = func() time.Time { return now.Add(5 * time.Minute) }
	res, err := b.svc.Syncer().runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Queued, "published before the follow: synced at once; after it: left to live delivery")
	rows := inboxRows(t, b)
	require.Len(t, rows, 3)
	for i, r := range rows {
		require.Equal(t, before[i], r.ActivityID)
	}
}

func TestSyncBudgetAcceleratesTheNextRun(t *testing.T) {
	t.Parallel()
	a, b := newDomain(t), newDomain(t)
	ctx := context.Background()
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: a.actor(), Status: store.RelationshipAccepted}))
	postCreates(t, a, 5, time.Now().Add(-time.Hour), "x")
	b.svc.cfg.SyncMaxActivities = 3
	y := b.svc.Syncer()
	res, err := y.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Queued)
	require.Equal(t, SyncAcceleratedIntervalDefault, y.NextInterval())
	res, err = y.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Queued)
	require.Zero(t, y.NextInterval())
}

// TestSyncReadsOurOwnCreatesBackFromAFollowersInbox: a follower's inbox gives back the Creates
// we posted (what a domain restored from an old backup lost), and nothing else.
func TestSyncReadsOurOwnCreatesBackFromAFollowersInbox(t *testing.T) {
	t.Parallel()
	a, b, c := newDomain(t), newDomain(t), newDomain(t)
	ctx := context.Background()
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: b.actor(), Status: store.RelationshipAccepted}))
	// B lets A read its inbox: A follows B too.
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: a.actor(), Status: store.RelationshipAccepted}))
	ours := postCreates(t, a, 2, time.Now().Add(-time.Hour), "ours")
	theirs := postCreates(t, c, 1, time.Now().Add(-time.Hour), "theirs")
	for _, x := range []struct {
		d  *testDomain
		id string
	}{{a, ours[0]}, {c, theirs[0]}, {a, ours[1]}} {
		sent, err := x.d.st.ActivityOutboxGet(ctx, x.id)
		require.NoError(t, err)
		_, _, err = b.st.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{ActivityID: x.id, Actor: x.d.actor(), From: x.d.actor(),
			Type: "Create", Body: sent.Body, Source: store.InboxSourceLive})
		require.NoError(t, err)
	}
	res, err := a.svc.Syncer().runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Queued)
	rows := inboxRows(t, a)
	require.Equal(t, ours, []string{rows[0].ActivityID, rows[1].ActivityID})
	require.Equal(t, b.actor(), rows[0].From)
	require.Equal(t, a.actor(), rows[0].Actor)
}

func TestSyncSkipsAFailingSourceAndGoesOn(t *testing.T) {
	t.Parallel()
	a, b, gone := newDomain(t), newDomain(t), newDomain(t)
	ctx := context.Background()
	gone.srv.Close()
	for _, f := range []string{gone.actor(), a.actor()} {
		require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: f, Status: store.RelationshipAccepted}))
	}
	postCreates(t, a, 1, time.Now().Add(-time.Hour), "x")
	res, err := b.svc.Syncer().runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, SyncResult{Queued: 1, Sources: 2, Failed: 1}, res)
}

// TestSyncFetchesTheItemsAPageNamesByIRI: a page whose activities would pass PageBytesMax names
// its later items by IRI; the syncer fetches them and queues them like embedded ones.
func TestSyncFetchesTheItemsAPageNamesByIRI(t *testing.T) {
	t.Parallel()
	a, b := newDomain(t), newDomain(t)
	ctx := context.Background()
	require.NoError(t, b.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: a.actor(), Status: store.RelationshipAccepted}))
	old := time.Now().Add(-2 * time.Hour)
	a.svc.cfg.NowFunc = func() time.Time { return old }
	big := fmt.Sprintf(`{"type":"Note","content":%q}`, strings.Repeat("x", 1200<<10))
	var ids []string
	for range 5 {
		id, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{activity.PublicIRI},
			Object: &activity.Object{Document: []byte(big)}})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	rows, err := a.st.ActivityOutboxListPublic(ctx, store.ActivityPageParams{Limit: 10})
	require.NoError(t, err)
	items := make([]pageItem, len(rows))
	for i, r := range rows {
		items[i] = pageItem{id: r.ActivityID, body: r.Body, size: len(r.Body)}
	}
	page := withinPageBytes(items)
	require.Empty(t, page[0].IRI)
	require.Equal(t, ids[4], page[4].IRI, "past the byte budget an item is named by its IRI")

	b.svc.cfg.SyncMinActivityAge = time.Hour
	res, err := b.svc.Syncer().runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, res.Queued)
	got := inboxRows(t, b)
	require.Len(t, got, 5)
	for i, r := range got {
		require.Equal(t, ids[i], r.ActivityID)
		sent, err := a.st.ActivityOutboxGet(ctx, r.ActivityID)
		require.NoError(t, err)
		require.Equal(t, sent.Body, r.Body, "fetched whole when the page named it")
	}
}

// refusingFollower is a stand-in for an Orb domain that follows us: it serves its actor, and
// its inbox with the status the test sets (Orb answers 401 to a domain that is neither its
// follower nor its witness); a 200 is an empty inbox.
func refusingFollower(t *testing.T, status *atomic.Int32) string {
	t.Helper()
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /services/orb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", activity.MediaTypeActivity)
		_, _ = fmt.Fprintf(w, `{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Service","inbox":%q,"outbox":%q}`,
			base+"/services/orb", base+"/services/orb/inbox", base+"/services/orb/outbox")
	})
	mux.HandleFunc("GET /services/orb/inbox", func(w http.ResponseWriter, r *http.Request) {
		if code := int(status.Load()); code != http.StatusOK {
			http.Error(w, "Unauthorized.", code)
			return
		}
		w.Header().Set("Content-Type", activity.MediaTypeActivity)
		if r.URL.Query().Get("page") == "" {
			_, _ = fmt.Fprintf(w, `{"id":%q,"type":"OrderedCollection","totalItems":0,"first":%q}`, base+"/services/orb/inbox", base+"/services/orb/inbox?page=true")
			return
		}
		_, _ = fmt.Fprintf(w, `{"id":%q,"type":"OrderedCollectionPage","totalItems":0,"orderedItems":[]}`, base+"/services/orb/inbox?page=true")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return base + "/services/orb"
}

// TestSyncBacksOffFromASourceThatRefuses: an Orb domain follows A, and A does not follow it, so
// it does not let A read its inbox. A says so once, leaves that inbox alone for a minute, then
// for twice as long each time it is refused again; once the inbox can be read, A reads it on
// every run again and says so.
func TestSyncBacksOffFromASourceThatRefuses(t *testing.T) {
	t.Parallel()
	logs := &anchordtest.SyncBuffer{}
	a := newDomain(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var status atomic.Int32
	status.Store(http.StatusUnauthorized)
	orb := refusingFollower(t, &status)
	ctx := context.Background()
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: orb, Status: store.RelationshipAccepted}))
	now := time.Now()
	a.svc.cfg.NowFunc = func() time.Time { return now }
	y := a.svc.Syncer()
	warnings := func() int { return strings.Count(logs.String(), "level=WARN") }
	run := func() SyncResult {
		t.Helper()
		res, err := y.runOnce(ctx)
		require.NoError(t, err)
		return res
	}

	require.Equal(t, SyncResult{Sources: 1, Failed: 1}, run())
	require.Equal(t, 1, warnings(), logs.String())
	require.Contains(t, logs.String(), "status 401")
	for _, step := range []struct {
		after time.Duration
		want  SyncResult
	}{
		{0, SyncResult{Refused: 1}},                          // left alone: not asked
		{59 * time.Second, SyncResult{Refused: 1}},           // for a minute
		{2 * time.Second, SyncResult{Sources: 1, Failed: 1}}, // then asked, and refused again
		{time.Minute, SyncResult{Refused: 1}},                // now left alone for two minutes
		{time.Minute + time.Second, SyncResult{Sources: 1, Failed: 1}},
	} {
		now = now.Add(step.after)
		require.Equal(t, step.want, run(), "%s later", step.after)
	}
	require.Equal(t, 1, warnings(), "said once: %s", logs.String())
	require.Equal(t, 3.0, testutil.ToFloat64(a.svc.m.syncRefused.WithLabelValues("inbox")))

	// The inbox can be read (A followed the Orb domain, say): read at the next try, and on
	// every run after it.
	status.Store(http.StatusOK)
	now = now.Add(4*time.Minute + time.Second)
	require.Equal(t, SyncResult{Sources: 1}, run(), logs.String())
	require.Contains(t, logs.String(), "activity sync source read again")
	require.Equal(t, SyncResult{Sources: 1}, run(), "no longer left alone")
	require.Equal(t, 1, warnings())

	// Another failure than a refusal is not backed off from: the next run asks again.
	status.Store(http.StatusInternalServerError)
	require.Equal(t, SyncResult{Sources: 1, Failed: 1}, run())
	require.Equal(t, SyncResult{Sources: 1, Failed: 1}, run())
}
