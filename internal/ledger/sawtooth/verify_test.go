package sawtooth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/sawtoothpb"
)

func TestParseBatchList(t *testing.T) {
	t.Parallel()

	_, err := sawtooth.ParseBatchList(nil)
	require.ErrorIs(t, err, sawtooth.ErrNoBatches)
	empty, err := proto.Marshal(&sawtoothpb.BatchList{})
	require.NoError(t, err)
	_, err = sawtooth.ParseBatchList(append(empty, 0x12, 0x00)) // only an unknown field 2
	require.ErrorIs(t, err, sawtooth.ErrNoBatches)
	_, err = sawtooth.ParseBatchList([]byte{0x0a, 0x05, 0x01}) // batch of 5 bytes, 1 present
	require.ErrorIs(t, err, sawtooth.ErrUndecodable)
	_, err = sawtooth.ParseBatchList([]byte{0x0a}) // a tag without its length
	require.ErrorIs(t, err, sawtooth.ErrUndecodable)

	// One empty batch decodes; it is VerifyBatch that refuses it.
	list, err := sawtooth.ParseBatchList([]byte{0x0a, 0x00})
	require.NoError(t, err)
	_, err = sawtooth.VerifyBatch(list.GetBatches()[0])
	require.Error(t, err)
}

func TestVerifyBatchRefuses(t *testing.T) {
	t.Parallel()

	good := build(t, sawtooth.BuildParams{Anchor: "5.QmGood"})
	other := build(t, sawtooth.BuildParams{Anchor: "6.QmOther"})
	stranger, err := sawtooth.NewSigner(strings.Repeat("2", 64))
	require.NoError(t, err)

	resignBatch := func(l *sawtoothpb.BatchList, h *sawtoothpb.BatchHeader, s *sawtooth.Signer) {
		raw, err := proto.Marshal(h)
		require.NoError(t, err)
		l.Batches[0].Header = raw
		l.Batches[0].HeaderSignature = s.Sign(raw)
	}
	mine, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		mutate  func(*sawtoothpb.BatchList)
		wantErr string
	}{
		"payload changed": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].Transactions[0].Payload = []byte("5.QmEvil")
		}, "payload_sha512"},
		"batch header changed": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].Header[len(l.Batches[0].Header)-1] ^= 1
		}, "does not match"},
		"transaction header changed": {func(l *sawtoothpb.BatchList) {
			h := l.Batches[0].Transactions[0].Header
			h[len(h)-1] ^= 1
		}, "transaction 0"},
		"batch signature of another batch": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].HeaderSignature = other.ID
		}, "does not match"},
		"transaction swapped for another signed one": {func(l *sawtoothpb.BatchList) {
			var ol sawtoothpb.BatchList
			require.NoError(t, proto.Unmarshal(other.Bytes, &ol))
			l.Batches[0].Transactions = ol.Batches[0].Transactions
		}, "not the one the batch header lists"},
		"no transactions": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].Transactions = nil
		}, "no transactions"},
		"transaction listed twice": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].Transactions = append(l.Batches[0].Transactions, l.Batches[0].Transactions[0])
			resignBatch(l, &sawtoothpb.BatchHeader{
				SignerPublicKey: mine.PublicKey(),
				TransactionIds:  []string{good.TransactionIDs[0], good.TransactionIDs[0]},
			}, mine)
		}, "repeated"},
		"batch signed by a key that did not batch the transaction": {func(l *sawtoothpb.BatchList) {
			resignBatch(l, &sawtoothpb.BatchHeader{
				SignerPublicKey: stranger.PublicKey(), TransactionIds: good.TransactionIDs,
			}, stranger)
		}, "batcher_public_key"},
		"batch header garbage": {func(l *sawtoothpb.BatchList) {
			l.Batches[0].Header = []byte{0xff}
		}, "does not decode"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := mutate(t, good.Bytes, tc.mutate)
			list, err := sawtooth.ParseBatchList(body)
			require.NoError(t, err)
			_, err = sawtooth.VerifyBatch(list.GetBatches()[0])
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
