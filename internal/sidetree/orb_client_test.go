package sidetree_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	dcrecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/require"
)

// orbClient builds operation requests the way Orb's client library (sidetree-go's client
// package with its ecsigner and edsigner, as orb-cli uses them) builds them: JWKs are the struct
// {kty, crv, x, y, nonce?} (y "" for Ed25519), reveal values and commitments hash JCS of that
// struct, signed data is JCS of the signed model under a header {alg, kid} where orb-cli puts a
// fresh UUID in kid and signs every ECDSA key, P-384 included, under "ES256"; signatures are
// r‖s padded to the curve size (SHA-384 for P-384). anchorOrigin rides in suffixData.
type orbClient struct {
	t      testing.TB
	curve  string
	origin string
}

type orbKey struct {
	curve string
	ed    ed25519.PrivateKey
	ec    *ecdsa.PrivateKey
	k1    *secp256k1.PrivateKey
}

// orbJWK mirrors sidetree-go's jws.JWK.
type orbJWK struct {
	Kty   string `json:"kty"`
	Crv   string `json:"crv"`
	X     string `json:"x"`
	Y     string `json:"y"`
	Nonce string `json:"nonce,omitempty"`
}

var b64u = base64.RawURLEncoding

func (c *orbClient) newKey() *orbKey {
	k := &orbKey{curve: c.curve}
	var err error
	switch c.curve {
	case "Ed25519":
		_, k.ed, err = ed25519.GenerateKey(rand.Reader)
	case "P-256":
		k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "P-384":
		k.ec, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "secp256k1":
		k.k1, err = secp256k1.GeneratePrivateKey()
	}
	require.NoError(c.t, err)
	return k
}

func (k *orbKey) jwk() orbJWK {
	switch {
	case k.ed != nil:
		return orbJWK{Kty: "OKP", Crv: "Ed25519", X: b64u.EncodeToString(k.ed.Public().(ed25519.PublicKey))}
	case k.ec != nil:
		size := (k.ec.Curve.Params().BitSize + 7) / 8
		return orbJWK{Kty: "EC", Crv: k.curve, X: b64u.EncodeToString(pad(k.ec.X.Bytes(), size)), Y: b64u.EncodeToString(pad(k.ec.Y.Bytes(), size))}
	default:
		raw := k.k1.PubKey().SerializeUncompressed()
		return orbJWK{Kty: "EC", Crv: "secp256k1", X: b64u.EncodeToString(raw[1:33]), Y: b64u.EncodeToString(raw[33:])}
	}
}

func pad(b []byte, n int) []byte { return append(make([]byte, n-len(b)), b...) }

func (k *orbKey) alg() string {
	switch k.curve {
	case "Ed25519":
		return "EdDSA"
	case "secp256k1":
		return "ES256K"
	}
	return "ES256" // orb-cli's ecsigner, P-384 too
}

func (k *orbKey) sign(input []byte) []byte {
	switch {
	case k.ed != nil:
		return ed25519.Sign(k.ed, input)
	case k.ec != nil:
		var digest []byte
		if k.curve == "P-384" {
			d := sha512.Sum384(input)
			digest = d[:]
		} else {
			d := sha256.Sum256(input)
			digest = d[:]
		}
		r, s, err := ecdsa.Sign(rand.Reader, k.ec, digest)
		if err != nil {
			panic(err)
		}
		size := (k.ec.Curve.Params().BitSize + 7) / 8
		return append(pad(r.Bytes(), size), pad(s.Bytes(), size)...)
	default:
		d := sha256.Sum256(input)
		sig := dcrecdsa.Sign(k.k1, d[:])
		r, s := sig.R(), sig.S()
		rb, sb := r.Bytes(), s.Bytes()
		return append(rb[:], sb[:]...)
	}
}

func (c *orbClient) canonical(v any) []byte {
	raw, err := json.Marshal(v)
	require.NoError(c.t, err)
	out, err := jcs.Transform(raw)
	require.NoError(c.t, err)
	return out
}

func (c *orbClient) multihash(data []byte) string {
	sum := sha256.Sum256(data)
	return b64u.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...))
}

// commitment is sidetree-go's GetCommitment: the hash of the hash of JCS(JWK).
func (c *orbClient) commitment(k *orbKey) string {
	inner := sha256.Sum256(c.canonical(k.jwk()))
	out := c.multihash(inner[:])
	clientKeysMu.Lock()
	clientKeys[out] = k.jwk().X
	clientKeysMu.Unlock()
	return out
}

func (c *orbClient) revealValue(k *orbKey) string { return c.multihash(c.canonical(k.jwk())) }

func (c *orbClient) signModel(k *orbKey, model any) string {
	header := c.canonical(map[string]string{"alg": k.alg(), "kid": uuid.NewString()})
	input := b64u.EncodeToString(header) + "." + b64u.EncodeToString(c.canonical(model))
	return input + "." + b64u.EncodeToString(k.sign([]byte(input)))
}

// orbDID is one DID's keys as the client keeps them.
type orbDID struct {
	suffix           string
	update, recovery *orbKey
}

func (c *orbClient) delta(patches []any, next *orbKey) map[string]any {
	return map[string]any{"patches": patches, "updateCommitment": c.commitment(next)}
}

func (c *orbClient) create(patches ...any) (*orbDID, []byte) {
	d := &orbDID{update: c.newKey(), recovery: c.newKey()}
	delta := c.delta(patches, d.update)
	suffixData := map[string]any{"deltaHash": c.multihash(c.canonical(delta)), "recoveryCommitment": c.commitment(d.recovery)}
	if c.origin != "" {
		suffixData["anchorOrigin"] = c.origin
	}
	d.suffix = c.multihash(c.canonical(suffixData))
	body, err := json.Marshal(map[string]any{"type": "create", "suffixData": suffixData, "delta": delta})
	require.NoError(c.t, err)
	return d, body
}

func (c *orbClient) update(d *orbDID, signed map[string]any, patches ...any) []byte {
	next := c.newKey()
	delta := c.delta(patches, next)
	model := map[string]any{"updateKey": d.update.jwk(), "deltaHash": c.multihash(c.canonical(delta))}
	for k, v := range signed {
		model[k] = v
	}
	body, err := json.Marshal(map[string]any{
		"type": "update", "didSuffix": d.suffix, "revealValue": c.revealValue(d.update),
		"signedData": c.signModel(d.update, model), "delta": delta,
	})
	require.NoError(c.t, err)
	d.update = next
	return body
}

func (c *orbClient) recover(d *orbDID, patches ...any) []byte {
	return c.recoverSigned(d, nil, patches...)
}

// recoverSigned is recover with more members in the signed data (anchorFrom, anchorUntil).
func (c *orbClient) recoverSigned(d *orbDID, signed map[string]any, patches ...any) []byte {
	nextUpdate, nextRecovery := c.newKey(), c.newKey()
	delta := c.delta(patches, nextUpdate)
	model := map[string]any{
		"deltaHash": c.multihash(c.canonical(delta)), "recoveryKey": d.recovery.jwk(),
		"recoveryCommitment": c.commitment(nextRecovery), "anchorOrigin": c.origin,
	}
	for k, v := range signed {
		model[k] = v
	}
	body, err := json.Marshal(map[string]any{
		"type": "recover", "didSuffix": d.suffix, "revealValue": c.revealValue(d.recovery),
		"signedData": c.signModel(d.recovery, model), "delta": delta,
	})
	require.NoError(c.t, err)
	d.update, d.recovery = nextUpdate, nextRecovery
	return body
}

func (c *orbClient) deactivate(d *orbDID) []byte {
	return c.deactivateSigned(d, nil)
}

// deactivateSigned is deactivate with more members in the signed data (anchorFrom, anchorUntil).
func (c *orbClient) deactivateSigned(d *orbDID, signed map[string]any) []byte {
	model := map[string]any{"didSuffix": d.suffix, "recoveryKey": d.recovery.jwk()}
	for k, v := range signed {
		model[k] = v
	}
	body, err := json.Marshal(map[string]any{
		"type": "deactivate", "didSuffix": d.suffix, "revealValue": c.revealValue(d.recovery),
		"signedData": c.signModel(d.recovery, model),
	})
	require.NoError(c.t, err)
	return body
}

func orbService(id string) any {
	return map[string]any{"action": "add-services", "services": []any{map[string]any{"id": id, "type": "LinkedDomains", "serviceEndpoint": "https://example.com"}}}
}

func orbKeyPatch(id string, k *orbKey) any {
	return map[string]any{"action": "add-public-keys", "publicKeys": []any{map[string]any{
		"id": id, "type": "JsonWebKey2020", "purposes": []any{"authentication"}, "publicKeyJwk": k.jwk(),
	}}}
}
