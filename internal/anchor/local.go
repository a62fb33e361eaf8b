package anchor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anchord/anchord/internal/store"
)

// DomainKeySetting is the settings row holding the domain's Ed25519 seed.
const DomainKeySetting = "domain_ed25519_seed"

// LoadOrCreateDomainKey returns the domain's signing key, creating it at first start. Instances
// starting together race on the insert; the loser reads the winner's key.
func LoadOrCreateDomainKey(ctx context.Context, st store.Executor) (ed25519.PrivateKey, error) {
	seed, err := st.SettingGet(ctx, DomainKeySetting)
	if errors.Is(err, store.ErrNotFound) {
		fresh := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(fresh); err != nil {
			return nil, fmt.Errorf("create domain key: %w", err)
		}
		err = st.SettingInsert(ctx, DomainKeySetting, fresh)
		switch {
		case err == nil:
			seed = fresh
		case errors.Is(err, store.ErrConflict):
			seed, err = st.SettingGet(ctx, DomainKeySetting)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load domain key: %w", err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("load domain key: stored seed has %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// SignerID names an Ed25519 public key in records: "ed25519:" + base64url.
func SignerID(pub ed25519.PublicKey) string {
	return "ed25519:" + base64.RawURLEncoding.EncodeToString(pub)
}

// Local is the local backend: the domain signs the record and the anchor is complete at once.
type Local struct {
	key ed25519.PrivateKey
}

// NewLocal returns the local backend signing with key.
func NewLocal(key ed25519.PrivateKey) *Local { return &Local{key: key} }

// Name implements Backend.
func (l *Local) Name() string { return "local" }

// Anchor implements Backend.
func (l *Local) Anchor(ctx context.Context, tx store.Executor, req Request, rec Record) (store.Anchor, error) {
	rec.Signer = SignerID(l.key.Public().(ed25519.PublicKey))
	body, err := rec.Marshal()
	if err != nil {
		return store.Anchor{}, err
	}
	return tx.AnchorInsert(ctx, store.AnchorInsertParams{
		AnchorString: req.AnchorString, CoreIndexCID: req.CoreIndexCID, OpCount: req.OpCount,
		Backend: l.Name(), Status: store.AnchorCompleted, Record: body, Signature: ed25519.Sign(l.key, body),
		IssuedAt: rec.IssuedAt(),
	})
}

// VerifyLocal checks a local anchor's signature against the signer named in its record.
func VerifyLocal(a store.Anchor) error {
	var rec Record
	if err := json.Unmarshal(a.Record, &rec); err != nil {
		return fmt.Errorf("verify anchor %d: %w", a.Seq, err)
	}
	enc, ok := strings.CutPrefix(rec.Signer, "ed25519:")
	if !ok {
		return fmt.Errorf("verify anchor %d: signer %q is not an ed25519 key", a.Seq, rec.Signer)
	}
	pub, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("verify anchor %d: malformed signer key", a.Seq)
	}
	if !ed25519.Verify(pub, a.Record, a.Signature) {
		return fmt.Errorf("verify anchor %d: bad signature", a.Seq)
	}
	if rec.Anchor != a.AnchorString || rec.CoreIndex != a.CoreIndexCID {
		return fmt.Errorf("verify anchor %d: record names %s, row holds %s", a.Seq, rec.Anchor, a.AnchorString)
	}
	return nil
}
