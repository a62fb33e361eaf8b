package observer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"testing"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
)

// stateRows is a per-DID index of nothing but states: the resolver's reads cost nothing, so a
// benchmark measures the cache alone.
type stateRows struct {
	store.Executor
	records map[string][]byte
}

func (s *stateRows) DIDStateGet(_ context.Context, suffix string) ([]byte, error) {
	if b, ok := s.records[suffix]; ok {
		return b, nil
	}
	return nil, store.ErrNotFound
}

// loadgenStates is n DIDs' suffixes and a per-DID index holding their stored states, each of a
// create of the load generator's shape (a key and a service, the keys from a pool of 64). The
// states are built from 256 creates: what the collector sees is their shape, not their values.
func loadgenStates(tb testing.TB, n int) ([]string, *stateRows) {
	tb.Helper()
	p := sidetree.DefaultProfile()
	w := wallet.New(wallet.Config{})
	keys := make([]*wallet.Key, 64)
	for i := range keys {
		k, err := w.NewKey()
		if err != nil {
			tb.Fatal(err)
		}
		keys[i] = k
	}
	records := make([][]byte, 256)
	for i := range records {
		upd, rec := keys[i%64], keys[(i+1)%64]
		req, suffix, err := wallet.CreateRequest(rec.Commitment(), upd.Commitment(), wallet.Replace(wallet.Document{
			PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", upd, "authentication")},
			Services:   []wallet.Service{{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com/" + strconv.FormatInt(int64(i), 36)}},
		}))
		if err != nil {
			tb.Fatal(err)
		}
		r := sidetree.ResolveRecord(p, suffix, []sidetree.AnchoredOperation{{Sequence: uint64(i + 1), Request: req}})
		if r.State == nil {
			tb.Fatal("the create does not apply")
		}
		records[i] = r.AppendBinary(nil)
	}
	suffixes := make([]string, n)
	rows := &stateRows{records: make(map[string][]byte, n)}
	for i := range suffixes {
		h := sha256.Sum256([]byte(strconv.Itoa(i)))
		suffixes[i] = base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, h[:]...))
		rows.records[suffixes[i]] = records[i%len(records)]
	}
	return suffixes, rows
}

// filledResolver is a resolver of the only writer (its cache trusted) whose state cache holds
// every suffix's state and short-form rendering, as the mid-load resolution of a run leaves it.
func filledResolver(tb testing.TB, suffixes []string, rows *stateRows) *Resolver {
	tb.Helper()
	ctx := context.Background()
	r := NewResolver(sidetree.DefaultProfile(), rows, NewUnfilledKnown(), len(suffixes))
	r.trustCache()
	for _, s := range suffixes {
		if _, _, err := r.Resolve(ctx, "did:sidetree:"+s); err != nil {
			tb.Fatal(err)
		}
	}
	if len(r.cache) != len(suffixes) {
		tb.Fatalf("%d entries cached of %d", len(r.cache), len(suffixes))
	}
	return r
}

// BenchmarkStateCacheGC is what a full state cache costs the collector: each op is one
// runtime.GC(), in "full" with 100,000 states of the load generator's shape cached with their
// renderings and nothing else of size live, in "none" before the cache was filled. It reports the collector's mark CPU per collection, and what
// each entry keeps live: heap objects, bytes, and the bytes the collector scans for pointers
// (the work of marking besides the objects' count, and unlike the times not shared with what
// else the machine runs).
func BenchmarkStateCacheGC(b *testing.B) {
	const n = StateCacheSizeDefault
	samples := []rtmetrics.Sample{
		{Name: "/gc/heap/objects:objects"},
		{Name: "/gc/scan/heap:bytes"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
	}
	markSeconds := func() float64 {
		rtmetrics.Read(samples)
		var s float64
		for _, m := range samples[2:] {
			s += m.Value.Float64()
		}
		return s
	}
	heap := func() (objects, scan, bytes uint64) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		rtmetrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64(), m.HeapAlloc
	}
	collect := func(b *testing.B) {
		before := markSeconds()
		for b.Loop() {
			runtime.GC()
		}
		b.ReportMetric((markSeconds()-before)*1e9/float64(b.N), "mark-cpu-ns/op")
	}
	// The collection of the benchmark's heap without the cache, to take from "full".
	b.Run("none", collect)
	objects0, scan0, bytes0 := heap()
	suffixes, rows := loadgenStates(b, n)
	r := filledResolver(b, suffixes, rows)
	// The cache is trusted and full: nothing reads the rows or the suffixes again.
	rows.records, suffixes = nil, nil
	objects1, scan1, bytes1 := heap()
	b.Run("full", func(b *testing.B) {
		collect(b)
		b.ReportMetric(float64(objects1-objects0)/n, "objects/entry")
		b.ReportMetric(float64(bytes1-bytes0)/n, "B/entry")
		b.ReportMetric(float64(scan1-scan0)/n, "scan-B/entry")
	})
	runtime.KeepAlive(r)
}

// BenchmarkStateCacheHit is a hit in a full state cache: "state" for a caller that needs the
// state (intake's check of an update), "resolve" for a short-form resolution, both of the only
// writer; "shared" for a state where the index is shared, which reads the row on every call.
func BenchmarkStateCacheHit(b *testing.B) {
	const n = 10_000
	suffixes, rows := loadgenStates(b, n)
	r := filledResolver(b, suffixes, rows)
	ctx := context.Background()
	b.Run("state", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if st, err := r.State(ctx, suffixes[i%n]); err != nil || st == nil {
				b.Fatal(st, err)
			}
			i++
		}
	})
	dids := make([]string, n)
	for i, s := range suffixes {
		dids[i] = "did:sidetree:" + s
	}
	b.Run("resolve", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := r.Resolve(ctx, dids[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	shared := NewResolver(sidetree.DefaultProfile(), rows, NewUnfilledKnown(), n)
	for _, s := range suffixes {
		if _, _, err := shared.Resolve(ctx, "did:sidetree:"+s); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if st, err := shared.State(ctx, suffixes[i%n]); err != nil || st == nil {
				b.Fatal(st, err)
			}
			i++
		}
	})
	b.Run("shared-resolve", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := shared.Resolve(ctx, dids[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
