package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// missDIDs is the DIDs the miss benchmark indexes: enough that their states span many pages of
// the file, as a large index's do, while building it stays a matter of seconds.
const missDIDs = 30_000

// missIndex is a SQLite index on a temporary file holding missDIDs DIDs, each with one create of
// the load generator's shape (a key and a service, the keys from a pool of 64), written as the
// observer writes them: one anchor of 10,000 index rows per transaction, each DID's state with
// its position. The states are those of 256 real creates: what a miss costs depends on their
// shape, not on their values. It returns the store and the DIDs in short form.
func missIndex(b *testing.B) (*sqlitestore.Store, []string) {
	b.Helper()
	ctx := context.Background()
	p := sidetree.DefaultProfile()
	w := wallet.New(wallet.Config{})
	keys := make([]*wallet.Key, 64)
	for i := range keys {
		k, err := w.NewKey()
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
	}
	records := make([]*sidetree.StateRecord, 256)
	for i := range records {
		upd, rec := keys[i%64], keys[(i+1)%64]
		req, suffix, err := wallet.CreateRequest(rec.Commitment(), upd.Commitment(), wallet.Replace(wallet.Document{
			PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", upd, "authentication")},
			Services:   []wallet.Service{{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com/" + strconv.FormatInt(int64(i), 36)}},
		}))
		if err != nil {
			b.Fatal(err)
		}
		if records[i] = sidetree.ResolveRecord(p, suffix, []sidetree.AnchoredOperation{{Request: req}}); records[i].State == nil {
			b.Fatal("the create does not apply")
		}
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	dids := make([]string, 0, missDIDs)
	const perAnchor = 10_000
	for start := 0; start < missDIDs; start += perAnchor {
		a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{
			AnchorString: strconv.Itoa(start) + ".anchor", CoreIndexCID: "core" + strconv.Itoa(start),
			OpCount: perAnchor, Backend: "local", Status: store.AnchorCompleted,
		})
		if err != nil {
			b.Fatal(err)
		}
		ops := make([]store.DIDOperation, 0, perAnchor)
		states := make([]store.DIDState, 0, perAnchor)
		for i := range perAnchor {
			h := sha256.Sum256([]byte(strconv.Itoa(start + i)))
			suffix := base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, h[:]...))
			dids = append(dids, "did:sidetree:"+suffix)
			ops = append(ops, store.DIDOperation{Suffix: suffix, AnchorSeq: a.Seq, Index: i, Type: "create"})
			rec := *records[(start+i)%len(records)]
			rec.Positions = []sidetree.Position{{Sequence: uint64(a.Seq), Index: i}}
			states = append(states, store.DIDState{
				Suffix: suffix, State: rec.AppendBinary(nil),
				Positions: []store.DIDPosition{{AnchorSeq: a.Seq, Index: i}},
			})
		}
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.DIDOperationInsertMany(ctx, ops); err != nil {
				return err
			}
			_, err := tx.DIDStateInsertMany(ctx, states)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return st, dids
}

// discardWriter is the response writer of one request: a header of its own, as the server gives
// each request, and a body copied into a buffer kept across requests, as the server copies it
// into the connection's.
type discardWriter struct {
	header http.Header
	code   int
	body   []byte
}

func (w *discardWriter) Header() http.Header  { return w.header }
func (w *discardWriter) WriteHeader(code int) { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.body = append(w.body, b...)
	return len(b), nil
}

// BenchmarkResolutionMissServed is a short-form resolution that misses the resolver's state
// cache, whole, in an embedded server (the resolver's cache trusted, the filter of known DIDs
// loaded) whose cache holds one state, on a SQLite index of missDIDs DIDs read in an order
// without locality: "handler" is the request through the server's handler (limits, metrics, the
// route, content negotiation, the resolver, the response), "resolver" Resolver.Resolve alone,
// "read" the index read alone (what sidetree's BenchmarkResolutionMiss leaves out). The
// connection's reading and writing are not included.
func BenchmarkResolutionMissServed(b *testing.B) {
	ctx := context.Background()
	st, dids := missIndex(b)
	known, err := observer.LoadKnown(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	p := sidetree.DefaultProfile()
	r := observer.NewResolver(p, st, known, 1)
	if _, err := observer.New(observer.Config{Profile: p, Known: known, Resolver: r}, st, nil); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Listener: ln, Routes: SidetreeRoutes(SidetreeConfig{Resolver: r, DIDMethod: "sidetree"})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	h := s.srv.Handler
	// A stride coprime with the count visits every DID once per round, far from the last one.
	const stride = 7919
	requests := make([]*http.Request, len(dids))
	for i, did := range dids {
		// No Accept, as the load generator sends.
		requests[i] = httptest.NewRequest(http.MethodGet, "/sidetree/v1/identifiers/"+did, nil)
	}
	b.Run("handler", func(b *testing.B) {
		w := &discardWriter{body: make([]byte, 0, 4096)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// The server reads each request afresh; the mux records its route on the one it is
			// given, and the front wraps its body.
			req := *requests[i%len(requests)]
			w.header, w.code, w.body = make(http.Header), 0, w.body[:0]
			h.ServeHTTP(w, &req)
			if w.code != http.StatusOK || len(w.body) < 800 {
				b.Fatalf("%d %s", w.code, w.body)
			}
			i += stride
		}
	})
	b.Run("resolver", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if body, status, err := r.Resolve(ctx, dids[i%len(dids)]); err != nil || status != sidetree.ResolutionFound || len(body) < 800 {
				b.Fatal(status, err)
			}
			i += stride
		}
	})
	b.Run("read", func(b *testing.B) {
		const prefix = len("did:sidetree:")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := st.DIDStateGet(ctx, dids[i%len(dids)][prefix:]); err != nil {
				b.Fatal(err)
			}
			i += stride
		}
	})
}
