package sidetree_test

import (
	"strconv"
	"testing"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// BenchmarkParseCreate is intake validation of a create (the DIF vector).
func BenchmarkParseCreate(b *testing.B) {
	body := difOperation(b, "create")
	p := sidetree.DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sidetree.ParseOperation(body, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseUpdate is intake validation of an update, signature verification included (a
// new operation's signature is never among those already verified).
func BenchmarkParseUpdate(b *testing.B) {
	body := difOperation(b, "update")
	p := sidetree.DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		sidetree.ForgetVerified()
		if _, err := sidetree.ParseOperation(body, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve resolves a DID with a create and 20 updates again and again, as the server
// does each time one more operation of the DID is indexed.
func BenchmarkResolve(b *testing.B) {
	d, create := newDID(b)
	bodies := [][]byte{create}
	for range 20 {
		bodies = append(bodies, d.update(b, service("s")))
	}
	ops := history(bodies...)
	p := sidetree.DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		if st := sidetree.Resolve(p, d.id.Suffix, ops); st.LastSequence != 21 {
			b.Fatal("not all applied")
		}
	}
}

// BenchmarkResolveCached is BenchmarkResolve through an OperationCache: the requests are parsed
// once, as a server that resolves the DID after each of its changes parses only the new one.
func BenchmarkResolveCached(b *testing.B) {
	d, create := newDID(b)
	bodies := [][]byte{create}
	for range 20 {
		bodies = append(bodies, d.update(b, service("s")))
	}
	ops := history(bodies...)
	c := sidetree.NewOperationCache(sidetree.DefaultProfile(), 0)
	b.ReportAllocs()
	for b.Loop() {
		if st := c.Resolve(d.id.Suffix, ops); st.LastSequence != 21 {
			b.Fatal("not all applied")
		}
	}
}

// growingHistory is a create and n updates, each adding a service under a new id and every
// tenth also removing the five oldest: the document grows with the history, as a DID that
// rotates in new endpoints does.
func growingHistory(b *testing.B, n int) ([]sidetree.AnchoredOperation, string) {
	b.Helper()
	d, create := newDID(b)
	bodies := make([][]byte, 0, n+1)
	bodies = append(bodies, create)
	oldest := 0
	for i := range n {
		patches := []wallet.Patch{service("s" + strconv.Itoa(i))}
		if i%10 == 9 {
			ids := make([]string, 0, 5)
			for range 5 {
				ids = append(ids, "s"+strconv.Itoa(oldest))
				oldest++
			}
			patches = append(patches, wallet.RemoveServices(ids...))
		}
		bodies = append(bodies, d.update(b, patches...))
	}
	return history(bodies...), d.id.Suffix
}

// BenchmarkResolveFirst resolves a DID with a create and 20 updates whose signatures were never
// verified before.
func BenchmarkResolveFirst(b *testing.B) {
	d, create := newDID(b)
	bodies := [][]byte{create}
	for range 20 {
		bodies = append(bodies, d.update(b, service("s")))
	}
	ops := history(bodies...)
	p := sidetree.DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		sidetree.ForgetVerified()
		if st := sidetree.Resolve(p, d.id.Suffix, ops); st.LastSequence != 21 {
			b.Fatal("not all applied")
		}
	}
}

// BenchmarkResolveHistory resolves DIDs with 100, 1,000 and 10,000 updates. Resolution must be
// linear in the history: ns/operation (time per anchored operation) stays flat as it grows.
func BenchmarkResolveHistory(b *testing.B) {
	p := sidetree.DefaultProfile()
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run("ops="+strconv.Itoa(n), func(b *testing.B) {
			ops, suffix := growingHistory(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if st := sidetree.Resolve(p, suffix, ops); st == nil || st.LastSequence != uint64(n+1) {
					b.Fatal("not all applied")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n+1), "ns/operation")
		})
	}
}

// BenchmarkResolutionMiss is what a resolution that misses the resolver's state cache costs
// besides reading the index, for a create of the load generator's shape (a key and a service):
// "replay" parses the create, resolves and renders (before the compact state), "record" decodes
// the DID's StateRecord and renders, "decode" only decodes it. "encode" is what indexing the
// create adds. httpapi's BenchmarkResolutionMissServed has the whole miss, the read included.
func BenchmarkResolutionMiss(b *testing.B) {
	w := wallet.New(wallet.Config{})
	k, err := w.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	id, create, err := w.Create(wallet.Replace(wallet.Document{
		PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", k, "authentication", "assertionMethod")},
		Services:   []wallet.Service{{ID: "svc-1", Type: "LinkedDomains", Endpoint: "https://svc.example.com"}},
	}))
	if err != nil {
		b.Fatal(err)
	}
	p := sidetree.DefaultProfile()
	did, err := sidetree.ParseDID(p, id.DID())
	if err != nil {
		b.Fatal(err)
	}
	ops := history(create)
	rec := sidetree.ResolveRecord(p, id.Suffix, ops)
	stored := rec.AppendBinary(nil)
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sidetree.RenderResolution(did, sidetree.Resolve(p, id.Suffix, ops))
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := sidetree.DecodeStateRecord(id.Suffix, stored)
			if err != nil {
				b.Fatal(err)
			}
			sidetree.RenderResolution(did, r.State)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sidetree.DecodeStateRecord(id.Suffix, stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = rec.AppendBinary(buf[:0])
		}
	})
	b.Logf("the record is %d bytes", len(stored))
}
