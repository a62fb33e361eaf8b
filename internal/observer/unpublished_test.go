package observer

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestUnpublishedKeepsWhatOrbKeeps: creates and updates are kept (Orb's default types),
// recovers and deactivates not; an operation leaves when indexed, when released, or after the
// TTL; a full store keeps nothing more until something lapses.
func TestUnpublishedKeepsWhatOrbKeeps(t *testing.T) {
	t.Parallel()
	w := wallet.New(wallet.Config{AnchorOrigin: "https://a.example"})
	parse := func(req []byte, err error) *sidetree.Operation {
		t.Helper()
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(t, err)
		return op
	}
	id, create, err := w.Create()
	createOp := parse(create, err)
	updateOp := parse(w.Update(id))
	recoverOp := parse(w.Recover(id))
	deactivateOp := parse(w.Deactivate(id))

	now := time.Unix(1700000000, 0)
	u := NewUnpublished(time.Minute, 2)
	u.now = func() time.Time { return now }
	u.Add(recoverOp, "r", "")
	u.Add(deactivateOp, "d", "")
	require.Zero(t, u.Len(), "Orb keeps creates and updates only")

	u.Add(createOp, "c", "ignored: a create names its own")
	u.Add(updateOp, "u", "https://a.example")
	require.Equal(t, 2, u.Len())
	ops := u.of(id.Suffix, nil)
	require.Len(t, ops, 2)
	require.Equal(t, "https://a.example", ops[0].origin, "the create's own anchorOrigin")
	require.Equal(t, "https://a.example", ops[1].origin)

	other, otherCreate, err := w.Create()
	otherOp := parse(otherCreate, err)
	u.Add(otherOp, "o", "")
	require.Equal(t, 2, u.Len(), "full")
	require.False(t, u.has(other.Suffix))

	u.Indexed([]store.DIDOperation{{Suffix: id.Suffix, Request: createOp.Request}})
	require.Equal(t, 1, u.Len())
	u.Release([]store.DIDPendingKey{{Suffix: id.Suffix, OpID: "someone else's"}})
	require.Equal(t, 1, u.Len(), "a release names the operation")
	u.Release([]store.DIDPendingKey{{Suffix: id.Suffix, OpID: "u"}})
	require.Zero(t, u.Len())

	u.Add(createOp, "c", "")
	u.Add(otherOp, "o", "")
	now = now.Add(time.Minute)
	require.Empty(t, u.of(id.Suffix, nil), "lapsed")
	require.Equal(t, 1, u.Len(), "the other DID's lapses when read or swept")
	u.Add(updateOp, "u", "")
	require.Equal(t, 2, u.Len(), "full again")
	u.Add(createOp, "c", "")
	require.Equal(t, 2, u.Len(), "a full store sweeps what lapsed before it refuses")
	require.False(t, u.has(other.Suffix))
	require.Len(t, u.of(id.Suffix, nil), 2)
}

// TestAFullUnpublishedStoreRefusesCheaply: under load the store fills with operations that are
// anchoring, not lapsing; an Add to a full store then refuses without reading every operation
// kept (which made each Add cost the whole store under the lock, and the intake of n operations
// quadratic), and sweeps again once the oldest may have lapsed.
func TestAFullUnpublishedStoreRefusesCheaply(t *testing.T) {
	t.Parallel()
	const kept = 20_000
	now := time.Unix(1700000000, 0)
	u := NewUnpublished(time.Minute, kept)
	u.now = func() time.Time { return now }
	op := func(i int) *sidetree.Operation {
		return &sidetree.Operation{Type: sidetree.OperationUpdate, Suffix: strconv.Itoa(i), Request: []byte(strconv.Itoa(i))}
	}
	for i := range kept {
		u.Add(op(i), strconv.Itoa(i), "")
		if i == 0 {
			now = now.Add(time.Second) // the oldest lapses a second before the others
		}
	}
	require.Equal(t, kept, u.Len())

	// Reading the store at each refusal takes minutes; refusing, milliseconds. The bound is far
	// from both.
	start := time.Now()
	refused := 0
	for i := kept; i < 2*kept && time.Since(start) < 5*time.Second; i++ {
		u.Add(op(i), strconv.Itoa(i), "")
		refused++
	}
	require.Equal(t, kept, refused, "refused within 5 s")
	require.Equal(t, kept, u.Len())
	require.False(t, u.has(strconv.Itoa(kept)))

	now = now.Add(time.Minute - time.Second) // the oldest lapses
	u.Add(op(2*kept), "new", "")
	require.True(t, u.has(strconv.Itoa(2*kept)), "swept once one may have lapsed")
	require.False(t, u.has("0"))
	require.Equal(t, kept, u.Len())
}

// TestUnpublishedUnderConcurrentUse: intake adds, the observer and the queue release, and
// resolutions read the store at once (run with -race); a resolution sees the pending update
// or not, never anything else.
func TestUnpublishedUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	f := newOrbFixture(t, st)
	u := NewUnpublished(time.Hour, 50)
	r := newTestResolver(sidetree.OrbProfile("https:a.example"), st, nil, 0)
	r.SetOrbOperations(OrbOperations{Unpublished: u, IncludeUnpublished: true, IncludePublished: true})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // intake and the queue: the pending update comes and goes
		for {
			select {
			case <-stop:
				return
			default:
			}
			u.Add(f.update, "op-update", "https://a.example")
			u.Release([]store.DIDPendingKey{{Suffix: f.id.Suffix, OpID: "op-update"}})
		}
	})
	wg.Go(func() { // other DIDs' operations fill the store and are indexed
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			op := &sidetree.Operation{Type: sidetree.OperationUpdate, Suffix: strconv.Itoa(i % 100), Request: []byte(strconv.Itoa(i))}
			u.Add(op, strconv.Itoa(i), "")
			u.Indexed([]store.DIDOperation{{Suffix: op.Suffix, Request: op.Request}})
		}
	})
	for range 200 {
		body, status, err := r.Resolve(ctx, f.canonical)
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionFound, status)
		services := decodeOrb(t, body).services()
		require.Contains(t, [][]string{{f.canonical + "#home"}, {f.canonical + "#home", f.canonical + "#pending"}}, services)
	}
	close(stop)
	wg.Wait()
}
