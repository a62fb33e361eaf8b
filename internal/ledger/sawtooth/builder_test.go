package sawtooth_test

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/sawtoothpb"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newBuilder(t testing.TB, cfg sawtooth.BuilderConfig) *sawtooth.Builder {
	t.Helper()
	s, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)
	b, err := sawtooth.NewBuilder(s, cfg)
	require.NoError(t, err)
	return b
}

func build(t testing.TB, p sawtooth.BuildParams) sawtooth.Batch {
	t.Helper()
	b, err := newBuilder(t, sawtooth.BuilderConfig{}).Build(p)
	require.NoError(t, err)
	return b
}

// TestBuildGolden pins the bytes of a fixed key, anchor and nonce. If it fails, the wire format
// changed: batches stored before the change would no longer match what we build now. Run with
// -update only when that is intended.
func TestBuildGolden(t *testing.T) {
	t.Parallel()

	b := build(t, sawtooth.BuildParams{
		Anchor: "42.QmXyzGoldenAnchorReference",
		Nonce:  "00000000000000000000000000000001",
	})
	got := "id " + b.ID + "\ntxn " + b.TransactionIDs[0] + "\nbytes " + hex.EncodeToString(b.Bytes) + "\n"
	path := filepath.Join("testdata", "golden_batchlist.txt")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)

	again := build(t, sawtooth.BuildParams{Anchor: "42.QmXyzGoldenAnchorReference", Nonce: "00000000000000000000000000000001"})
	require.Equal(t, b, again, "building twice gives the same batch")
}

func TestBuild(t *testing.T) {
	t.Parallel()

	b := build(t, sawtooth.BuildParams{Anchor: "7.QmSomething"})
	require.True(t, sawtooth.IsID(b.ID))
	require.Len(t, b.TransactionIDs, 1)
	require.Len(t, b.Nonce, 32)
	require.Equal(t, sawtooth.FamilyName, b.FamilyName)
	require.Equal(t, sawtooth.FamilyVersion, b.FamilyVersion)
	require.Equal(t, sawtooth.AnchorAddress(sawtooth.FamilyName, "7.QmSomething"), b.Address)

	// The generated types read it back and the verifier accepts it.
	list, err := sawtooth.ParseBatchList(b.Bytes)
	require.NoError(t, err)
	require.Len(t, list.GetBatches(), 1)
	vb, err := sawtooth.VerifyBatch(list.GetBatches()[0])
	require.NoError(t, err)
	require.Equal(t, b.ID, vb.ID)
	require.Equal(t, b.SignerPublicKey, vb.SignerPublicKey)
	require.Equal(t, []string{b.Address}, vb.Transactions[0].Header.GetInputs())
	require.Equal(t, "7.QmSomething", string(vb.Transactions[0].Payload))

	// A random nonce makes the same anchor a different batch.
	other := build(t, sawtooth.BuildParams{Anchor: "7.QmSomething"})
	require.NotEqual(t, b.ID, other.ID)
	require.NotEqual(t, b.Nonce, other.Nonce)
}

func TestBuildOtherFamily(t *testing.T) {
	t.Parallel()

	b, err := newBuilder(t, sawtooth.BuilderConfig{FamilyName: "anchord-test", FamilyVersion: "2.0"}).
		Build(sawtooth.BuildParams{Anchor: "1.Qm"})
	require.NoError(t, err)
	require.Equal(t, "anchord-test", b.FamilyName)
	require.Equal(t, "2.0", b.FamilyVersion)
	require.Equal(t, sawtooth.Namespace("anchord-test"), b.Address[:6])
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()

	builder := newBuilder(t, sawtooth.BuilderConfig{})
	for name, tc := range map[string]struct {
		anchor  string
		wantErr string
	}{
		"empty":    {"", "anchor is empty"},
		"too long": {strings.Repeat("a", sawtooth.MaxAnchorLen+1), "more than"},
		"not utf8": {"1.\xff", "UTF-8"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := builder.Build(sawtooth.BuildParams{Anchor: tc.anchor})
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	_, err := sawtooth.NewBuilder(nil, sawtooth.BuilderConfig{})
	require.ErrorContains(t, err, "signer is nil")
}

// mutate decodes a built BatchList, lets f change it, and re-encodes it.
func mutate(t *testing.T, b []byte, f func(*sawtoothpb.BatchList)) []byte {
	t.Helper()
	var list sawtoothpb.BatchList
	require.NoError(t, proto.Unmarshal(b, &list))
	f(&list)
	out, err := proto.Marshal(&list)
	require.NoError(t, err)
	return out
}
