package sidetree_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// The DIF vector DID (method "sidetree").
const (
	difSuffix           = "EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg"
	difDeltaHash        = "EiCfDWRnYlcD9EGA3d_5Z1AHu-iYqMbJ9nfiqdz5S8VDbg"
	difRecoveryCommit   = "EiBfOZdMtU6OBw8Pk879QtZ-2J-9FbbjSZyoaA_bqD4zhA"
	difUpdateCommit     = "EiDKIkwqO69IPG3pOlHkdb86nYt0aNxSHZu2r-bhEznjdA"
	difRecoverReveal    = "EiAJ-97Is59is6FKAProwDo870nmwCeP8n5nRRFwPpUZVQ"
	difUpdateReveal     = "EiBkRSeixqX-PhOij6PIpuGfPld5Nif5MxcrgtGCw-t6LA"
	difNextRecovery     = "EiCsA7SGLNeda5InloqnokUcJFz6vKT4HS5dcKrmnlJhpA"
	difUpdateNextCommit = "EiDOrcmPtfMHuwIWN6YoihdeIPxOKDHy3D6sdMXu_7CN0w"
	difRecoverNextUpd   = "EiD6_csybTfxELBoMgkE9O2BTCmhScG_RW_qaZQkIkJ_aQ"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	return data
}

// difOperation returns one of the DIF operation requests: create, update, recover, deactivate.
func difOperation(t testing.TB, name string) []byte {
	return readFile(t, "dif/operations/"+name+"Operation.json")
}

// difKey loads the private key that signs the DIF operation of the given type.
func difKey(t testing.TB, op string) *wallet.Key {
	t.Helper()
	var raw []byte
	switch op {
	case "update":
		raw = readFile(t, "dif/inputs/jwkEs256k2Private.json")
	case "recover":
		raw = readFile(t, "dif/inputs/jwkEs256k1Private.json")
	case "deactivate":
		var g struct {
			Recover struct {
				RecoveryPrivateKey json.RawMessage `json:"recoveryPrivateKey"`
			} `json:"recover"`
		}
		require.NoError(t, json.Unmarshal(readFile(t, "dif/generated.json"), &g))
		raw = g.Recover.RecoveryPrivateKey
	default:
		t.Fatalf("no DIF key signs %s", op)
	}
	k, err := wallet.KeyFromJWK(raw)
	require.NoError(t, err)
	return k
}

func mustParse(t testing.TB, body []byte) *sidetree.Operation {
	t.Helper()
	op, err := sidetree.ParseOperation(body, sidetree.DefaultProfile())
	require.NoError(t, err)
	return op
}

// requireSameJSON asserts equal JSON values and the same member order throughout.
func requireSameJSON(t testing.TB, want, got []byte) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g), "%s", got)
	require.Equal(t, w, g)
	wv, err := jsontree.Parse(want)
	require.NoError(t, err)
	gv, err := jsontree.Parse(got)
	require.NoError(t, err)
	require.Equal(t, string(wv.AppendCompact(nil)), string(gv.AppendCompact(nil)), "member order")
}

func TestDIFOperationVectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		typ           sidetree.OperationType
		reveal        string
		keyCommitment string
		deltaHash     string
		nextRecovery  string
		nextUpdate    string
	}{
		{"create", sidetree.OperationCreate, "", "", difDeltaHash, difRecoveryCommit, difUpdateCommit},
		{"update", sidetree.OperationUpdate, difUpdateReveal, difUpdateCommit, "EiCpjN47f0Mq6xDNUKn4hSegMEqoDS_rpQ29Wy1V73VDbw", "", difUpdateNextCommit},
		{"recover", sidetree.OperationRecover, difRecoverReveal, difRecoveryCommit, "EiCSzmYJM2XjZXM4kT4ljJpEFN5fVC5ASVgxRzEm0Av9jw", difNextRecovery, difRecoverNextUpd},
		// The deactivate signature has a high S: verification must accept it.
		{"deactivate", sidetree.OperationDeactivate, "EiB-dib5oumdaDGH47TB17Qg1nHza036bTIGibQOKFUY2A", difNextRecovery, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := mustParse(t, difOperation(t, tc.name))
			require.Equal(t, tc.typ, op.Type)
			require.Equal(t, difSuffix, op.Suffix)
			require.Equal(t, tc.reveal, op.RevealValue)
			require.Equal(t, tc.keyCommitment, op.KeyCommitment())
			require.Equal(t, tc.deltaHash, op.DeltaHash)
			require.Equal(t, tc.nextRecovery, op.NextRecoveryCommitment)
			if tc.nextUpdate != "" {
				require.Equal(t, tc.nextUpdate, op.Delta.UpdateCommitment)
				require.Equal(t, tc.deltaHash, op.Delta.Hash())
			} else {
				require.Nil(t, op.Delta)
			}
			if tc.reveal != "" {
				c, err := sidetree.CommitmentFromReveal(tc.reveal)
				require.NoError(t, err)
				require.Equal(t, tc.keyCommitment, c)
			}
			// The stored form is a fixed point and keeps the request's content.
			again := mustParse(t, op.Request)
			require.Equal(t, string(op.Request), string(again.Request))
			var orig, stored map[string]any
			require.NoError(t, json.Unmarshal(difOperation(t, tc.name), &orig))
			require.NoError(t, json.Unmarshal(op.Request, &stored))
			require.Equal(t, orig, stored)
		})
	}
}

// TestDIFResignedVectors signs the vector payloads again with the private keys: RFC 6979 gives
// other (low-S) signatures than the vectors', and both verify.
func TestDIFResignedVectors(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"update", "recover", "deactivate"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := decodeRequest(t, difOperation(t, name))
			orig := r["signedData"].(string)
			r.resign(t, difKey(t, name), nil)
			require.NotEqual(t, orig, r["signedData"])
			op := mustParse(t, r.bytes(t))
			require.Equal(t, difSuffix, op.Suffix)
		})
	}
}

// TestDIFKeyCommitments derives every reveal value and commitment of the vectors from the keys.
func TestDIFKeyCommitments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, reveal, commitment string
	}{
		{"dif/inputs/jwkEs256k1Public.json", difRecoverReveal, difRecoveryCommit},
		{"dif/inputs/jwkEs256k2Public.json", difUpdateReveal, difUpdateCommit},
	} {
		jwk := readFile(t, tc.file)
		r, err := sidetree.RevealValue(jwk)
		require.NoError(t, err)
		require.Equal(t, tc.reveal, r)
		c, err := sidetree.Commitment(jwk)
		require.NoError(t, err)
		require.Equal(t, tc.commitment, c)
	}
	require.Equal(t, difNextRecovery, difKey(t, "deactivate").Commitment())
	require.Equal(t, difUpdateCommit, difKey(t, "update").Commitment())
	require.Equal(t, difRecoveryCommit, difKey(t, "recover").Commitment())
}

// request is an operation request as a generic map, for building variants of vectors.
type request map[string]any

func decodeRequest(t testing.TB, body []byte) request {
	t.Helper()
	var r request
	require.NoError(t, json.Unmarshal(body, &r))
	return r
}

func (r request) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return b
}

func (r request) delta() map[string]any { return r["delta"].(map[string]any) }

// payload decodes the JWS payload of signedData.
func (r request) payload(t testing.TB) map[string]any {
	t.Helper()
	parts := splitJWS(t, r["signedData"].(string))
	raw, err := b64.DecodeString(parts[1])
	require.NoError(t, err)
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

// resign changes the payload with mutate (if not nil) and signs it with key.
func (r request) resign(t testing.TB, key *wallet.Key, mutate func(p map[string]any)) {
	t.Helper()
	p := r.payload(t)
	if mutate != nil {
		mutate(p)
	}
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	r["signedData"] = key.Sign(raw)
}

// rehash sets the delta hash (in suffixData or the payload, re-signing with key) to the hash
// of the current delta.
func (r request) rehash(t testing.TB, key *wallet.Key) {
	t.Helper()
	raw, err := json.Marshal(r["delta"])
	require.NoError(t, err)
	canon, err := sidetree.Canonicalize(raw)
	require.NoError(t, err)
	h := sidetree.HashOut(canon)
	if r["type"] == "create" {
		r["suffixData"].(map[string]any)["deltaHash"] = h
		return
	}
	r.resign(t, key, func(p map[string]any) { p["deltaHash"] = h })
}
