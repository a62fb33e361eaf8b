package federation

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/store"
)

// anchorLinkset lays out an anchor linkset with n DIDs as the relay publisher does.
func anchorLinkset(t *testing.T, actor string, n int) *activity.Linkset {
	t.Helper()
	content := activity.AnchorContent{
		CoreIndex:  activity.NewHashlink([]byte("core index"), "https://a.example/cas/QmCore"),
		Author:     actor,
		Operations: make([]activity.SuffixAnchor, n),
	}
	// Suffixes are hashes: random, as they compress.
	for i := range content.Operations {
		var b [32]byte
		_, _ = rand.Read(b[:])
		content.Operations[i].Suffix = "EiD" + base64.RawURLEncoding.EncodeToString(b[:])
	}
	link, err := activity.BuildAnchorLink(content, activity.MediaTypeGzipBase64, func(hashlink, coreIndex string) ([]byte, error) {
		return json.Marshal(map[string]any{"id": "https://a.example/vc/1", "credentialSubject": map[string]string{"href": hashlink, "anchor": coreIndex}})
	})
	require.NoError(t, err)
	return &activity.Linkset{Linkset: []activity.Link{*link}}
}

// postAnchor posts a Create of ls as the relay publisher does: the linkset goes to CAS (when
// inCAS) in the transaction that posts the Create. It returns the Create's id and the body the
// outbox stored for it before it stored any without its linkset.
func postAnchor(t *testing.T, d *testDomain, ls *activity.Linkset, inCAS bool) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	lsJSON, err := ls.Canonical()
	require.NoError(t, err)
	now := time.Now().UTC()
	a := &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams}, Type: activity.TypeCreate,
		To:        activity.Strings{d.svc.FollowersIRI(), activity.PublicIRI},
		Object:    &activity.Object{AnchorEvent: activity.NewAnchorEvent(activity.NewHashlink(lsJSON, d.srv.URL+"/cas/x"), ls)},
		Published: &now,
	}
	var id string
	require.NoError(t, d.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if inCAS {
			if err := tx.CASPut(ctx, cas.ComputeCID(lsJSON, cas.CIDv1), lsJSON); err != nil {
				return err
			}
		}
		id, err = d.svc.PostTx(ctx, tx, a)
		return err
	}))
	full, err := json.Marshal(a)
	require.NoError(t, err)
	return id, full
}

// capturingFollower is a follower that takes every delivery and keeps its body.
type capturingFollower struct {
	srv *httptest.Server
	mu  sync.Mutex
	got [][]byte
}

func newCapturingFollower(t *testing.T) *capturingFollower {
	t.Helper()
	f := &capturingFollower{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == ServicePath:
			w.Header().Set("Content-Type", activity.MediaTypeActivity)
			_, _ = w.Write(mustJSON(t, activity.NewService(f.srv.URL+ServicePath, "")))
		case r.Method == "POST":
			b, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			f.got = append(f.got, b)
			f.mu.Unlock()
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *capturingFollower) bodies() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.got...)
}

// getRaw GETs a path of d and returns the status and the body.
func getRaw(t *testing.T, d *testDomain, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(d.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// pageItems returns the items of an outbox page exactly as served.
func pageItems(t *testing.T, d *testDomain, num int) []json.RawMessage {
	t.Helper()
	status, body := getRaw(t, d, fmt.Sprintf("%s/outbox?page=true&page-num=%d", ServicePath, num))
	require.Equal(t, http.StatusOK, status, "%s", body)
	var page struct {
		OrderedItems []json.RawMessage `json:"orderedItems"`
	}
	require.NoError(t, json.Unmarshal(body, &page))
	return page.OrderedItems
}

// TestAnchorCreateIsStoredWithoutItsLinksetAndReadWhole: an anchor's Create whose linkset is in
// CAS is stored without it, and every reader of the outbox gets the body the outbox stored
// before it did so, byte for byte: the outbox page, the activity by id, the follower's POST.
// A Create stored whole (as rows before compaction, or with a linkset CAS lacks) reads the
// same way.
func TestAnchorCreateIsStoredWithoutItsLinksetAndReadWhole(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	ctx := context.Background()
	f := newCapturingFollower(t)
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: f.srv.URL + ServicePath, Status: store.RelationshipAccepted}))
	del, _ := a.run(t)

	ls := anchorLinkset(t, a.actor(), 2000)
	compactID, compactFull := postAnchor(t, a, ls, true)
	wholeID, wholeFull := postAnchor(t, a, anchorLinkset(t, a.actor(), 3), false)
	// A row as stored before compaction existed.
	oldID := a.actor() + "/activities/old"
	oldFull := []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"` + oldID + `","type":"Create","actor":"` + a.actor() +
		`","to":["` + a.svc.FollowersIRI() + `","` + activity.PublicIRI + `"],"object":"https://x.example/anchor"}`)
	_, err := a.st.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{ActivityID: oldID, Type: "Create", Body: oldFull, Public: true,
		Recipients: []string{f.srv.URL + ServicePath}})
	require.NoError(t, err)

	row, err := a.st.ActivityOutboxGet(ctx, compactID)
	require.NoError(t, err)
	require.True(t, outboxbody.IsCompact(row.Body))
	require.Less(t, len(row.Body), 1024, "stored without its linkset (%d bytes posted)", len(compactFull))
	row, err = a.st.ActivityOutboxGet(ctx, wholeID)
	require.NoError(t, err)
	require.Equal(t, wholeFull, row.Body, "CAS lacks its linkset: stored whole")

	want := map[string][]byte{compactID: compactFull, wholeID: wholeFull, oldID: oldFull}
	items := pageItems(t, a, 0)
	require.Len(t, items, 3)
	for i, id := range []string{compactID, wholeID, oldID} {
		require.Equal(t, string(want[id]), string(items[i]), "outbox page item %d", i)
		status, body := getRaw(t, a, ServicePath+"/activities/"+id[len(a.actor()+"/activities/"):])
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, string(want[id]), string(body), "activity by id")
	}

	for range 3 {
		require.Equal(t, outcomeDelivered, del.delivered.WaitOrTimeout(t, 10*time.Second).Outcome)
	}
	got := f.bodies()
	require.Len(t, got, 3)
	for _, b := range got {
		var head struct{ ID string }
		require.NoError(t, json.Unmarshal(b, &head))
		require.Equal(t, string(want[head.ID]), string(b), "delivered %s", head.ID)
	}

	// Readers that look into our activities (here: whether it was sent to an actor) read it whole.
	sent, err := a.svc.outboxGet(ctx, compactID)
	require.NoError(t, err)
	require.Equal(t, compactFull, sent.Body)
}

// TestOutboxPageBoundsTheActivitiesAsPosted: a page counts the bytes of the activities it
// embeds as posted, not as stored, and expands only the ones it embeds.
func TestOutboxPageBoundsTheActivitiesAsPosted(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	ls := anchorLinkset(t, a.actor(), 10000)
	var full [][]byte
	for range 12 {
		_, b := postAnchor(t, a, ls, true)
		full = append(full, b)
	}
	fit := PageBytesMax / len(full[0])
	require.Less(t, fit, len(full), "the Creates together pass the page's bytes")
	items := pageItems(t, a, 0)
	require.Len(t, items, len(full))
	for i, it := range items {
		if i < fit {
			require.Equal(t, string(full[i]), string(it), "item %d embedded as posted", i)
			continue
		}
		var iri string
		require.NoError(t, json.Unmarshal(it, &iri), "item %d named by its IRI", i)
	}
}

// brokenCAS is a store whose CAS reads fail outside transactions: the outbox's readers.
type brokenCAS struct{ store.Store }

func (brokenCAS) CASGetBySHA256(context.Context, []byte) ([]byte, error) {
	return nil, fmt.Errorf("cas: %w", store.ErrNotFound)
}

// TestOutboxReadersFailWhenTheLinksetCannotBeRead: a Create stored without its linkset whose
// linkset cannot be read is never served or sent without it: the page and the activity answer
// 503, and the delivery fails and is retried.
func TestOutboxReadersFailWhenTheLinksetCannotBeRead(t *testing.T) {
	t.Parallel()
	a := newDomain(t, fastRetries(2))
	ctx := context.Background()
	f := newCapturingFollower(t)
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: f.srv.URL + ServicePath, Status: store.RelationshipAccepted}))
	id, _ := postAnchor(t, a, anchorLinkset(t, a.actor(), 3), true)
	a.svc.st = brokenCAS{a.st}

	status, body := getRaw(t, a, ServicePath+"/outbox?page=true&page-num=0")
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	status, body = getRaw(t, a, ServicePath+"/activities/"+id[len(a.actor()+"/activities/"):])
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)

	del, _ := a.run(t)
	out := del.delivered.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, outcomeRetried, out.Outcome)
	require.ErrorIs(t, out.Err, outboxbody.ErrLinksetMissing)
	require.Equal(t, outcomeParked, del.delivered.WaitOrTimeout(t, 10*time.Second).Outcome)
	require.Empty(t, f.bodies(), "nothing was sent")
	dls, err := a.st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterActivity, Limit: 10})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.True(t, outboxbody.IsCompact(dls[0].Payload), "the dead letter keeps the row as stored")
}

// TestPreparedActivitiesAreStoredAsPostTxStoresThem: laid out before the transaction
// (Prepare), an anchor's Create is stored without its linkset when the transaction puts the
// linkset in CAS, whole when CAS lacks it then, and any other activity as posted; recipients
// are those of the transaction's moment, and readers get the body posted.
func TestPreparedActivitiesAreStoredAsPostTxStoresThem(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	ctx := context.Background()
	newCreate := func(ls *activity.Linkset) (*activity.Activity, []byte) {
		lsJSON, err := ls.Canonical()
		require.NoError(t, err)
		return &activity.Activity{
			Type: activity.TypeCreate, To: activity.Strings{a.svc.FollowersIRI(), activity.PublicIRI},
			Object: &activity.Object{AnchorEvent: activity.NewAnchorEvent(activity.NewHashlink(lsJSON, a.srv.URL+"/cas/x"), ls)},
		}, lsJSON
	}
	// post posts o in a transaction that first puts put in CAS, unless nil.
	post := func(o *Outgoing, put []byte) string {
		var id string
		require.NoError(t, a.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if put != nil {
				if err := tx.CASPut(ctx, cas.ComputeCID(put, cas.CIDv1), put); err != nil {
					return err
				}
			}
			var err error
			id, err = o.PostTx(ctx, tx)
			return err
		}))
		return id
	}
	stored := func(id string) []byte {
		row, err := a.st.ActivityOutboxGet(ctx, id)
		require.NoError(t, err)
		return row.Body
	}
	recipients := func(id string) []string {
		dels, err := a.st.ActivityDeliveryListByActivity(ctx, id)
		require.NoError(t, err)
		var out []string
		for _, d := range dels {
			out = append(out, d.Recipient)
		}
		return out
	}

	create, lsJSON := newCreate(anchorLinkset(t, a.actor(), 2000))
	o, err := a.svc.Prepare(create, lsJSON)
	require.NoError(t, err)
	require.Equal(t, a.actor(), create.Actor, "completed before the transaction")
	require.NotEmpty(t, create.ID)
	require.NotNil(t, create.Published)
	body, err := json.Marshal(create)
	require.NoError(t, err)
	// Accepted after the Create was laid out, the follower is one of the transaction's moment.
	follower := "https://f.example/services/anchord"
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: follower, Status: store.RelationshipAccepted}))
	id := post(o, lsJSON)
	require.Equal(t, create.ID, id)
	require.True(t, outboxbody.IsCompact(stored(id)))
	require.Less(t, len(stored(id)), 1024, "stored without its linkset (%d bytes posted)", len(body))
	sent, err := a.svc.outboxGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, string(body), string(sent.Body))
	require.Equal(t, []string{follower}, recipients(id))

	// Laid out against the right bytes, but CAS lacks them when the transaction stores it.
	create, lsJSON = newCreate(anchorLinkset(t, a.actor(), 3))
	o, err = a.svc.Prepare(create, lsJSON)
	require.NoError(t, err)
	body, err = json.Marshal(create)
	require.NoError(t, err)
	id = post(o, nil)
	require.Equal(t, body, stored(id), "stored whole")

	// Another activity is stored as posted, given linkset bytes or not.
	for _, linkset := range [][]byte{nil, lsJSON} {
		follow := &activity.Activity{Type: activity.TypeFollow, To: activity.Strings{follower}, Object: activity.IRIObject(follower)}
		o, err = a.svc.Prepare(follow, linkset)
		require.NoError(t, err)
		body, err = json.Marshal(follow)
		require.NoError(t, err)
		id = post(o, lsJSON)
		require.Equal(t, body, stored(id))
		require.Equal(t, []string{follower}, recipients(id))
	}

	// What is not ours is refused before any transaction.
	_, err = a.svc.Prepare(&activity.Activity{Type: activity.TypeFollow, Actor: "https://x.example/services/anchord",
		To: activity.Strings{follower}, Object: activity.IRIObject(follower)}, nil)
	require.ErrorContains(t, err, "not ours")
}
