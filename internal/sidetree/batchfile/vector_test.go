package batchfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

const difSuffix = "EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg"

func vector(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", path))
	require.NoError(t, err)
	return data
}

// chain anchors each batch of requests in turn (Sequence 1, 2, …) through Build, CAS and Read,
// and returns every anchored operation read back.
func chain(t testing.TB, batches ...[][]byte) []sidetree.AnchoredOperation {
	t.Helper()
	s := newStore()
	l := cidLimits()
	var all []sidetree.AnchoredOperation
	for i, reqs := range batches {
		var ops []*sidetree.Operation
		for _, r := range reqs {
			op, err := sidetree.ParseOperation(r, profile)
			require.NoError(t, err)
			ops = append(ops, op)
		}
		files, err := Build(ops, cidv0, l)
		require.NoError(t, err)
		s.put(files)
		b, err := Read(profile, files.Anchor.String(), s.fetch, l)
		require.NoError(t, err)
		require.NoError(t, b.ProvisionalErr)
		for _, op := range b.Operations {
			op.Sequence = uint64(i + 1)
			all = append(all, op)
		}
	}
	return all
}

// TestDIFResolutionThroughBatchFiles: the DIF operations, anchored one batch each through
// build, gzip, CIDv0, read, give the DIF resolution results (parsed JSON and member order).
func TestDIFResolutionThroughBatchFiles(t *testing.T) {
	t.Parallel()
	op := func(name string) [][]byte { return [][]byte{vector(t, "dif/operations/"+name+"Operation.json")} }
	for _, tc := range []struct {
		vector  string
		batches [][][]byte
		status  sidetree.ResolutionStatus
	}{
		{"afterCreate", [][][]byte{op("create")}, sidetree.ResolutionFound},
		{"afterUpdate", [][][]byte{op("create"), op("update")}, sidetree.ResolutionFound},
		{"afterRecover", [][][]byte{op("create"), op("recover")}, sidetree.ResolutionFound},
		{"afterDeactivate", [][][]byte{op("create"), op("recover"), op("deactivate")}, sidetree.ResolutionDeactivated},
	} {
		t.Run(tc.vector, func(t *testing.T) {
			t.Parallel()
			st := sidetree.Resolve(profile, difSuffix, chain(t, tc.batches...))
			did, err := sidetree.ParseDID(profile, "did:sidetree:"+difSuffix)
			require.NoError(t, err)
			body, status := sidetree.RenderResolution(did, st)
			require.Equal(t, tc.status, status)
			want := vector(t, "dif/resolution/"+tc.vector+".json")
			var w, g any
			require.NoError(t, json.Unmarshal(want, &w))
			require.NoError(t, json.Unmarshal(body, &g))
			require.Equal(t, w, g)
			wv, err := jsontree.Parse(want)
			require.NoError(t, err)
			require.Equal(t, string(wv.AppendCompact(nil)), string(body), "byte-identical to the vector's compact form")
		})
	}
}

// TestTransmuteThroughBatchFiles anchors the 5 transmute DIDs together, one operation type per
// batch, and checks each DID's state against resolving its requests directly.
func TestTransmuteThroughBatchFiles(t *testing.T) {
	t.Parallel()
	var v struct {
		Operations []struct {
			Suffix string          `json:"didUniqueSuffix"`
			Op0    json.RawMessage `json:"op0"`
			Op1    json.RawMessage `json:"op1"`
			Op2    json.RawMessage `json:"op2"`
			Op3    json.RawMessage `json:"op3"`
		} `json:"operations"`
	}
	require.NoError(t, json.Unmarshal(vector(t, "transmute/v1-secp256k1-operations.json"), &v))
	batches := make([][][]byte, 4)
	for _, d := range v.Operations {
		for i, raw := range []json.RawMessage{d.Op0, d.Op1, d.Op2, d.Op3} {
			batches[i] = append(batches[i], raw)
		}
	}
	for n := 1; n <= 4; n++ {
		anchored := chain(t, batches[:n]...)
		require.Len(t, anchored, 5*n)
		for _, d := range v.Operations {
			var direct []sidetree.AnchoredOperation
			for i, raw := range []json.RawMessage{d.Op0, d.Op1, d.Op2, d.Op3}[:n] {
				op, err := sidetree.ParseOperation(raw, profile)
				require.NoError(t, err)
				direct = append(direct, sidetree.AnchoredOperation{Sequence: uint64(i + 1), Request: op.Request})
			}
			want := sidetree.Resolve(profile, d.Suffix, direct)
			got := sidetree.Resolve(profile, d.Suffix, anchored)
			require.Equal(t, want.Document, got.Document)
			require.Equal(t, want.UpdateCommitment, got.UpdateCommitment)
			require.Equal(t, want.RecoveryCommitment, got.RecoveryCommitment)
			require.Equal(t, n == 4, got.Deactivated)
			require.Equal(t, uint64(n), got.LastSequence)
		}
	}
}
