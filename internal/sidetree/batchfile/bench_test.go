package batchfile

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// BenchmarkBatch builds and reads 10,000-operation batches: "creates" are 10,000 creates (one
// key and one service each), "mixed" 4,000 creates, 3,000 updates, 2,000 recovers and 1,000
// deactivates. Build includes gzip and CIDv0 addressing; Read decompresses, parses, validates
// and rebuilds every request from an in-memory CAS.
func BenchmarkBatch(b *testing.B) {
	for _, tc := range []struct {
		name string
		ops  [4]int
	}{
		{"creates", [4]int{10_000, 0, 0, 0}},
		{"mixed", [4]int{4000, 3000, 2000, 1000}},
	} {
		m := generate(b, tc.ops[0], tc.ops[1], tc.ops[2], tc.ops[3])
		ops := m.interleaved()
		b.Run("build_10000_"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(ops, cidv0, DefaultLimits()); err != nil {
					b.Fatal(err)
				}
			}
		})
		files, err := Build(ops, cidv0, DefaultLimits())
		require.NoError(b, err)
		s := newStore()
		s.put(files)
		anchor := files.Anchor.String()
		b.Run("read_10000_"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := Read(sidetree.DefaultProfile(), anchor, s.fetch, DefaultLimits())
				if err != nil || len(r.Operations) != len(ops) {
					b.Fatal(err)
				}
			}
		})
	}
}
