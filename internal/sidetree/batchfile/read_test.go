package batchfile

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// fixture is a valid stored batch whose files a test may replace.
type fixture struct {
	m     mix
	files *Files
	store *store
}

func newFixture(t testing.TB, creates, updates, recovers, deacts int) *fixture {
	t.Helper()
	m := generate(t, creates, updates, recovers, deacts)
	files, err := Build(m.interleaved(), cidv0, DefaultLimits())
	require.NoError(t, err)
	s := newStore()
	s.put(files)
	return &fixture{m: m, files: files, store: s}
}

// set stores data (not compressed) under the URI of file k.
func (f *fixture) setRaw(k Kind, data []byte) {
	f.store.files[f.file(k).URI] = data
}

// set stores JSON, compressed, under the URI of file k.
func (f *fixture) set(t testing.TB, k Kind, json string) { f.setRaw(k, gz(t, []byte(json))) }

// edit rewrites file k's JSON.
func (f *fixture) edit(t testing.TB, k Kind, fn func(s string) string) {
	f.set(t, k, fn(string(gunzip(t, f.store.files[f.file(k).URI]))))
}

func (f *fixture) file(k Kind) *File {
	switch k {
	case CoreIndex:
		return f.files.CoreIndex
	case CoreProof:
		return f.files.CoreProof
	case ProvisionalIndex:
		return f.files.ProvisionalIndex
	case ProvisionalProof:
		return f.files.ProvisionalProof
	default:
		return f.files.Chunk
	}
}

func (f *fixture) read(l Limits) (*Batch, error) {
	return Read(profile, f.files.Anchor.String(), f.store.fetch, l)
}

// replaceJSON decodes file JSON into a map, lets fn change it, and encodes it again.
func replaceJSON(t testing.TB, fn func(m map[string]any)) func(string) string {
	return func(s string) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		fn(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
}

func ops(m map[string]any) map[string]any { return m["operations"].(map[string]any) }

func TestReadRejectsCoreFiles(t *testing.T) {
	t.Parallel()
	bomb := `{"x":"` + strings.Repeat("a", 4000) + `"}`
	for _, tc := range []struct {
		name   string
		change func(t testing.TB, f *fixture)
		limits Limits
		code   sidetree.Code
	}{
		{"not gzip", func(t testing.TB, f *fixture) { f.setRaw(CoreIndex, []byte("{}")) }, DefaultLimits(), sidetree.CodeDecompressionFailed},
		{"truncated gzip", func(t testing.TB, f *fixture) { d := f.files.CoreIndex.Data; f.setRaw(CoreIndex, d[:len(d)-4]) }, DefaultLimits(), sidetree.CodeDecompressionFailed},
		{"compressed file over the cap", func(t testing.TB, f *fixture) {}, Limits{MaxCoreIndexFileSize: 100}, sidetree.CodeFileTooLarge},
		{"decompresses beyond 3x the cap", func(t testing.TB, f *fixture) { f.set(t, CoreIndex, bomb) }, Limits{MaxCoreIndexFileSize: 1000}, sidetree.CodeDecompressionFailed},
		{"not JSON", func(t testing.TB, f *fixture) { f.set(t, CoreIndex, "{") }, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"array", func(t testing.TB, f *fixture) { f.set(t, CoreIndex, "[]") }, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"unknown member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["x"] = 1 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"writerLockId not a string", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["writerLockId"] = 1 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"writerLockId too long", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["writerLockId"] = strings.Repeat("w", 201) }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"operations not an object", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["operations"] = []any{} }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"unknown operations member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { ops(m)["update"] = []any{} }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"create not an array", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { ops(m)["create"] = map[string]any{} }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"create reference extra member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { ops(m)["create"].([]any)[0].(map[string]any)["delta"] = 1 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"invalid suffixData", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) {
				ops(m)["create"].([]any)[0].(map[string]any)["suffixData"].(map[string]any)["type"] = "toolong"
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"recover reference extra member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { ops(m)["recover"].([]any)[0].(map[string]any)["x"] = 1 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"deactivate reveal value invalid", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { ops(m)["deactivate"].([]any)[0].(map[string]any)["revealValue"] = "x" }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"one DID twice", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) {
				o := ops(m)
				o["deactivate"].([]any)[0].(map[string]any)["didSuffix"] = o["recover"].([]any)[0].(map[string]any)["didSuffix"]
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"creates without provisional index", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { delete(m, "provisionalIndexFileUri") }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"recovers without core proof", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { delete(m, "coreProofFileUri") }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"core proof without recovers or deactivates", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { delete(ops(m), "recover"); delete(ops(m), "deactivate") }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"provisional index URI too long", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["provisionalIndexFileUri"] = strings.Repeat("Q", 101) }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"provisional index URI not a CID", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) {
				m["provisionalIndexFileUri"] = "EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg"
			}))
		}, cidLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"core proof URI not a string", func(t testing.TB, f *fixture) {
			f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) { m["coreProofFileUri"] = 5 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreIndexFile},
		{"more operations than paid", func(t testing.TB, f *fixture) { f.files.Anchor.Count = 3 }, DefaultLimits(), sidetree.CodeOperationCountExceedsLimit},
		{"core proof without operations", func(t testing.TB, f *fixture) { f.set(t, CoreProof, `{}`) }, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"core proof unknown member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) { ops(m)["update"] = []any{} }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"core proof recover not array", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) { ops(m)["recover"] = "x" }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"core proof entry extra member", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) { ops(m)["recover"].([]any)[0].(map[string]any)["x"] = 1 }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"core proof expanded JWS (spec example shape)", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) {
				ops(m)["recover"].([]any)[0].(map[string]any)["signedData"] = map[string]any{"protected": "a", "payload": "b", "signature": "c"}
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"core proof bare JWS strings (core-go shape)", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) {
				ops(m)["recover"].([]any)[0] = ops(m)["recover"].([]any)[0].(map[string]any)["signedData"]
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"deactivate proof for another DID", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) {
				d := ops(m)["deactivate"].([]any)
				d[0], d[1] = d[1], d[0]
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"recover proof payload invalid", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) {
				ops(m)["recover"].([]any)[0] = map[string]any{"signedData": f.m.updates[0].SignedData}
			}))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"no proofs", func(t testing.TB, f *fixture) { f.set(t, CoreProof, `{"operations":{"recover":[],"deactivate":[]}}`) }, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
		{"fewer proofs than operations", func(t testing.TB, f *fixture) {
			f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) { ops(m)["recover"] = ops(m)["recover"].([]any)[:1] }))
		}, DefaultLimits(), sidetree.CodeInvalidCoreProofFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 2, 2, 2, 2)
			tc.change(t, f)
			b, err := f.read(tc.limits)
			require.Nil(t, b)
			require.Equal(t, tc.code, sidetree.CodeOf(err), "%v", err)
		})
	}
}

func TestReadFetchErrors(t *testing.T) {
	t.Parallel()
	unreachable := errors.New("CAS unreachable")

	f := newFixture(t, 1, 1, 1, 1)
	f.store.fail[f.files.CoreProof.URI] = unreachable
	_, err := f.read(DefaultLimits())
	var fe *FetchError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, CoreProof, fe.Kind)
	require.ErrorIs(t, err, unreachable)

	// A provisional file that cannot be fetched leaves the core operations, without deltas.
	f = newFixture(t, 1, 1, 1, 1)
	f.store.fail[f.files.Chunk.URI] = unreachable
	b, err := f.read(DefaultLimits())
	require.NoError(t, err)
	require.ErrorAs(t, b.ProvisionalErr, &fe)
	require.Equal(t, Chunk, fe.Kind)
	require.Len(t, b.Operations, 3)
}

func TestReadRejectsProvisionalFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t testing.TB, f *fixture)
		code   sidetree.Code
	}{
		{"provisional index not gzip", func(t testing.TB, f *fixture) { f.setRaw(ProvisionalIndex, []byte("x")) }, sidetree.CodeDecompressionFailed},
		{"provisional index unknown member", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { m["x"] = 1 }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"no chunks", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { delete(m, "chunks") }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"two chunks", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { m["chunks"] = append(m["chunks"].([]any), m["chunks"].([]any)[0]) }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"chunk with extra member", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { m["chunks"].([]any)[0].(map[string]any)["x"] = 1 }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"operations without update", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { m["operations"] = map[string]any{} }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"update for a DID of the core index", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) {
				ops(m)["update"].([]any)[0].(map[string]any)["didSuffix"] = f.m.recovers[0].Suffix
			}))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"two updates of one DID", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) {
				u := ops(m)["update"].([]any)
				u[1].(map[string]any)["didSuffix"] = u[0].(map[string]any)["didSuffix"]
			}))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"updates without proof file", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { delete(m, "provisionalProofFileUri") }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"proof file without updates", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) { ops(m)["update"] = []any{} }))
		}, sidetree.CodeInvalidProvisionalIndex},
		{"more updates than paid", func(t testing.TB, f *fixture) { f.files.Anchor.Count = 7 }, sidetree.CodeOperationCountExceedsLimit},
		{"provisional proof count mismatch", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalProof, replaceJSON(t, func(m map[string]any) { ops(m)["update"] = ops(m)["update"].([]any)[:1] }))
		}, sidetree.CodeInvalidProvisionalProof},
		{"provisional proof without operations", func(t testing.TB, f *fixture) { f.set(t, ProvisionalProof, `{"operations":{}}`) }, sidetree.CodeInvalidProvisionalProof},
		{"provisional proof with a recover proof", func(t testing.TB, f *fixture) {
			f.edit(t, ProvisionalProof, replaceJSON(t, func(m map[string]any) {
				ops(m)["update"].([]any)[0] = map[string]any{"signedData": f.m.recovers[0].SignedData}
			}))
		}, sidetree.CodeInvalidProvisionalProof},
		{"chunk unknown member", func(t testing.TB, f *fixture) {
			f.edit(t, Chunk, replaceJSON(t, func(m map[string]any) { m["x"] = 1 }))
		}, sidetree.CodeInvalidChunkFile},
		{"deltas not an array", func(t testing.TB, f *fixture) { f.set(t, Chunk, `{"deltas":{}}`) }, sidetree.CodeInvalidChunkFile},
		{"null delta", func(t testing.TB, f *fixture) {
			f.edit(t, Chunk, replaceJSON(t, func(m map[string]any) { m["deltas"].([]any)[0] = nil }))
		}, sidetree.CodeInvalidChunkFile},
		{"delta too large", func(t testing.TB, f *fixture) {
			f.edit(t, Chunk, replaceJSON(t, func(m map[string]any) {
				m["deltas"].([]any)[0].(map[string]any)["patches"] = []any{map[string]any{"action": "remove-services", "ids": strings.Split(strings.Repeat("abcdefghij,", 100), ",")[:100]}}
			}))
		}, sidetree.CodeInvalidChunkFile},
		{"delta with unknown patch", func(t testing.TB, f *fixture) {
			f.edit(t, Chunk, replaceJSON(t, func(m map[string]any) {
				m["deltas"].([]any)[0].(map[string]any)["patches"] = []any{map[string]any{"action": "x"}}
			}))
		}, sidetree.CodeInvalidChunkFile},
		{"fewer deltas than operations", func(t testing.TB, f *fixture) {
			f.edit(t, Chunk, replaceJSON(t, func(m map[string]any) { m["deltas"] = m["deltas"].([]any)[1:] }))
		}, sidetree.CodeInvalidChunkFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 2, 2, 2, 2)
			tc.change(t, f)
			b, err := f.read(DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, tc.code, sidetree.CodeOf(b.ProvisionalErr), "%v", b.ProvisionalErr)
			// The core operations remain, without deltas; updates are dropped.
			require.Len(t, b.Operations, 6)
			for i, op := range b.Operations {
				require.Equal(t, i, op.Position)
				require.NotEqual(t, sidetree.OperationUpdate, op.Type)
				require.NotContains(t, string(op.Request), `"delta"`)
			}
			// A deactivate needs no delta and stays whole.
			_, err = sidetree.ParseOperation(b.Operations[4].Request, profile)
			require.NoError(t, err)
		})
	}
}

// The reference implementation compares only the total proof count, so recover proofs can stand
// in for deactivate proofs; the deactivate then has no signedData and never applies.
func TestReadProofTotalQuirk(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, 0, 2, 1)
	// Core index: recover r0, deactivate of r1's DID; core proof: the two recover proofs and no
	// deactivate proof. Two proofs for two operations pass the total check.
	f.edit(t, CoreIndex, replaceJSON(t, func(m map[string]any) {
		o := ops(m)
		o["deactivate"] = []any{o["recover"].([]any)[1]}
		o["recover"] = o["recover"].([]any)[:1]
	}))
	f.edit(t, CoreProof, replaceJSON(t, func(m map[string]any) { ops(m)["deactivate"] = []any{} }))
	b, err := f.read(DefaultLimits())
	require.NoError(t, err)
	require.Len(t, b.Operations, 2)
	require.Equal(t, sidetree.OperationDeactivate, b.Operations[1].Type)
	require.NotContains(t, string(b.Operations[1].Request), "signedData")
	_, err = sidetree.ParseOperation(b.Operations[1].Request, profile)
	require.Equal(t, sidetree.CodeMissingProperty, sidetree.CodeOf(err))
}

func TestReadEmptyBatchAndDeactivateOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, 0, 0, 3)
	b, err := f.read(DefaultLimits())
	require.NoError(t, err)
	require.Len(t, b.Operations, 3)

	// {} is a valid core index file with no operations.
	f.set(t, CoreIndex, `{}`)
	b, err = f.read(DefaultLimits())
	require.NoError(t, err)
	require.Empty(t, b.Operations)
}

func TestReadKeepsAnchorOrigins(t *testing.T) {
	t.Parallel()
	const origin = "https://a.example/services/anchord"
	w := wallet.New(wallet.Config{AnchorOrigin: origin, Rand: rand.NewChaCha8([32]byte{7})})
	_, create, err := w.Create()
	require.NoError(t, err)
	// The recover is for another DID: the builder does not look at state.
	other, _, err := w.Create()
	require.NoError(t, err)
	recover, err := w.Recover(other)
	require.NoError(t, err)
	var ops []*sidetree.Operation
	for _, req := range [][]byte{create, recover} {
		op, err := sidetree.ParseOperation(req, profile)
		require.NoError(t, err)
		ops = append(ops, op)
	}
	files, err := Build(ops, cidv0, cidLimits())
	require.NoError(t, err)
	s := newStore()
	s.put(files)
	b, err := Read(profile, files.Anchor.String(), s.fetch, cidLimits())
	require.NoError(t, err)
	require.NoError(t, b.ProvisionalErr)
	require.Len(t, b.Operations, 2)
	for i, op := range ops {
		require.Equal(t, string(op.Request), string(b.Operations[i].Request), "operation %d", i)
		parsed, err := sidetree.ParseOperation(b.Operations[i].Request, profile)
		require.NoError(t, err)
		require.Equal(t, origin, parsed.AnchorOrigin)
		require.Equal(t, op.Suffix, parsed.Suffix)
	}
}

// TestDecompressIgnoresReservedHeaderFlags: a gzip header with a reserved flag bit set (RFC 1952
// says readers should refuse it) is read as it always was. Batch files are read with the standard
// library, which ignores those bits, and a file read once must read the same after an upgrade.
func TestDecompressIgnoresReservedHeaderFlags(t *testing.T) {
	t.Parallel()
	want := []byte(`{"deltas":[]}`)
	data := gz(t, want)
	data[3] |= 0x40 // FLG: a reserved bit
	got, err := decompress(data, 1<<10)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
