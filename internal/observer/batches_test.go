package observer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestBatchesRebuildEachRequest: every index row of anchors of every kind (handed over, read
// back from CAS, another domain's) gets its request back byte for byte, each anchor's batch is
// read once while it stays in the cache, and a batch that no longer fits is read again.
func TestBatchesRebuildEachRequest(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	o := b.observer(t)
	want := map[string][][]byte{} // suffix → requests in anchor order
	var ids []*wallet.Identity
	var creates [][]byte
	for range 6 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		ids = append(ids, id)
		creates = append(creates, req)
		want[id.Suffix] = append(want[id.Suffix], req)
	}
	b.anchorOps(t, creates...)
	_, err := o.CatchUp(ctx)
	require.NoError(t, err)
	var second [][]byte
	for i, id := range ids[:4] {
		var req []byte
		switch i {
		case 0:
			req, err = b.wallet.Update(id, wallet.AddServices(wallet.Service{ID: "s", Type: "LinkedDomains", Endpoint: "https://a.example"}))
		case 1:
			req, err = b.wallet.Recover(id, wallet.AddServices(wallet.Service{ID: "r", Type: "LinkedDomains", Endpoint: "https://b.example"}))
		default:
			req, err = b.wallet.Deactivate(id)
		}
		require.NoError(t, err)
		second = append(second, req)
		want[id.Suffix] = append(want[id.Suffix], req)
	}
	files := b.build(t, second...)
	a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(second), Backend: "local", Status: store.AnchorCompleted})
	require.NoError(t, err)
	o.Handoff(a.Seq, files.Operations)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	upd, err := b.wallet.Update(ids[4], wallet.AddServices(wallet.Service{ID: "f", Type: "LinkedDomains", Endpoint: "https://c.example"}))
	require.NoError(t, err)
	want[ids[4].Suffix] = append(want[ids[4].Suffix], upd)
	_, err = o.ObserveForeign(ctx, b.foreign(t, "hl:batches", upd), nil)
	require.NoError(t, err)

	bs := testBatches(st)
	for _, id := range ids {
		rows, err := st.DIDOperationList(ctx, id.Suffix)
		require.NoError(t, err)
		require.Len(t, rows, len(want[id.Suffix]))
		for _, r := range rows {
			require.Nil(t, r.Request, "not kept in the index")
		}
		require.NoError(t, bs.Requests(ctx, rows))
		for i, r := range rows {
			require.Equal(t, string(want[id.Suffix][i]), string(r.Request), "%s's operation %d", id.Suffix, i)
		}
	}
	require.Equal(t, 3.0, testutil.ToFloat64(bs.m.reads), "each of the three anchors read once")
	require.Equal(t, 8.0, testutil.ToFloat64(bs.m.hits), "the other rows found in memory")

	// A cache with room for one batch only reads each again once the other took its place.
	largest := 0
	for e := bs.lru.Front(); e != nil; e = e.Next() {
		largest = max(largest, e.Value.(*batchEntry).cost)
	}
	small, err := NewBatches(BatchesConfig{Profile: sidetree.DefaultProfile(), CacheBytes: largest}, b.cas.FetchFunc)
	require.NoError(t, err)
	for range 2 {
		for _, id := range ids[:2] {
			rows, err := st.DIDOperationList(ctx, id.Suffix)
			require.NoError(t, err)
			require.NoError(t, small.Requests(ctx, rows))
		}
	}
	require.Equal(t, 8.0, testutil.ToFloat64(small.m.reads), "the two anchors evict each other")
	require.LessOrEqual(t, small.bytes, small.cfg.CacheBytes)
}

// TestBatchesRefuseWhatTheyCannotRebuild: a row whose batch files are gone, or whose batch holds
// another operation at its position, is an error, never a row without a request; rows that
// carry their request (indexed before) read nothing.
func TestBatchesRefuseWhatTheyCannotRebuild(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	o := b.observer(t)
	id, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, create)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	rows, err := st.DIDOperationList(ctx, id.Suffix)
	require.NoError(t, err)

	failing, err := NewBatches(BatchesConfig{Profile: sidetree.DefaultProfile()}, func(context.Context) func(string, int) ([]byte, error) {
		return func(string, int) ([]byte, error) { return nil, errors.New("cas: content not found") }
	})
	require.NoError(t, err)
	err = failing.Requests(ctx, append([]store.DIDOperation(nil), rows...))
	require.ErrorIs(t, err, ErrRequestUnavailable)
	require.Equal(t, 1.0, testutil.ToFloat64(failing.m.failures))

	wrong := append([]store.DIDOperation(nil), rows...)
	wrong[0].Suffix = "EiSomeoneElse"
	err = testBatches(st).Requests(ctx, wrong)
	require.ErrorIs(t, err, ErrRequestUnavailable)

	kept := append([]store.DIDOperation(nil), rows...)
	kept[0].Request = create
	require.NoError(t, failing.Requests(ctx, kept), "a request indexed before is used as it is")
	require.Equal(t, 1.0, testutil.ToFloat64(failing.m.reads), "and reads nothing")

	var none *Batches
	require.ErrorIs(t, none.Requests(ctx, append([]store.DIDOperation(nil), rows...)), ErrRequestUnavailable)
	require.NoError(t, none.Requests(ctx, kept))
}

// TestBatchesReadEachAnchorOnceUnderConcurrentUse: concurrent rows of one anchor wait for one
// read of its batch.
func TestBatchesReadEachAnchorOnceUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	o := b.observer(t)
	var reqs [][]byte
	var suffixes []string
	for range 8 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		reqs = append(reqs, req)
		suffixes = append(suffixes, id.Suffix)
	}
	b.anchorOps(t, reqs...)
	_, err := o.CatchUp(ctx)
	require.NoError(t, err)
	bs := testBatches(st)
	var wg sync.WaitGroup
	for i, s := range suffixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, err := st.DIDOperationList(ctx, s)
			if err == nil {
				err = bs.Requests(ctx, rows)
			}
			if err == nil && string(rows[0].Request) != string(reqs[i]) {
				err = errors.New("another request")
			}
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.Equal(t, 1.0, testutil.ToFloat64(bs.m.reads))
}

// TestHistoryFromBatchFilesIsHistoryFromKeptRequests resolves DIDs whose histories hold a
// create, updates, a recover and a deactivate, anchored among other DIDs' operations, in every
// way that reads their operations (the latest version, each version by id and by time, the
// explorer's list), once with the requests rebuilt from the batch files, once from an index whose
// older half keeps them (upgraded from an anchord that kept them) and once from an index that
// keeps them all; all answer alike, and kept requests need no batch.
func TestHistoryFromBatchFilesIsHistoryFromKeptRequests(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			sc := storetest.OpenScratch(t, backend)
			st := sc.Store
			b := setup(t, st)
			ctx := context.Background()
			o := b.observer(t)
			p := sidetree.DefaultProfile()

			alice, ca, err := b.wallet.Create()
			require.NoError(t, err)
			bob, cb, err := b.wallet.Create()
			require.NoError(t, err)
			steps := [][][]byte{{ca, cb}}
			add := func(reqs ...[]byte) { steps = append(steps, reqs) }
			service := func(id string) wallet.Patch {
				return wallet.AddServices(wallet.Service{ID: id, Type: "LinkedDomains", Endpoint: "https://" + id + ".example"})
			}
			req := func(r []byte, err error) []byte { require.NoError(t, err); return r }
			carol, cc, err := b.wallet.Create()
			require.NoError(t, err)
			add(req(b.wallet.Update(alice, service("one"))), cc)
			add(req(b.wallet.Update(bob, service("bob"))), req(b.wallet.Recover(alice, service("two"))))
			add(req(b.wallet.Update(alice, service("three"))), req(b.wallet.Update(carol, service("carol"))))
			add(req(b.wallet.Deactivate(alice)), req(b.wallet.Update(bob, service("bob2"))))
			var anchors []store.Anchor
			for _, reqs := range steps {
				anchors = append(anchors, b.anchorOps(t, reqs...))
				_, err := o.CatchUp(ctx)
				require.NoError(t, err)
				time.Sleep(1100 * time.Millisecond) // versions by time are in whole seconds
			}
			for i := range anchors {
				anchors[i], err = st.AnchorGet(ctx, anchors[i].Seq)
				require.NoError(t, err)
			}

			type answer struct {
				body   string
				status sidetree.ResolutionStatus
				err    error
			}
			explorer := func(src httpapi.RequestSource) *httptest.Server {
				mux := http.NewServeMux()
				httpapi.ExplorerRoutes(httpapi.ExplorerConfig{Profile: p, Store: st, CAS: b.cas, Limits: batchfile.DefaultLimits(), Requests: src})(mux)
				srv := httptest.NewServer(mux)
				t.Cleanup(srv.Close)
				return srv
			}
			answers := func(r *Resolver, srv *httptest.Server) []answer {
				var out []answer
				for _, id := range []*wallet.Identity{alice, bob, carol} {
					body, status, err := r.Resolve(ctx, id.DID())
					out = append(out, answer{string(body), status, err})
					body, status, err = r.ResolveVersion(ctx, id.DID(), "", time.Time{})
					out = append(out, answer{string(body), status, err})
					for _, a := range anchors {
						body, status, err = r.ResolveVersion(ctx, id.DID(), a.CoreIndexCID, time.Time{})
						out = append(out, answer{string(body), status, err})
						body, status, err = r.ResolveVersion(ctx, id.DID(), "", anchorTime(a))
						out = append(out, answer{string(body), status, err})
					}
					resp, err := http.Get(srv.URL + "/explorer/api/dids/" + url.PathEscape(id.DID()) + "/operations")
					require.NoError(t, err)
					var page httpapi.DIDHistory
					require.Equal(t, http.StatusOK, resp.StatusCode)
					require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
					require.NoError(t, resp.Body.Close())
					for _, op := range page.Operations {
						require.NotEmpty(t, op.Request, "%s: each operation is listed with its request", id.Suffix)
					}
					listed, err := json.Marshal(page)
					require.NoError(t, err)
					out = append(out, answer{body: string(listed)})
				}
				return out
			}
			rebuilt := answers(newTestResolver(p, st, nil, 0), explorer(testBatches(st)))

			// The hot path reads no batch: a miss decodes the DID's compact state, a hit is the
			// cache's, embedded or not.
			for _, known := range []*Known{nil, NewKnown()} {
				if known != nil {
					known.Add([]string{alice.Suffix, bob.Suffix, carol.Suffix})
				}
				hot, err := NewBatches(BatchesConfig{Profile: p}, nil)
				require.NoError(t, err)
				r := NewResolver(p, st, known, 0)
				r.SetBatches(hot)
				for range 2 {
					for i, id := range []*wallet.Identity{alice, bob, carol} {
						body, status, err := r.Resolve(ctx, id.DID())
						require.NoError(t, err)
						require.Equal(t, rebuilt[i*(2+2*len(anchors)+1)], answer{string(body), status, nil})
					}
				}
				require.Zero(t, testutil.ToFloat64(hot.m.reads))
			}

			// An index that keeps every request, as an anchord before this one wrote it.
			q := `UPDATE did_operations SET request = ? WHERE anchor_seq = ? AND op_index = ?`
			if backend == "postgres" {
				q = `UPDATE did_operations SET request = $1 WHERE anchor_seq = $2 AND op_index = $3`
			}
			keep := func(anchors []store.Anchor) {
				for _, a := range anchors {
					read, err := batchfile.Read(p, a.AnchorString, b.cas.FetchFunc(ctx), batchfile.DefaultLimits())
					require.NoError(t, err)
					for _, op := range read.Operations {
						n, err := sc.Exec(ctx, q, op.Request, a.Seq, op.Position)
						require.NoError(t, err)
						require.Equal(t, int64(1), n)
					}
				}
			}
			// Half of them indexed before, half after: only the second half's batches are read.
			half := len(anchors) / 2
			keep(anchors[:half])
			mixed := testBatches(st)
			r := NewResolver(p, st, nil, 0)
			r.SetBatches(mixed)
			require.Equal(t, rebuilt, answers(r, explorer(mixed)))
			require.Equal(t, float64(len(anchors)-half), testutil.ToFloat64(mixed.m.reads))
			keep(anchors[half:])
			none, err := NewBatches(BatchesConfig{Profile: p}, nil)
			require.NoError(t, err)
			kept := NewResolver(p, st, nil, 0)
			kept.SetBatches(none)
			before := answers(kept, explorer(nil))
			require.Equal(t, before, rebuilt)
			require.Zero(t, testutil.ToFloat64(none.m.reads), "kept requests need no batch")

			statuses := map[sidetree.ResolutionStatus]int{}
			for _, a := range rebuilt {
				if !errors.Is(a.err, ErrNoSuchVersion) {
					require.NoError(t, a.err)
				}
				statuses[a.status]++
			}
			require.Positive(t, statuses[sidetree.ResolutionDeactivated], "alice's deactivate is among the answers")
			require.Positive(t, statuses[sidetree.ResolutionFound])
		})
	}
}
