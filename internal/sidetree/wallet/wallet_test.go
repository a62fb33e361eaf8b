package wallet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

var bothAlgorithms = sidetree.Profile{Algorithms: []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA}}

// seeded returns a deterministic randomness source for reproducible keys.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

func TestKeyFromJWKMatchesDIFInputs(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"1", "2"} {
		priv, err := os.ReadFile("../testdata/dif/inputs/jwkEs256k" + n + "Private.json")
		require.NoError(t, err)
		pub, err := os.ReadFile("../testdata/dif/inputs/jwkEs256k" + n + "Public.json")
		require.NoError(t, err)
		k, err := KeyFromJWK(priv)
		require.NoError(t, err)
		require.JSONEq(t, string(pub), string(k.PublicJWK()))
		want, err := sidetree.Commitment(pub)
		require.NoError(t, err)
		require.Equal(t, want, k.Commitment())
		require.Equal(t, sidetree.ES256K, k.Algorithm())
	}
}

func TestKeyFromJWKRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{`,
		`{"kty":"EC","crv":"secp256k1","d":"short"}`,
		`{"kty":"EC","crv":"P-256","d":"K5FhbiC-NoBLi0CEjpP6MS6dc22M36KIJrPMoc7_fpc"}`,
		`{"kty":"EC","crv":"secp256k1","d":"K5FhbiC-NoBLi0CEjpP6MS6dc22M36KIJrPMoc7_fpc","x":"wrong"}`,
	} {
		_, err := KeyFromJWK([]byte(in))
		require.Error(t, err, in)
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		alg     sidetree.Algorithm
		members []string
	}{
		{sidetree.ES256K, []string{"kty", "crv", "x", "y"}},
		{sidetree.EdDSA, []string{"kty", "crv", "x"}},
	} {
		k, err := GenerateKey(tc.alg, seeded(1))
		require.NoError(t, err)
		again, err := GenerateKey(tc.alg, seeded(1))
		require.NoError(t, err)
		require.Equal(t, k.PublicJWK(), again.PublicJWK(), "seeded generation is reproducible")
		var m map[string]string
		require.NoError(t, json.Unmarshal(k.PublicJWK(), &m))
		require.Len(t, m, len(tc.members))
		for _, name := range tc.members {
			require.NotEmpty(t, m[name], name)
		}
		require.Len(t, m["x"], 43)
		reveal, err := sidetree.RevealValue(k.PublicJWK())
		require.NoError(t, err)
		require.Equal(t, reveal, k.RevealValue())
		c, err := sidetree.CommitmentFromReveal(reveal)
		require.NoError(t, err)
		require.Equal(t, c, k.Commitment())
	}
	_, err := GenerateKey("ES256", nil)
	require.Error(t, err)
}

// TestSignatureIsDeterministicAndLowS: RFC 6979 nonces (same input, same signature) and S in
// the lower half of the group order.
func TestSignatureIsDeterministicAndLowS(t *testing.T) {
	t.Parallel()
	k, err := GenerateKey(sidetree.ES256K, nil)
	require.NoError(t, err)
	for i := range 200 {
		payload := []byte(`{"n":` + strings.Repeat("1", i+1) + `}`)
		jws := k.Sign(payload)
		require.Equal(t, jws, k.Sign(payload))
		sig, err := base64.RawURLEncoding.DecodeString(jws[strings.LastIndexByte(jws, '.')+1:])
		require.NoError(t, err)
		require.Len(t, sig, 64)
		var s secp256k1.ModNScalar
		require.False(t, s.SetByteSlice(sig[32:]))
		require.False(t, s.IsOverHalfOrder(), "high S in signature %d", i)
	}
}

// TestLifecycle builds create → update → recover → update → deactivate for both algorithms and
// checks each request at intake (ParseOperation, Check) and after anchoring (Resolve).
func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, alg := range []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			w := New(Config{Algorithm: alg, Rand: seeded(2)})
			docKey, err := w.NewKey()
			require.NoError(t, err)
			id, create, err := w.Create(Replace(Document{
				PublicKeys: []PublicKey{DocumentKey("key-1", docKey, "authentication", "assertionMethod")},
				Services:   []Service{{ID: "hub", Type: "IdentityHub", Endpoint: map[string]any{"instances": []string{"https://hub.example"}}}},
			}))
			require.NoError(t, err)
			require.Equal(t, "did:sidetree:"+id.Suffix, id.DID())

			var anchored [][]byte
			var st *sidetree.State
			step := func(req []byte) *sidetree.Operation {
				op, err := sidetree.ParseOperation(req, bothAlgorithms)
				require.NoError(t, err)
				require.Equal(t, id.Suffix, op.Suffix)
				require.NoError(t, st.Check(op))
				anchored = append(anchored, op.Request)
				ops := make([]sidetree.AnchoredOperation, len(anchored))
				for i, b := range anchored {
					ops[i] = sidetree.AnchoredOperation{Sequence: uint64(i + 1), Request: b}
				}
				st = sidetree.Resolve(bothAlgorithms, id.Suffix, ops)
				require.Equal(t, uint64(len(anchored)), st.LastSequence, "applied")
				return op
			}
			step(create)
			require.Len(t, st.Document.PublicKeys, 1)
			require.Equal(t, id.UpdateKey.Commitment(), st.UpdateCommitment)

			req, err := w.Update(id, AddServices(Service{ID: "web", Type: "LinkedDomains", Endpoint: "https://example.com"}), RemovePublicKeys("key-1"))
			require.NoError(t, err)
			step(req)
			require.Len(t, st.Document.Services, 2)
			require.Empty(t, st.Document.PublicKeys)
			require.Equal(t, id.UpdateKey.Commitment(), st.UpdateCommitment)

			req, err = w.Recover(id, Replace(Document{}))
			require.NoError(t, err)
			step(req)
			require.Nil(t, st.Document.Services)
			require.Equal(t, id.RecoveryKey.Commitment(), st.RecoveryCommitment)

			req, err = w.Update(id, AddPublicKeys(DocumentKey("key-2", docKey, "keyAgreement")), RemoveServices("hub"))
			require.NoError(t, err)
			step(req)
			require.Len(t, st.Document.PublicKeys, 1)

			req, err = w.Deactivate(id)
			require.NoError(t, err)
			step(req)
			require.True(t, st.Deactivated)
		})
	}
}

func TestPatchJSON(t *testing.T) {
	t.Parallel()
	require.JSONEq(t, `{"action":"remove-services","ids":[]}`, string(RemoveServices()))
	require.JSONEq(t, `{"action":"add-public-keys","publicKeys":[]}`, string(AddPublicKeys()))
	require.JSONEq(t, `{"action":"replace","document":{}}`, string(Replace(Document{})))
	require.True(t, bytes.HasPrefix(AddServices(Service{ID: "s", Type: "t", Endpoint: "https://a"}), []byte(`{"action":"add-services"`)))
}

func BenchmarkCreate(b *testing.B) {
	w := New(Config{})
	k, err := w.NewKey()
	require.NoError(b, err)
	patch := Replace(Document{PublicKeys: []PublicKey{DocumentKey("key-1", k, "authentication")}})
	for b.Loop() {
		if _, _, err := w.Create(patch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	w := New(Config{})
	id, _, err := w.Create()
	require.NoError(b, err)
	patch := AddServices(Service{ID: "s", Type: "t", Endpoint: "https://example.com"})
	for b.Loop() {
		if _, err := w.Update(id, patch); err != nil {
			b.Fatal(err)
		}
	}
}
