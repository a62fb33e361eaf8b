package sidetree_test

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

type transmuteDID struct {
	Suffix string          `json:"didUniqueSuffix"`
	Op0    json.RawMessage `json:"op0"`
	Op1    json.RawMessage `json:"op1"`
	Op2    json.RawMessage `json:"op2"`
	Op3    json.RawMessage `json:"op3"`
}

func transmuteVectors(t testing.TB, file string) []transmuteDID {
	t.Helper()
	var v struct {
		Operations []transmuteDID `json:"operations"`
	}
	require.NoError(t, json.Unmarshal(readFile(t, "transmute/"+file), &v))
	require.Len(t, v.Operations, 5)
	return v.Operations
}

// TestTransmuteSecp256k1Vectors runs the 5 DIDs of v1-secp256k1-operations.json through intake
// (ParseOperation, then Check against the state so far) and resolution, step by step.
func TestTransmuteSecp256k1Vectors(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	for _, v := range transmuteVectors(t, "v1-secp256k1-operations.json") {
		t.Run(v.Suffix, func(t *testing.T) {
			t.Parallel()
			var anchored [][]byte
			var st *sidetree.State
			for i, raw := range []json.RawMessage{v.Op0, v.Op1, v.Op2, v.Op3} {
				op := mustParse(t, raw)
				require.Equal(t, v.Suffix, op.Suffix, "op%d", i)
				require.NoError(t, st.Check(op), "op%d", i)
				anchored = append(anchored, op.Request)
				st = sidetree.Resolve(p, v.Suffix, history(anchored...))
				require.NotNil(t, st)
				require.Equal(t, uint64(i+1), st.LastSequence, "op%d applied", i)
				switch op.Type {
				case sidetree.OperationCreate:
					require.Equal(t, []string{"example-service"}, serviceIDs(st))
				case sidetree.OperationUpdate:
					// add-services, remove-services, add-public-keys, remove-public-keys.
					require.Equal(t, []string{"example-service-2"}, serviceIDs(st))
					require.Len(t, st.Document.PublicKeys, 1)
					require.Equal(t, op.Delta.UpdateCommitment, st.UpdateCommitment)
				case sidetree.OperationRecover:
					require.Equal(t, []string{"example-service-3"}, serviceIDs(st))
					require.Equal(t, op.NextRecoveryCommitment, st.RecoveryCommitment)
				case sidetree.OperationDeactivate:
					require.True(t, st.Deactivated)
				}
			}
		})
	}
}

// TestTransmuteEd25519Vectors documents the EdDSA profile's treatment of
// v1-ed25519-operations.json, whose JWS headers say ES256K over Ed25519 keys and EdDSA
// signatures: the header is signed, so it cannot be corrected, and a verifier that trusted the
// key type over the header would accept an algorithm the signer did not state. Both profiles
// reject the signed operations; the creates (no signature) are valid; and the data itself is
// otherwise consistent, which the test checks by hand.
func TestTransmuteEd25519Vectors(t *testing.T) {
	t.Parallel()
	def := sidetree.DefaultProfile()
	ed := sidetree.Profile{Algorithms: []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA}}
	for _, v := range transmuteVectors(t, "v1-ed25519-operations.json") {
		t.Run(v.Suffix, func(t *testing.T) {
			t.Parallel()
			create, err := sidetree.ParseOperation(v.Op0, ed)
			require.NoError(t, err)
			require.Equal(t, v.Suffix, create.Suffix)
			commitment := map[bool]string{false: create.Delta.UpdateCommitment, true: create.NextRecoveryCommitment}
			for i, raw := range []json.RawMessage{v.Op1, v.Op2, v.Op3} {
				_, err := sidetree.ParseOperation(raw, def)
				require.Equal(t, sidetree.CodeInvalidKey, sidetree.CodeOf(err), "op%d default profile: %v", i+1, err)
				_, err = sidetree.ParseOperation(raw, ed)
				require.Equal(t, sidetree.CodeKeyAlgorithmMismatch, sidetree.CodeOf(err), "op%d EdDSA profile: %v", i+1, err)

				r := decodeRequest(t, raw)
				parts := splitJWS(t, r["signedData"].(string))
				header, err := b64.DecodeString(parts[0])
				require.NoError(t, err)
				require.JSONEq(t, `{"alg":"ES256K"}`, string(header))
				payload := r.payload(t)
				recovery := r["type"] != "update"
				keyName := map[bool]string{false: "updateKey", true: "recoveryKey"}[recovery]
				jwk, err := json.Marshal(payload[keyName])
				require.NoError(t, err)
				// Reveal value and commitment hash the 3-member OKP JWK.
				reveal, err := sidetree.RevealValue(jwk)
				require.NoError(t, err)
				require.Equal(t, r["revealValue"], reveal)
				c, err := sidetree.Commitment(jwk)
				require.NoError(t, err)
				require.Equal(t, commitment[recovery], c, "op%d opens the expected commitment", i+1)
				// The signature is Ed25519 over the signing input.
				x, err := b64.DecodeString(payload[keyName].(map[string]any)["x"].(string))
				require.NoError(t, err)
				sig, err := b64.DecodeString(parts[2])
				require.NoError(t, err)
				require.True(t, ed25519.Verify(x, []byte(parts[0]+"."+parts[1]), sig), "op%d", i+1)
				if r["type"] == "update" {
					commitment[false] = r.delta()["updateCommitment"].(string)
				}
				if r["type"] == "recover" {
					commitment[true] = payload["recoveryCommitment"].(string)
					commitment[false] = r.delta()["updateCommitment"].(string)
				}
			}
		})
	}
}
