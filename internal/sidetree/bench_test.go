package sidetree_test

import (
	"testing"

	"github.com/anchord/anchord/internal/sidetree"
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

// BenchmarkParseUpdate is intake validation of an update, signature verification included.
func BenchmarkParseUpdate(b *testing.B) {
	body := difOperation(b, "update")
	p := sidetree.DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sidetree.ParseOperation(body, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve resolves a DID with a create and 20 updates.
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
