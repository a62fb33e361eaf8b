package sidetree_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

var b64 = base64.RawURLEncoding

func splitJWS(t testing.TB, jws string) []string {
	t.Helper()
	parts := strings.Split(jws, ".")
	require.Len(t, parts, 3)
	return parts
}

// otherMultihash is a valid multihash that no vector key hashes to.
var otherMultihash = sidetree.HashOut([]byte("other"))

// jwsWith replaces one part of r's compact JWS.
func jwsWith(t testing.TB, r request, part int, value string) {
	t.Helper()
	parts := splitJWS(t, r["signedData"].(string))
	parts[part] = value
	r["signedData"] = strings.Join(parts, ".")
}

func enc(s string) string { return b64.EncodeToString([]byte(s)) }

type rejection struct {
	name   string
	base   string // DIF operation to start from; "" means body is used as is
	body   string
	mutate func(t testing.TB, r request)
	code   sidetree.Code
}

func runRejections(t *testing.T, cases []rejection) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tc.body)
			if tc.base != "" {
				r := decodeRequest(t, difOperation(t, tc.base))
				tc.mutate(t, r)
				body = r.bytes(t)
			}
			op, err := sidetree.ParseOperation(body, sidetree.DefaultProfile())
			require.Nil(t, op)
			require.Error(t, err)
			var se *sidetree.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.code, se.Code, "message: %s", se.Message)
			require.NotEmpty(t, se.Message)
			require.ErrorIs(t, err, &sidetree.Error{Code: tc.code})
		})
	}
}

func TestParseOperationRejectsRequests(t *testing.T) {
	t.Parallel()
	runRejections(t, []rejection{
		{name: "not JSON", body: `{"type":`, code: sidetree.CodeInvalidJSON},
		{name: "duplicate member", body: `{"type":"create","type":"create"}`, code: sidetree.CodeInvalidJSON},
		{name: "invalid UTF-8", body: "{\"type\":\"\xff\"}", code: sidetree.CodeInvalidJSON},
		{name: "array", body: `[]`, code: sidetree.CodeInvalidRequest},
		{name: "string", body: `"create"`, code: sidetree.CodeInvalidRequest},
		{name: "no type", body: `{}`, code: sidetree.CodeUnknownOperationType},
		{name: "type not string", body: `{"type":1}`, code: sidetree.CodeUnknownOperationType},
		{name: "unknown type", body: `{"type":"delete"}`, code: sidetree.CodeUnknownOperationType},
		{name: "create extra member", base: "create", mutate: func(_ testing.TB, r request) { r["x"] = 1 }, code: sidetree.CodeUnknownProperty},
		{name: "create without suffixData", base: "create", mutate: func(_ testing.TB, r request) { delete(r, "suffixData") }, code: sidetree.CodeMissingProperty},
		{name: "create without delta", base: "create", mutate: func(_ testing.TB, r request) { delete(r, "delta") }, code: sidetree.CodeMissingProperty},
		{name: "create null delta", base: "create", mutate: func(_ testing.TB, r request) { r["delta"] = nil }, code: sidetree.CodeMissingProperty},
		{name: "update extra member", base: "update", mutate: func(_ testing.TB, r request) { r["anchorFrom"] = 1 }, code: sidetree.CodeUnknownProperty},
		{name: "update without delta", base: "update", mutate: func(_ testing.TB, r request) { delete(r, "delta") }, code: sidetree.CodeMissingProperty},
		{name: "update without signedData", base: "update", mutate: func(_ testing.TB, r request) { delete(r, "signedData") }, code: sidetree.CodeMissingProperty},
		{name: "recover without revealValue", base: "recover", mutate: func(_ testing.TB, r request) { delete(r, "revealValue") }, code: sidetree.CodeMissingProperty},
		{name: "deactivate with delta", base: "deactivate", mutate: func(t testing.TB, r request) { r["delta"] = decodeRequest(t, difOperation(t, "update")).delta() }, code: sidetree.CodeUnknownProperty},
	})
}

func TestParseOperationRejectsSuffixData(t *testing.T) {
	t.Parallel()
	sd := func(f func(sd map[string]any)) func(testing.TB, request) {
		return func(_ testing.TB, r request) { f(r["suffixData"].(map[string]any)) }
	}
	runRejections(t, []rejection{
		{name: "not object", base: "create", mutate: func(_ testing.TB, r request) { r["suffixData"] = []any{} }, code: sidetree.CodeInvalidProperty},
		{name: "extra member", base: "create", mutate: sd(func(m map[string]any) { m["anchorFrom"] = "x" }), code: sidetree.CodeUnknownProperty},
		{name: "anchorOrigin number", base: "create", mutate: sd(func(m map[string]any) { m["anchorOrigin"] = 1 }), code: sidetree.CodeInvalidProperty},
		{name: "anchorOrigin empty", base: "create", mutate: sd(func(m map[string]any) { m["anchorOrigin"] = "" }), code: sidetree.CodeInvalidProperty},
		{name: "anchorOrigin too long", base: "create", mutate: sd(func(m map[string]any) {
			m["anchorOrigin"] = "https://" + strings.Repeat("a", sidetree.MaxAnchorOriginLength)
		}), code: sidetree.CodeInvalidProperty},
		{name: "missing deltaHash", base: "create", mutate: sd(func(m map[string]any) { delete(m, "deltaHash") }), code: sidetree.CodeMissingProperty},
		{name: "deltaHash number", base: "create", mutate: sd(func(m map[string]any) { m["deltaHash"] = 5 }), code: sidetree.CodeInvalidMultihash},
		{name: "deltaHash padded", base: "create", mutate: sd(func(m map[string]any) { m["deltaHash"] = difDeltaHash + "==" }), code: sidetree.CodeInvalidMultihash},
		{name: "recoveryCommitment sha3", base: "create", mutate: sd(func(m map[string]any) {
			m["recoveryCommitment"] = b64.EncodeToString(append([]byte{0x16, 0x20}, make([]byte, 32)...))
		}), code: sidetree.CodeInvalidMultihash},
		{name: "type too long", base: "create", mutate: sd(func(m map[string]any) { m["type"] = "abcde" }), code: sidetree.CodeInvalidProperty},
		{name: "type not base64url", base: "create", mutate: sd(func(m map[string]any) { m["type"] = "a+b" }), code: sidetree.CodeInvalidProperty},
		{name: "type empty", base: "create", mutate: sd(func(m map[string]any) { m["type"] = "" }), code: sidetree.CodeInvalidProperty},
	})
}

func TestParseOperationRejectsMultihashes(t *testing.T) {
	t.Parallel()
	set := func(v string) func(testing.TB, request) {
		return func(_ testing.TB, r request) { r["didSuffix"] = v }
	}
	// The reference implementation's own example of two strings that decode to the same bytes:
	// only the canonical one (trailing bits zero) is accepted.
	runRejections(t, []rejection{
		{name: "non-canonical trailing bits", base: "update", mutate: set("EiAJID5-y7rbEs7I3PPiMtwVf28LTkPFD4BWIZPCtb6AMv"), code: sidetree.CodeInvalidMultihash},
		{name: "empty", base: "update", mutate: set(""), code: sidetree.CodeInvalidMultihash},
		{name: "standard base64 alphabet", base: "update", mutate: set(strings.ReplaceAll(difUpdateReveal, "-", "+")), code: sidetree.CodeInvalidMultihash},
		{name: "short digest", base: "update", mutate: set(b64.EncodeToString([]byte{0x12, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})), code: sidetree.CodeInvalidMultihash},
		{name: "trailing byte", base: "update", mutate: set(b64.EncodeToString(append([]byte{0x12, 0x20}, make([]byte, 33)...))), code: sidetree.CodeInvalidMultihash},
		{name: "not multihash", base: "update", mutate: set("abc"), code: sidetree.CodeInvalidMultihash},
		{name: "revealValue object", base: "deactivate", mutate: func(_ testing.TB, r request) { r["revealValue"] = map[string]any{} }, code: sidetree.CodeInvalidMultihash},
	})
	_, err := sidetree.CommitmentFromReveal("EiAJID5-y7rbEs7I3PPiMtwVf28LTkPFD4BWIZPCtb6AMv")
	require.Error(t, err)
	c, err := sidetree.CommitmentFromReveal("EiAJID5-y7rbEs7I3PPiMtwVf28LTkPFD4BWIZPCtb6AMg")
	require.NoError(t, err)
	require.Len(t, c, sidetree.EncodedMultihashLength)
}

func TestParseOperationRejectsDeltas(t *testing.T) {
	t.Parallel()
	delta := func(f func(d map[string]any)) func(testing.TB, request) {
		return func(_ testing.TB, r request) { f(r.delta()) }
	}
	bigPatch := map[string]any{"action": "add-services", "services": []any{
		map[string]any{"id": "s", "type": "t", "serviceEndpoint": "https://example.com/" + strings.Repeat("a", 1000)},
	}}
	runRejections(t, []rejection{
		{name: "too large", base: "update", mutate: delta(func(d map[string]any) { d["patches"] = []any{bigPatch} }), code: sidetree.CodeDeltaTooLarge},
		{name: "array", base: "create", mutate: func(_ testing.TB, r request) { r["delta"] = []any{} }, code: sidetree.CodeInvalidProperty},
		{name: "extra member", base: "create", mutate: delta(func(d map[string]any) { d["x"] = 1 }), code: sidetree.CodeUnknownProperty},
		{name: "no patches", base: "create", mutate: delta(func(d map[string]any) { delete(d, "patches") }), code: sidetree.CodeMissingProperty},
		{name: "patches not array", base: "create", mutate: delta(func(d map[string]any) { d["patches"] = map[string]any{} }), code: sidetree.CodeInvalidPatch},
		{name: "no updateCommitment", base: "recover", mutate: delta(func(d map[string]any) { delete(d, "updateCommitment") }), code: sidetree.CodeMissingProperty},
		{name: "updateCommitment invalid", base: "recover", mutate: delta(func(d map[string]any) { d["updateCommitment"] = "x" }), code: sidetree.CodeInvalidMultihash},
		{name: "create delta hash mismatch", base: "create", mutate: delta(func(d map[string]any) { d["patches"] = []any{} }), code: sidetree.CodeDeltaHashMismatch},
		{name: "update delta hash mismatch", base: "update", mutate: delta(func(d map[string]any) { d["patches"] = []any{} }), code: sidetree.CodeDeltaHashMismatch},
		{name: "recover delta hash mismatch", base: "recover", mutate: delta(func(d map[string]any) { d["updateCommitment"] = otherMultihash }), code: sidetree.CodeDeltaHashMismatch},
	})
}

func TestParseOperationRejectsKeyReuse(t *testing.T) {
	t.Parallel()
	runRejections(t, []rejection{
		{name: "create update commitment = recovery commitment", base: "create", mutate: func(t testing.TB, r request) {
			r.delta()["updateCommitment"] = difRecoveryCommit
			r.rehash(t, nil)
		}, code: sidetree.CodeCommitmentReuse},
		{name: "update commits to the revealed key", base: "update", mutate: func(t testing.TB, r request) {
			r.delta()["updateCommitment"] = difUpdateCommit
			r.rehash(t, difKey(t, "update"))
		}, code: sidetree.CodeCommitmentReuse},
		{name: "recover update commitment = next recovery commitment", base: "recover", mutate: func(t testing.TB, r request) {
			r.delta()["updateCommitment"] = difNextRecovery
			r.rehash(t, difKey(t, "recover"))
		}, code: sidetree.CodeCommitmentReuse},
		{name: "recover commits to the revealed key", base: "recover", mutate: func(t testing.TB, r request) {
			r.resign(t, difKey(t, "recover"), func(p map[string]any) { p["recoveryCommitment"] = difRecoveryCommit })
		}, code: sidetree.CodeCommitmentReuse},
	})
}

func TestParseOperationRejectsJWS(t *testing.T) {
	t.Parallel()
	hdr := func(h string) func(testing.TB, request) {
		return func(t testing.TB, r request) { jwsWith(t, r, 0, enc(h)) }
	}
	runRejections(t, []rejection{
		{name: "not a string", base: "update", mutate: func(_ testing.TB, r request) { r["signedData"] = map[string]any{} }, code: sidetree.CodeInvalidJWS},
		{name: "two parts", base: "update", mutate: func(_ testing.TB, r request) { r["signedData"] = "a.b" }, code: sidetree.CodeInvalidJWS},
		{name: "four parts", base: "update", mutate: func(_ testing.TB, r request) { r["signedData"] = r["signedData"].(string) + ".x" }, code: sidetree.CodeInvalidJWS},
		{name: "empty payload", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 1, "") }, code: sidetree.CodeInvalidJWS},
		{name: "header not base64url", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 0, "eyJ+") }, code: sidetree.CodeInvalidJWS},
		{name: "signature not base64url", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 2, "a=") }, code: sidetree.CodeInvalidJWS},
		{name: "header not JSON", base: "update", mutate: hdr(`{alg}`), code: sidetree.CodeInvalidJWSHeader},
		{name: "header with kid", base: "update", mutate: hdr(`{"alg":"ES256K","kid":"#k"}`), code: sidetree.CodeInvalidJWSHeader},
		{name: "header without alg", base: "update", mutate: hdr(`{"typ":"JWT"}`), code: sidetree.CodeInvalidJWSHeader},
		{name: "header array", base: "update", mutate: hdr(`["alg"]`), code: sidetree.CodeInvalidJWSHeader},
		{name: "alg not string", base: "update", mutate: hdr(`{"alg":1}`), code: sidetree.CodeInvalidJWSHeader},
		{name: "alg none", base: "update", mutate: hdr(`{"alg":"none"}`), code: sidetree.CodeUnsupportedAlgorithm},
		{name: "alg ES256", base: "update", mutate: hdr(`{"alg":"ES256"}`), code: sidetree.CodeUnsupportedAlgorithm},
		{name: "alg EdDSA not enabled", base: "update", mutate: hdr(`{"alg":"EdDSA"}`), code: sidetree.CodeUnsupportedAlgorithm},
		{name: "payload not JSON", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 1, enc("{")) }, code: sidetree.CodeInvalidSignedData},
		{name: "payload array", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 1, enc("[]")) }, code: sidetree.CodeInvalidSignedData},
	})
}

func TestParseOperationRejectsSignedData(t *testing.T) {
	t.Parallel()
	resign := func(op string, f func(p map[string]any)) func(testing.TB, request) {
		return func(t testing.TB, r request) { r.resign(t, difKey(t, op), f) }
	}
	key := func(op, name string, f func(k map[string]any)) func(testing.TB, request) {
		return resign(op, func(p map[string]any) { f(p[name].(map[string]any)) })
	}
	runRejections(t, []rejection{
		{name: "update payload extra member", base: "update", mutate: resign("update", func(p map[string]any) { p["nonce"] = "x" }), code: sidetree.CodeInvalidSignedData},
		{name: "update payload missing deltaHash", base: "update", mutate: resign("update", func(p map[string]any) { delete(p, "deltaHash") }), code: sidetree.CodeInvalidSignedData},
		{name: "update payload deltaHash invalid", base: "update", mutate: resign("update", func(p map[string]any) { p["deltaHash"] = "x" }), code: sidetree.CodeInvalidMultihash},
		{name: "recover payload anchorOrigin not a string", base: "recover", mutate: resign("recover", func(p map[string]any) { p["anchorOrigin"] = []any{"x"} }), code: sidetree.CodeInvalidSignedData},
		{name: "recover payload anchorFrom", base: "recover", mutate: resign("recover", func(p map[string]any) { p["anchorFrom"] = 1 }), code: sidetree.CodeInvalidSignedData},
		{name: "update payload anchorOrigin", base: "update", mutate: resign("update", func(p map[string]any) { p["anchorOrigin"] = "x" }), code: sidetree.CodeInvalidSignedData},
		{name: "recover payload missing recoveryCommitment", base: "recover", mutate: resign("recover", func(p map[string]any) { delete(p, "recoveryCommitment") }), code: sidetree.CodeInvalidSignedData},
		{name: "recover next commitment invalid", base: "recover", mutate: resign("recover", func(p map[string]any) { p["recoveryCommitment"] = 7 }), code: sidetree.CodeInvalidMultihash},
		{name: "deactivate payload with revealValue (core-go shape)", base: "deactivate", mutate: resign("deactivate", func(p map[string]any) { p["revealValue"] = "x" }), code: sidetree.CodeInvalidSignedData},
		{name: "deactivate payload names another DID", base: "deactivate", mutate: resign("deactivate", func(p map[string]any) { p["didSuffix"] = otherMultihash }), code: sidetree.CodeDIDSuffixMismatch},
		{name: "key with private d", base: "update", mutate: key("update", "updateKey", func(k map[string]any) { k["d"] = "x" }), code: sidetree.CodeInvalidKey},
		{name: "key with kid", base: "recover", mutate: key("recover", "recoveryKey", func(k map[string]any) { k["kid"] = "x" }), code: sidetree.CodeInvalidKey},
		{name: "key kty RSA", base: "update", mutate: key("update", "updateKey", func(k map[string]any) { k["kty"] = "RSA" }), code: sidetree.CodeInvalidKey},
		{name: "key crv P-256", base: "update", mutate: key("update", "updateKey", func(k map[string]any) { k["crv"] = "P-256" }), code: sidetree.CodeInvalidKey},
		{name: "key x short", base: "update", mutate: key("update", "updateKey", func(k map[string]any) { k["x"] = k["x"].(string)[1:] }), code: sidetree.CodeInvalidKey},
		{name: "key y number", base: "deactivate", mutate: key("deactivate", "recoveryKey", func(k map[string]any) { k["y"] = 1 }), code: sidetree.CodeInvalidKey},
		{name: "key not an object", base: "update", mutate: resign("update", func(p map[string]any) { p["updateKey"] = "k" }), code: sidetree.CodeInvalidKey},
		{name: "Ed25519 key under the default profile", base: "update", mutate: key("update", "updateKey", func(k map[string]any) {
			k["kty"], k["crv"] = "OKP", "Ed25519"
			delete(k, "y")
		}), code: sidetree.CodeInvalidKey},
		{name: "reveal value of another key", base: "update", mutate: func(_ testing.TB, r request) { r["revealValue"] = otherMultihash }, code: sidetree.CodeRevealValueMismatch},
		{name: "reveal value of the recovery key", base: "update", mutate: func(_ testing.TB, r request) { r["revealValue"] = difRecoverReveal }, code: sidetree.CodeRevealValueMismatch},
	})
}

func TestParseOperationRejectsSignatures(t *testing.T) {
	t.Parallel()
	flip := func(t testing.TB, r request) {
		parts := splitJWS(t, r["signedData"].(string))
		sig, err := b64.DecodeString(parts[2])
		require.NoError(t, err)
		sig[10] ^= 1
		jwsWith(t, r, 2, b64.EncodeToString(sig))
	}
	otherKey := func(op string) func(testing.TB, request) {
		return func(t testing.TB, r request) {
			k, err := wallet.GenerateKey(sidetree.ES256K, nil)
			require.NoError(t, err)
			// The payload still reveals the committed key, but another key signs.
			r.resign(t, k, nil)
		}
	}
	offCurve := func(t testing.TB, r request) {
		r.resign(t, difKey(t, "update"), func(p map[string]any) {
			p["updateKey"].(map[string]any)["y"] = b64.EncodeToString(make([]byte, 32))
		})
		raw, err := json.Marshal(r.payload(t)["updateKey"])
		require.NoError(t, err)
		rv, err := sidetree.RevealValue(raw)
		require.NoError(t, err)
		r["revealValue"] = rv
	}
	runRejections(t, []rejection{
		{name: "update bit flip", base: "update", mutate: flip, code: sidetree.CodeInvalidSignature},
		{name: "recover bit flip", base: "recover", mutate: flip, code: sidetree.CodeInvalidSignature},
		{name: "deactivate bit flip", base: "deactivate", mutate: flip, code: sidetree.CodeInvalidSignature},
		{name: "update signed by another key", base: "update", mutate: otherKey("update"), code: sidetree.CodeInvalidSignature},
		{name: "deactivate signed by another key", base: "deactivate", mutate: otherKey("deactivate"), code: sidetree.CodeInvalidSignature},
		{name: "DER signature", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 2, b64.EncodeToString(make([]byte, 70))) }, code: sidetree.CodeInvalidSignature},
		{name: "zero r and s", base: "update", mutate: func(t testing.TB, r request) { jwsWith(t, r, 2, b64.EncodeToString(make([]byte, 64))) }, code: sidetree.CodeInvalidSignature},
		{name: "key not on the curve", base: "update", mutate: offCurve, code: sidetree.CodeInvalidKey},
	})
}

func TestParseOperationRejectsPatches(t *testing.T) {
	t.Parallel()
	// Each case replaces the create's patches; validation fails before the delta hash check.
	patch := func(p any) func(testing.TB, request) {
		return func(_ testing.TB, r request) { r.delta()["patches"] = []any{p} }
	}
	jwk := map[string]any{"kty": "EC", "crv": "secp256k1", "x": "tXSKB_rubXS7sCjXqupVJEzTcW3MsjmEvq1YpXn96Zg", "y": "dOicXqbjFxoGJ-K0-GJ1kHYJqic_D_OMuUwkQ7Ol6nk"}
	pk := func(f func(k map[string]any)) map[string]any {
		k := map[string]any{"id": "k1", "type": "JsonWebKey2020", "publicKeyJwk": jwk, "purposes": []any{"authentication"}}
		f(k)
		return map[string]any{"action": "add-public-keys", "publicKeys": []any{k}}
	}
	svc := func(f func(s map[string]any)) map[string]any {
		s := map[string]any{"id": "s1", "type": "LinkedDomains", "serviceEndpoint": "https://example.com"}
		f(s)
		return map[string]any{"action": "add-services", "services": []any{s}}
	}
	runRejections(t, []rejection{
		{name: "patch not object", base: "create", mutate: patch("replace"), code: sidetree.CodeInvalidPatch},
		{name: "no action", base: "create", mutate: patch(map[string]any{}), code: sidetree.CodeInvalidPatch},
		{name: "unknown action", base: "create", mutate: patch(map[string]any{"action": "add-keys"}), code: sidetree.CodeUnknownPatchAction},
		{name: "custom action", base: "create", mutate: patch(map[string]any{"action": "-custom"}), code: sidetree.CodeUnknownPatchAction},
		{name: "ietf-json-patch", base: "create", mutate: patch(map[string]any{"action": "ietf-json-patch", "patches": []any{}}), code: sidetree.CodeUnknownPatchAction},
		{name: "add-also-known-as", base: "create", mutate: patch(map[string]any{"action": "add-also-known-as", "uris": []any{}}), code: sidetree.CodeUnknownPatchAction},
		{name: "replace without document", base: "create", mutate: patch(map[string]any{"action": "replace"}), code: sidetree.CodeInvalidPatch},
		{name: "replace document array", base: "create", mutate: patch(map[string]any{"action": "replace", "document": []any{}}), code: sidetree.CodeInvalidPatch},
		{name: "replace document extra member", base: "create", mutate: patch(map[string]any{"action": "replace", "document": map[string]any{"alsoKnownAs": []any{}}}), code: sidetree.CodeUnknownProperty},
		{name: "add-public-keys extra member", base: "create", mutate: patch(map[string]any{"action": "add-public-keys", "publicKeys": []any{}, "x": 1}), code: sidetree.CodeUnknownProperty},
		{name: "add-public-keys without keys", base: "create", mutate: patch(map[string]any{"action": "add-public-keys"}), code: sidetree.CodeMissingProperty},
		{name: "publicKeys not array", base: "create", mutate: patch(map[string]any{"action": "add-public-keys", "publicKeys": map[string]any{}}), code: sidetree.CodeInvalidPublicKey},
		{name: "key entry not object", base: "create", mutate: patch(map[string]any{"action": "add-public-keys", "publicKeys": []any{"k"}}), code: sidetree.CodeInvalidPublicKey},
		{name: "key id too long", base: "create", mutate: patch(pk(func(k map[string]any) { k["id"] = strings.Repeat("a", 51) })), code: sidetree.CodeInvalidPublicKey},
		{name: "key id not base64url", base: "create", mutate: patch(pk(func(k map[string]any) { k["id"] = "#key" })), code: sidetree.CodeInvalidPublicKey},
		{name: "key id missing", base: "create", mutate: patch(pk(func(k map[string]any) { delete(k, "id") })), code: sidetree.CodeInvalidPublicKey},
		{name: "key controller", base: "create", mutate: patch(pk(func(k map[string]any) { k["controller"] = "did:x:y" })), code: sidetree.CodeInvalidPublicKey},
		{name: "key multibase", base: "create", mutate: patch(pk(func(k map[string]any) { k["publicKeyMultibase"] = "z" })), code: sidetree.CodeInvalidPublicKey},
		{name: "key without jwk", base: "create", mutate: patch(pk(func(k map[string]any) { delete(k, "publicKeyJwk") })), code: sidetree.CodeInvalidPublicKey},
		{name: "key jwk array", base: "create", mutate: patch(pk(func(k map[string]any) { k["publicKeyJwk"] = []any{} })), code: sidetree.CodeInvalidPublicKey},
		{name: "key jwk null", base: "create", mutate: patch(pk(func(k map[string]any) { k["publicKeyJwk"] = nil })), code: sidetree.CodeInvalidPublicKey},
		{name: "key jwk private", base: "create", mutate: patch(pk(func(k map[string]any) {
			k["publicKeyJwk"] = map[string]any{"kty": "EC", "crv": "secp256k1", "x": "a", "y": "b", "d": "c"}
		})), code: sidetree.CodeInvalidPublicKey},
		{name: "key jwk symmetric", base: "create", mutate: patch(pk(func(k map[string]any) { k["publicKeyJwk"] = map[string]any{"kty": "oct", "k": "c"} })), code: sidetree.CodeInvalidPublicKey},
		{name: "key type missing", base: "create", mutate: patch(pk(func(k map[string]any) { delete(k, "type") })), code: sidetree.CodeInvalidPublicKey},
		{name: "purposes not array", base: "create", mutate: patch(pk(func(k map[string]any) { k["purposes"] = "authentication" })), code: sidetree.CodeInvalidPublicKey},
		{name: "unknown purpose", base: "create", mutate: patch(pk(func(k map[string]any) { k["purposes"] = []any{"signing"} })), code: sidetree.CodeInvalidPublicKey},
		{name: "duplicate purpose", base: "create", mutate: patch(pk(func(k map[string]any) { k["purposes"] = []any{"keyAgreement", "keyAgreement"} })), code: sidetree.CodeInvalidPublicKey},
		{name: "duplicate key id", base: "create", mutate: patch(map[string]any{"action": "add-public-keys", "publicKeys": []any{
			pk(func(map[string]any) {})["publicKeys"].([]any)[0], pk(func(map[string]any) {})["publicKeys"].([]any)[0],
		}}), code: sidetree.CodeInvalidPublicKey},
		{name: "service extra member", base: "create", mutate: patch(svc(func(s map[string]any) { s["x"] = 1 })), code: sidetree.CodeInvalidService},
		{name: "service missing endpoint", base: "create", mutate: patch(svc(func(s map[string]any) { delete(s, "serviceEndpoint") })), code: sidetree.CodeInvalidService},
		{name: "service type too long", base: "create", mutate: patch(svc(func(s map[string]any) { s["type"] = strings.Repeat("t", 31) })), code: sidetree.CodeInvalidService},
		{name: "service type not string", base: "create", mutate: patch(svc(func(s map[string]any) { s["type"] = []any{"a"} })), code: sidetree.CodeInvalidService},
		{name: "service id too long", base: "create", mutate: patch(svc(func(s map[string]any) { s["id"] = strings.Repeat("s", 51) })), code: sidetree.CodeInvalidService},
		{name: "service endpoint array", base: "create", mutate: patch(svc(func(s map[string]any) { s["serviceEndpoint"] = []any{"https://a"} })), code: sidetree.CodeInvalidService},
		{name: "service endpoint number", base: "create", mutate: patch(svc(func(s map[string]any) { s["serviceEndpoint"] = 1 })), code: sidetree.CodeInvalidService},
		{name: "service endpoint without scheme", base: "create", mutate: patch(svc(func(s map[string]any) { s["serviceEndpoint"] = "example.com/x" })), code: sidetree.CodeInvalidService},
		{name: "service endpoint not a URI", base: "create", mutate: patch(svc(func(s map[string]any) { s["serviceEndpoint"] = "http://[::1" })), code: sidetree.CodeInvalidService},
		{name: "duplicate service id", base: "create", mutate: patch(map[string]any{"action": "add-services", "services": []any{
			map[string]any{"id": "s", "type": "t", "serviceEndpoint": "https://a"}, map[string]any{"id": "s", "type": "t", "serviceEndpoint": "https://b"},
		}}), code: sidetree.CodeInvalidService},
		{name: "remove-services ids not array", base: "create", mutate: patch(map[string]any{"action": "remove-services", "ids": "s"}), code: sidetree.CodeInvalidPatch},
		{name: "remove-public-keys bad id", base: "create", mutate: patch(map[string]any{"action": "remove-public-keys", "ids": []any{"a b"}}), code: sidetree.CodeInvalidPatch},
		{name: "remove-services extra member", base: "create", mutate: patch(map[string]any{"action": "remove-services", "ids": []any{}, "x": 1}), code: sidetree.CodeUnknownProperty},
	})
}

func TestParseOperationAcceptsReferenceImplementationEdges(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	w := wallet.New(wallet.Config{})
	for name, patch := range map[string]wallet.Patch{
		// Extra members of a replace patch are not checked by the reference implementation.
		"replace with extra member": wallet.Patch(`{"action":"replace","document":{},"note":"x"}`),
		"empty purposes":            wallet.Patch(`{"action":"add-public-keys","publicKeys":[{"id":"k","type":"t","publicKeyJwk":{},"purposes":[]}]}`),
		"endpoint object":           wallet.Patch(`{"action":"add-services","services":[{"id":"s","type":"t","serviceEndpoint":{"origins":["https://a"]}}]}`),
		"30-character service type": wallet.Patch(`{"action":"add-services","services":[{"id":"s","type":"` + strings.Repeat("é", 30) + `","serviceEndpoint":"did:example:123"}]}`),
		"remove unknown ids":        wallet.RemoveServices("nothing"),
		"no patches":                nil,
	} {
		var patches []wallet.Patch
		if patch != nil {
			patches = append(patches, patch)
		}
		_, req, err := w.Create(patches...)
		require.NoError(t, err)
		_, err = sidetree.ParseOperation(req, p)
		require.NoError(t, err, name)
	}
}

func TestProfileMaxDeltaSize(t *testing.T) {
	t.Parallel()
	body := difOperation(t, "create")
	p := sidetree.DefaultProfile()
	p.MaxDeltaSize = 100
	_, err := sidetree.ParseOperation(body, p)
	require.Equal(t, sidetree.CodeDeltaTooLarge, sidetree.CodeOf(err))
	p.MaxDeltaSize = 0 // default
	_, err = sidetree.ParseOperation(body, p)
	require.NoError(t, err)
}

func TestProfileValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p  sidetree.Profile
		ok bool
	}{
		{sidetree.DefaultProfile(), true},
		{sidetree.Profile{}, true},
		{sidetree.Profile{Method: "ion:test", Algorithms: []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA}}, true},
		{sidetree.Profile{Method: "ion:"}, false},
		{sidetree.Profile{Method: "Ion"}, false},
		{sidetree.Profile{Algorithms: []sidetree.Algorithm{"ES256"}}, false},
		{sidetree.Profile{MaxDeltaSize: -1}, false},
		{sidetree.Profile{MaxOperationsPerDID: -1}, false},
		{sidetree.Profile{MaxDocumentBytes: -1}, false},
	} {
		if tc.ok {
			require.NoError(t, tc.p.Validate(), "%+v", tc.p)
		} else {
			require.Error(t, tc.p.Validate(), "%+v", tc.p)
		}
	}
}

func FuzzParseOperation(f *testing.F) {
	for _, name := range []string{"create", "update", "recover", "deactivate"} {
		f.Add(difOperation(f, name))
	}
	f.Add([]byte(`{"type":"create","suffixData":{},"delta":{}}`))
	for _, file := range []string{"v1-secp256k1-operations.json", "v1-ed25519-operations.json"} {
		for _, v := range transmuteVectors(f, file)[:2] {
			for _, op := range []json.RawMessage{v.Op0, v.Op1, v.Op2, v.Op3} {
				f.Add([]byte(op))
			}
		}
	}
	p := sidetree.DefaultProfile()
	p.Algorithms = []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA}
	f.Fuzz(func(t *testing.T, body []byte) {
		op, err := sidetree.ParseOperation(body, p)
		if err != nil {
			require.Nil(t, op)
			require.NotEmpty(t, sidetree.CodeOf(err), "every rejection has a code: %v", err)
			return
		}
		// An accepted request's stored form is accepted again, unchanged.
		again, err := sidetree.ParseOperation(op.Request, p)
		require.NoError(t, err)
		require.Equal(t, string(op.Request), string(again.Request))
		require.Equal(t, op.Suffix, again.Suffix)
	})
}

// A rejection names the offending input by a short excerpt, never all of it.
func TestRejectionsEchoAShortPrefix(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 40_000)
	p := sidetree.DefaultProfile()
	for name, parse := range map[string]func() error{
		"type": func() error {
			_, err := sidetree.ParseOperation([]byte(`{"type":"`+long+`"}`), p)
			return err
		},
		"duplicate member": func() error {
			_, err := sidetree.ParseOperation([]byte(`{"`+long+`":1,"`+long+`":1}`), p)
			return err
		},
		"unknown member": func() error {
			r := decodeRequest(t, difOperation(t, "create"))
			r[long] = 1
			_, err := sidetree.ParseOperation(r.bytes(t), p)
			return err
		},
		"patch action": func() error {
			r := decodeRequest(t, difOperation(t, "create"))
			r.delta()["patches"] = []any{map[string]any{"action": long[:900]}}
			_, err := sidetree.ParseOperation(r.bytes(t), p)
			return err
		},
		"DID suffix": func() error {
			_, err := sidetree.ParseDID(p, "did:sidetree:"+long)
			return err
		},
	} {
		err := parse()
		var se *sidetree.Error
		require.ErrorAs(t, err, &se, name)
		require.Less(t, len(se.Message), 200, "%s: %s", name, se.Message)
		require.NotContains(t, se.Message, strings.Repeat("x", 33), name)
	}
}

// TestRememberedSignaturesStillRejectTampering parses a valid update (its signature is then
// remembered as verified) and then copies of it with one bit of the signature, of the signed
// payload, or of the revealed key changed: each is verified afresh and refused.
func TestRememberedSignaturesStillRejectTampering(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	body := difOperation(t, "update")
	for range 2 { // the second parse is answered from memory
		_, err := sidetree.ParseOperation(body, p)
		require.NoError(t, err)
	}
	for part := range 3 { // header, payload, signature
		r := decodeRequest(t, body)
		parts := splitJWS(t, r["signedData"].(string))
		raw, err := b64.DecodeString(parts[part])
		require.NoError(t, err)
		raw[len(raw)/2] ^= 1
		jwsWith(t, r, part, b64.EncodeToString(raw))
		_, err = sidetree.ParseOperation(r.bytes(t), p)
		require.Error(t, err, "JWS part %d changed", part)
	}
	other, err := wallet.GenerateKey(sidetree.ES256K, nil)
	require.NoError(t, err)
	r := decodeRequest(t, body)
	r.resign(t, other, nil)
	_, err = sidetree.ParseOperation(r.bytes(t), p)
	var se *sidetree.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, sidetree.CodeInvalidSignature, se.Code)
	_, err = sidetree.ParseOperation(body, p)
	require.NoError(t, err, "the valid original still parses")
}
