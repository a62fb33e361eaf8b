package sawtoothcheck

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hyperledger/sawtooth-sdk-go/protobuf/batch_pb2"
	"github.com/hyperledger/sawtooth-sdk-go/protobuf/transaction_pb2"
	"github.com/hyperledger/sawtooth-sdk-go/signing"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// recorder stands in for the Sawtooth REST API's POST /batches: it keeps every body anchord's
// client posts and answers 202, as a validator that took the batches does.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/batches" || req.Header.Get("Content-Type") != "application/octet-stream" {
		http.Error(w, "not POST /batches with application/octet-stream", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = fmt.Fprintf(w, `{"link":"http://%s/batch_statuses?id=x"}`, req.Host)
}

// submitted builds the BatchLists of a few anchors with anchord's builder and a fresh key, as
// the ledger anchor backend does, posts each with anchord's Sawtooth client, and returns the
// bodies the client sent, with the anchors they carry and the signing key (hex).
func submitted(t *testing.T) ([][]byte, []string, string) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	client, err := sawtooth.New(sawtooth.Config{URL: srv.URL})
	require.NoError(t, err)
	key, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	signer, err := sawtooth.NewSigner(key)
	require.NoError(t, err)
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	require.NoError(t, err)

	var anchors []string
	for i, n := range []int{1, 42, 10000} {
		file := fmt.Appendf(nil, "core index file %d", i)
		anchors = append(anchors, fmt.Sprintf("%d.%s", n, cas.ComputeCID(file, cas.CIDv0)), fmt.Sprintf("%d.%s", n, cas.ComputeCID(file, cas.CIDv1)))
	}
	for _, a := range anchors {
		b, err := builder.Build(sawtooth.BuildParams{Anchor: a})
		require.NoError(t, err)
		res := client.Submit(context.Background(), b.Bytes, "")
		require.Equal(t, ledger.Accepted, res.Class, "submit %s: %+v", a, res)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.bodies, len(anchors))
	return rec.bodies, anchors, key
}

// golden returns the BatchList anchord's own golden test pins (a fixed key, anchor and nonce).
func golden(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "ledger", "sawtooth", "testdata", "golden_batchlist.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if hexBytes, ok := strings.CutPrefix(line, "bytes "); ok {
			b, err := hex.DecodeString(hexBytes)
			require.NoError(t, err)
			return b
		}
	}
	require.FailNow(t, "no bytes line in the golden file")
	return nil
}

// TestSDKReadsAndVerifiesWhatAnchordSubmits decodes every BatchList anchord's client posted,
// and its golden one, with the SDK's protobuf types (no field the SDK does not know), and checks
// each batch and transaction the way a validator does before scheduling it, with the SDK's
// secp256k1 signing package: both header signatures verify under the signer keys the headers
// name, the signature is the id (the batch header lists its transactions' ids in order, and
// the transaction's batcher is the batch's signer), the payload matches its SHA-512, and the
// address is in the family's namespace.
func TestSDKReadsAndVerifiesWhatAnchordSubmits(t *testing.T) {
	t.Parallel()
	bodies, anchors, _ := submitted(t)
	bodies = append(bodies, golden(t))
	anchors = append(anchors, "42.QmXyzGoldenAnchorReference")
	ctx := signing.NewSecp256k1Context()
	require.Equal(t, "secp256k1", ctx.GetAlgorithmName())

	for i, body := range bodies {
		var list batch_pb2.BatchList
		require.NoError(t, proto.Unmarshal(body, &list), "BatchList %d", i)
		noUnknownFields(t, list.ProtoReflect())
		require.Len(t, list.GetBatches(), 1, "one batch per BatchList")
		batch := list.GetBatches()[0]

		var header batch_pb2.BatchHeader
		require.NoError(t, proto.Unmarshal(batch.GetHeader(), &header))
		noUnknownFields(t, header.ProtoReflect())
		batcher := publicKey(t, header.GetSignerPublicKey())
		require.True(t, verify(t, ctx, batch.GetHeaderSignature(), batch.GetHeader(), batcher), "batch %d: header signature", i)

		require.Len(t, batch.GetTransactions(), len(header.GetTransactionIds()))
		require.Len(t, batch.GetTransactions(), 1, "one transaction per batch")
		for j, txn := range batch.GetTransactions() {
			require.Equal(t, header.GetTransactionIds()[j], txn.GetHeaderSignature(), "the batch lists its transactions' ids, in order")
			var th transaction_pb2.TransactionHeader
			require.NoError(t, proto.Unmarshal(txn.GetHeader(), &th))
			noUnknownFields(t, th.ProtoReflect())
			require.True(t, verify(t, ctx, txn.GetHeaderSignature(), txn.GetHeader(), publicKey(t, th.GetSignerPublicKey())), "batch %d: transaction header signature", i)
			require.Equal(t, header.GetSignerPublicKey(), th.GetBatcherPublicKey(), "the transaction's batcher signed the batch")

			sum := sha512.Sum512(txn.GetPayload())
			require.Equal(t, hex.EncodeToString(sum[:]), th.GetPayloadSha512())
			require.Equal(t, anchors[i], string(txn.GetPayload()), "the payload is the anchor string")
			require.Equal(t, "anchord", th.GetFamilyName())
			require.Equal(t, "1.0", th.GetFamilyVersion())
			require.NotEmpty(t, th.GetNonce())
			require.Empty(t, th.GetDependencies())
			family := sha512.Sum512([]byte(th.GetFamilyName()))
			for _, addr := range append(th.GetInputs(), th.GetOutputs()...) {
				require.Len(t, addr, 70)
				require.True(t, strings.HasPrefix(addr, hex.EncodeToString(family[:3])), "address %s is in the family's namespace", addr)
				_, err := hex.DecodeString(addr)
				require.NoError(t, err)
			}
		}
	}
}

// TestSDKSignsAsAnchordDoes: the SDK's signer, given anchord's key, signs each header anchord
// signed to the same bytes (both sign deterministically, RFC 6979): the same key, the same
// digest (SHA-256 of the header bytes), the same encoding.
func TestSDKSignsAsAnchordDoes(t *testing.T) {
	t.Parallel()
	bodies, _, key := submitted(t)
	raw, err := hex.DecodeString(key)
	require.NoError(t, err)
	ctx := signing.NewSecp256k1Context()
	signer := signing.NewCryptoFactory(ctx).NewSigner(signing.NewSecp256k1PrivateKey(raw))
	for _, body := range bodies {
		var list batch_pb2.BatchList
		require.NoError(t, proto.Unmarshal(body, &list))
		b := list.GetBatches()[0]
		require.Equal(t, b.GetHeaderSignature(), hex.EncodeToString(signer.Sign(b.GetHeader())), "batch header")
		txn := b.GetTransactions()[0]
		require.Equal(t, txn.GetHeaderSignature(), hex.EncodeToString(signer.Sign(txn.GetHeader())), "transaction header")
		var header batch_pb2.BatchHeader
		require.NoError(t, proto.Unmarshal(b.GetHeader(), &header))
		require.Equal(t, signer.GetPublicKey().AsHex(), header.GetSignerPublicKey())
	}
}

// TestSDKRefusesATamperedBatch: the same checks find a header changed after signing, a
// signature of another header, and a key that did not sign, so the test above is not vacuous.
func TestSDKRefusesATamperedBatch(t *testing.T) {
	t.Parallel()
	bodies, _, _ := submitted(t)
	ctx := signing.NewSecp256k1Context()
	var first, second batch_pb2.BatchList
	require.NoError(t, proto.Unmarshal(bodies[0], &first))
	require.NoError(t, proto.Unmarshal(bodies[1], &second))
	b := first.GetBatches()[0]
	var header batch_pb2.BatchHeader
	require.NoError(t, proto.Unmarshal(b.GetHeader(), &header))
	key := publicKey(t, header.GetSignerPublicKey())
	require.True(t, verify(t, ctx, b.GetHeaderSignature(), b.GetHeader(), key))

	changed := bytes.Clone(b.GetHeader())
	changed[len(changed)-1] ^= 1
	require.False(t, verify(t, ctx, b.GetHeaderSignature(), changed, key), "a changed header")
	require.False(t, verify(t, ctx, second.GetBatches()[0].GetHeaderSignature(), b.GetHeader(), key), "another batch's signature")
	other, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	otherSigner, err := sawtooth.NewSigner(other)
	require.NoError(t, err)
	require.False(t, verify(t, ctx, b.GetHeaderSignature(), b.GetHeader(), publicKey(t, otherSigner.PublicKey())), "another key")
}

// publicKey reads a header's signer key: a compressed secp256k1 point in lower-case hex.
func publicKey(t *testing.T, hexKey string) signing.PublicKey {
	t.Helper()
	require.Equal(t, strings.ToLower(hexKey), hexKey)
	raw, err := hex.DecodeString(hexKey)
	require.NoError(t, err)
	require.Len(t, raw, 33, "a compressed public key")
	require.Contains(t, []byte{2, 3}, raw[0])
	return signing.NewSecp256k1PublicKey(raw)
}

// order is the order of secp256k1's group.
var order, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

// verify checks a header signature with the SDK: 64 bytes of compact r‖s in lower-case hex, s
// in the lower half of the group order (libsecp256k1, which the validator verifies with,
// refuses the upper half; the SDK's btcec would accept it), and valid over the header bytes.
func verify(t *testing.T, ctx signing.Context, sigHex string, header []byte, key signing.PublicKey) bool {
	t.Helper()
	require.Equal(t, strings.ToLower(sigHex), sigHex)
	sig, err := hex.DecodeString(sigHex)
	require.NoError(t, err)
	require.Len(t, sig, 64, "compact r‖s")
	s := new(big.Int).SetBytes(sig[32:])
	require.LessOrEqual(t, s.Cmp(new(big.Int).Rsh(order, 1)), 0, "low-S signature")
	return ctx.Verify(sig, header, key)
}

// noUnknownFields fails when a message, or one it holds, has fields the SDK's schema does not
// know: bytes a validator would carry along without reading.
func noUnknownFields(t *testing.T, m protoreflect.Message) {
	t.Helper()
	require.Empty(t, m.GetUnknown(), "%s has fields the SDK does not know", m.Descriptor().FullName())
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				noUnknownFields(t, v.List().Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			noUnknownFields(t, v.Message())
		}
		return true
	})
}
