package observer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// orbAnswer is the part of a did:orb result these tests read.
type orbAnswer struct {
	Document map[string]any `json:"didDocument"`
	Meta     struct {
		Canonical string `json:"canonicalId"`
		Version   string `json:"versionId"`
		Updated   string `json:"updated"`
		Method    struct {
			Published   bool   `json:"published"`
			Update      string `json:"updateCommitment"`
			Recovery    string `json:"recoveryCommitment"`
			Unpublished []struct {
				Type      string `json:"type"`
				Operation []byte `json:"operation"`
			} `json:"unpublishedOperations"`
			Anchored []struct {
				Type      string `json:"type"`
				Operation []byte `json:"operation"`
				Ref       string `json:"canonicalReference"`
			} `json:"publishedOperations"`
		} `json:"method"`
	} `json:"didDocumentMetadata"`
}

func decodeOrb(t *testing.T, body []byte) orbAnswer {
	t.Helper()
	var a orbAnswer
	require.NoError(t, json.Unmarshal(body, &a), string(body))
	return a
}

// services returns the ids of a document's services.
func (a orbAnswer) services() []string {
	var ids []string
	list, _ := a.Document["service"].([]any)
	for _, s := range list {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

// orbFixture is a DID whose create is anchored and published here, and an update of it the
// tests keep pending.
type orbFixture struct {
	b         *testBundle
	o         *Observer
	id        *wallet.Identity
	canonical string
	h1, hl1   string
	update    *sidetree.Operation
}

func newOrbFixture(t *testing.T, st store.Store) *orbFixture {
	t.Helper()
	ctx := context.Background()
	b := setup(t, st)
	b.wallet = wallet.New(wallet.Config{AnchorOrigin: "https://a.example"})
	o := b.observer(t)
	id, create, err := b.wallet.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	a1 := b.anchorOps(t, create)
	_, err = o.runOnce(ctx)
	require.NoError(t, err)
	h1, hl1 := hashlinkOf("anchor 1")
	require.NoError(t, st.AnchorMarkPublished(ctx, a1.Seq, hl1))
	req, err := b.wallet.Update(id, wallet.AddServices(wallet.Service{ID: "pending", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	update, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	return &orbFixture{b: b, o: o, id: id, canonical: "did:orb:" + h1 + ":" + id.Suffix, h1: h1, hl1: hl1, update: update}
}

// TestUnpublishedOperationsResolve: with the unpublished operation store, an accepted update
// shows in the DID's resolution at once, as at Orb: the document and commitments move, the
// canonical name does not, versionId is not given and updated is when it was accepted; the
// metadata lists it, and the anchored create, when asked to. Once the update is indexed it is
// anchored like any other and leaves the store; an unpublished create resolves unpublished by
// its uAAA name.
func TestUnpublishedOperationsResolve(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		f := newOrbFixture(t, st)
		p := sidetree.OrbProfile("https:a.example")
		u := NewUnpublished(time.Hour, 0)
		r := newTestResolver(p, st, nil, 0)
		r.SetOrbOperations(OrbOperations{Unpublished: u, IncludeUnpublished: true, IncludePublished: true})
		plain := newTestResolver(p, st, nil, 0)

		resolve := func(r *Resolver, did string) (orbAnswer, sidetree.ResolutionStatus) {
			t.Helper()
			body, status, err := r.Resolve(ctx, did)
			require.NoError(t, err)
			if status == sidetree.ResolutionNotFound {
				return orbAnswer{}, status
			}
			full, fullStatus, err := r.ResolveVersion(ctx, did, "", time.Time{})
			require.NoError(t, err)
			require.Equal(t, status, fullStatus)
			require.JSONEq(t, string(body), string(full), "both paths answer the same")
			return decodeOrb(t, body), status
		}

		before, _ := resolve(r, f.canonical)
		require.Equal(t, []string{f.canonical + "#home"}, before.services())
		require.Empty(t, before.Meta.Method.Unpublished)
		require.Len(t, before.Meta.Method.Anchored, 1)
		require.Equal(t, f.h1, before.Meta.Method.Anchored[0].Ref)
		require.Equal(t, "create", before.Meta.Method.Anchored[0].Type)
		require.Equal(t, f.h1, before.Meta.Version)

		accepted := time.Now()
		u.Add(f.update, "op-update", "https://a.example")
		require.Equal(t, 1, u.Len())
		pending, status := resolve(r, f.canonical)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Equal(t, []string{f.canonical + "#home", f.canonical + "#pending"}, pending.services())
		require.Equal(t, f.update.Delta.UpdateCommitment, pending.Meta.Method.Update)
		require.Equal(t, before.Meta.Method.Recovery, pending.Meta.Method.Recovery)
		require.Equal(t, f.canonical, pending.Meta.Canonical, "an update does not move the canonical name")
		require.True(t, pending.Meta.Method.Published)
		require.Empty(t, pending.Meta.Version, "Orb names no version for an unpublished operation")
		updated, err := time.Parse(time.RFC3339, pending.Meta.Updated)
		require.NoError(t, err)
		require.WithinDuration(t, accepted, updated, 2*time.Second)
		require.Len(t, pending.Meta.Method.Unpublished, 1)
		require.Equal(t, "update", pending.Meta.Method.Unpublished[0].Type)
		require.Equal(t, f.update.Request, pending.Meta.Method.Unpublished[0].Operation)

		without, _ := resolve(plain, f.canonical)
		require.Equal(t, before.services(), without.services(), "without the store the update waits for its anchor")

		// Anchored and indexed: the update is the DID's latest version, and the store forgets it
		// when it sees it among the index rows, whether or not it was told.
		a2 := f.b.anchorOps(t, f.update.Request)
		_, err = f.o.runOnce(ctx)
		require.NoError(t, err)
		h2, hl2 := hashlinkOf("anchor 2")
		require.NoError(t, st.AnchorMarkPublished(ctx, a2.Seq, hl2))
		after, _ := resolve(r, f.canonical)
		require.Equal(t, pending.Document, after.Document)
		require.Equal(t, h2, after.Meta.Version)
		require.Empty(t, after.Meta.Method.Unpublished)
		require.Len(t, after.Meta.Method.Anchored, 2)
		require.Zero(t, u.Len())

		// An unpublished create: its uAAA name resolves, unpublished; a name with an anchor does
		// not (no anchor holds it).
		other, create, err := f.b.wallet.Create()
		require.NoError(t, err)
		_, status = resolve(r, "did:orb:uAAA:"+other.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status)
		createOp, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
		require.NoError(t, err)
		u.Add(createOp, "op-create", "")
		got, status := resolve(r, "did:orb:uAAA:"+other.Suffix)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.False(t, got.Meta.Method.Published)
		require.Empty(t, got.Meta.Canonical)
		require.Len(t, got.Meta.Method.Unpublished, 1)
		_, status = resolve(r, "did:orb:"+f.h1+":"+other.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status)
		u.Release([]store.DIDPendingKey{{Suffix: other.Suffix, OpID: "op-create"}})
		_, status = resolve(r, "did:orb:uAAA:"+other.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status, "a parked operation leaves the store")
	})
}

// TestResolveFromOrigin: a DID anchored here merges what its anchor origin lists: its
// unpublished operations, and its published ones after this domain's head, which then name the
// version and time; nothing to add, or a head the origin does not list, merges nothing; an
// operation that does not apply is skipped like any other.
func TestResolveFromOrigin(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	f := newOrbFixture(t, st)
	r := newTestResolver(sidetree.OrbProfile("https:b.example"), st, nil, 0)
	createRows, err := historyOf(ctx, st, f.id.Suffix)
	require.NoError(t, err)
	// The origin lists the create at the second its anchor was issued, and the update later:
	// one in the create's second would not apply (TestOrbRulesOnAnchorTimes).
	issued := createRows[0].AnchorIssuedAt
	require.Positive(t, issued)
	created := OriginOperation{Type: sidetree.OperationCreate, Request: createRows[0].Request, Time: time.Unix(issued, 0), Ref: f.h1, Hashlink: f.hl1}
	at := time.Unix(issued+100, 0)
	pendingUpdate := OriginOperation{Type: sidetree.OperationUpdate, Request: f.update.Request, Time: at}

	merge := func(published, unpublished []OriginOperation) (orbAnswer, bool) {
		t.Helper()
		body, status, merged, err := r.ResolveFromOrigin(ctx, f.canonical, published, unpublished)
		require.NoError(t, err)
		if !merged {
			require.Nil(t, body)
			return orbAnswer{}, false
		}
		require.Equal(t, sidetree.ResolutionFound, status)
		return decodeOrb(t, body), true
	}

	_, merged := merge([]OriginOperation{created}, nil)
	require.False(t, merged, "the origin has nothing newer")
	_, merged = merge(nil, nil)
	require.False(t, merged)

	got, merged := merge([]OriginOperation{created}, []OriginOperation{pendingUpdate})
	require.True(t, merged)
	require.Equal(t, []string{f.canonical + "#home", f.canonical + "#pending"}, got.services())
	require.Equal(t, f.update.Delta.UpdateCommitment, got.Meta.Method.Update)
	require.Equal(t, f.canonical, got.Meta.Canonical)
	require.Empty(t, got.Meta.Version)
	require.Equal(t, at.UTC().Format(time.RFC3339), got.Meta.Updated)

	h2, hl2 := hashlinkOf("the origin's anchor 2")
	anchoredUpdate := pendingUpdate
	anchoredUpdate.Ref, anchoredUpdate.Hashlink = h2, hl2
	got, merged = merge([]OriginOperation{created, anchoredUpdate}, nil)
	require.True(t, merged)
	require.Equal(t, []string{f.canonical + "#home", f.canonical + "#pending"}, got.services())
	require.Equal(t, h2, got.Meta.Version, "a published operation names its anchor")

	_, merged = merge([]OriginOperation{anchoredUpdate}, nil)
	require.False(t, merged, "the origin does not list this domain's head: nothing is newer than it")

	forged := pendingUpdate
	forged.Request = []byte(base64.StdEncoding.EncodeToString([]byte("not an operation")))
	got, merged = merge(nil, []OriginOperation{forged})
	require.True(t, merged)
	require.Equal(t, []string{f.canonical + "#home"}, got.services(), "an operation that does not apply is skipped")

	_, _, merged, err = r.ResolveFromOrigin(ctx, "did:orb:not a suffix", nil, []OriginOperation{pendingUpdate})
	require.Error(t, err, "a malformed DID")
	require.False(t, merged)
}

// anchorReads is a store that counts the anchors read.
type anchorReads struct {
	store.Store
	n atomic.Int64
}

func (s *anchorReads) AnchorGet(ctx context.Context, seq int64) (store.Anchor, error) {
	s.n.Add(1)
	return s.Store.AnchorGet(ctx, seq)
}

// TestResolveFromOriginReadsTheHistoryOnlyToMerge: asking whether an anchor origin has anything
// after this domain's head reads the head's anchor alone, whatever the DID's history; the
// other anchors are read only when the origin lists something after it.
func TestResolveFromOriginReadsTheHistoryOnlyToMerge(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	f := newOrbFixture(t, st)
	rows, err := historyOf(ctx, st, f.id.Suffix)
	require.NoError(t, err)
	listed := []OriginOperation{{Type: sidetree.OperationCreate, Request: rows[0].Request, Ref: f.h1, Hashlink: f.hl1}}
	for i := range 5 {
		req := f.update.Request // the wallet made it already
		if i > 0 {
			req, err = f.b.wallet.Update(f.id, wallet.AddServices(wallet.Service{ID: fmt.Sprintf("s%d", i), Type: "LinkedDomains", Endpoint: "https://example.com"}))
			require.NoError(t, err)
		}
		a := f.b.anchorOps(t, req)
		_, err = f.o.runOnce(ctx)
		require.NoError(t, err)
		h, hl := hashlinkOf(fmt.Sprintf("anchor %d", i+2))
		require.NoError(t, st.AnchorMarkPublished(ctx, a.Seq, hl))
		listed = append(listed, OriginOperation{Type: sidetree.OperationUpdate, Request: req, Ref: h, Hashlink: hl})
	}
	reads := &anchorReads{Store: st}
	r := newTestResolver(sidetree.OrbProfile("https:b.example"), reads, nil, 0)

	_, _, merged, err := r.ResolveFromOrigin(ctx, f.canonical, listed, nil)
	require.NoError(t, err)
	require.False(t, merged, "the origin lists nothing after the head")
	require.Equal(t, int64(1), reads.n.Load(), "the head's anchor alone is read")

	later, err := f.b.wallet.Update(f.id, wallet.AddServices(wallet.Service{ID: "later", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	h, hl := hashlinkOf("the origin's later anchor")
	body, _, merged, err := r.ResolveFromOrigin(ctx, f.canonical, append(listed, OriginOperation{Type: sidetree.OperationUpdate, Request: later, Ref: h, Hashlink: hl}), nil)
	require.NoError(t, err)
	require.True(t, merged)
	var services []string
	for _, s := range decodeOrb(t, body).services() {
		services = append(services, strings.TrimPrefix(s, f.canonical+"#"))
	}
	require.Equal(t, []string{"home", "pending", "s1", "s2", "s3", "s4", "later"}, services)
}
