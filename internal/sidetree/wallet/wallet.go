// Package wallet builds signed Sidetree operation requests: key pairs (secp256k1 with ES256K,
// Ed25519 with EdDSA), create/update/recover/deactivate requests, and an Identity that tracks the
// keys a DID's next update and recovery must reveal. Tests and the load generator use it; the
// server never does. Every request it builds passes sidetree.ParseOperation under a profile that
// enables the key's algorithm.
package wallet

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/anchord/anchord/internal/sidetree"
)

// Config configures a Wallet. The zero value means ES256K keys from crypto/rand.
type Config struct {
	// Algorithm of the keys the wallet generates: sidetree.ES256K (default) or sidetree.EdDSA.
	Algorithm sidetree.Algorithm
	// Rand is the randomness for key generation; nil means crypto/rand. Tests pass a seeded
	// reader for reproducible keys.
	Rand io.Reader
	// Profile supplies the DID method for Identity.DID; zero means sidetree.DefaultProfile().
	Profile sidetree.Profile
	// AnchorOrigin, if set, is declared by every create (in suffixData) and recover (in its
	// signed payload), as Orb's clients declare the domain that anchors a DID.
	AnchorOrigin string
}

// Wallet creates identities and the requests that change them. It holds no mutable state and
// is safe for concurrent use; an Identity is not.
type Wallet struct {
	cfg Config
}

// New returns a wallet.
func New(cfg Config) *Wallet {
	if cfg.Algorithm == "" {
		cfg.Algorithm = sidetree.ES256K
	}
	return &Wallet{cfg: cfg}
}

// Identity is a DID the wallet controls: the keys whose commitments the DID currently expects.
// Update and Recover advance it when they build a request; a caller whose request is then not
// anchored must discard the identity (or keep a copy from before).
type Identity struct {
	Suffix      string
	UpdateKey   *Key
	RecoveryKey *Key
	method      string
}

// DID returns the identity's short-form DID.
func (id *Identity) DID() string { return "did:" + id.method + ":" + id.Suffix }

// NewKey generates a key with the wallet's algorithm and randomness.
func (w *Wallet) NewKey() (*Key, error) { return GenerateKey(w.cfg.Algorithm, w.cfg.Rand) }

// Create makes fresh update and recovery keys and returns the identity and its create request,
// whose delta holds the given patches (typically one Replace).
func (w *Wallet) Create(patches ...Patch) (*Identity, []byte, error) {
	update, err := w.NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("create: %w", err)
	}
	recovery, err := w.NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("create: %w", err)
	}
	req, suffix, err := createRequest(recovery.Commitment(), update.Commitment(), w.cfg.AnchorOrigin, patches)
	if err != nil {
		return nil, nil, err
	}
	method := w.cfg.Profile.Method
	if method == "" {
		method = sidetree.MethodDefault
	}
	return &Identity{Suffix: suffix, UpdateKey: update, RecoveryKey: recovery, method: method}, req, nil
}

// Update returns an update request signed with the identity's update key that commits to a new
// update key, and moves the identity to the new key.
func (w *Wallet) Update(id *Identity, patches ...Patch) ([]byte, error) {
	next, err := w.NewKey()
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	req, err := UpdateRequest(id.Suffix, id.UpdateKey, next.Commitment(), patches...)
	if err != nil {
		return nil, err
	}
	id.UpdateKey = next
	return req, nil
}

// Recover returns a recover request signed with the identity's recovery key that installs new
// recovery and update keys and the given patches, and moves the identity to the new keys.
func (w *Wallet) Recover(id *Identity, patches ...Patch) ([]byte, error) {
	nextRecovery, err := w.NewKey()
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	nextUpdate, err := w.NewKey()
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	req, err := recoverRequest(id.Suffix, id.RecoveryKey, nextRecovery.Commitment(), nextUpdate.Commitment(), w.cfg.AnchorOrigin, patches)
	if err != nil {
		return nil, err
	}
	id.RecoveryKey, id.UpdateKey = nextRecovery, nextUpdate
	return req, nil
}

// Deactivate returns a deactivate request signed with the identity's recovery key.
func (w *Wallet) Deactivate(id *Identity) ([]byte, error) {
	return DeactivateRequest(id.Suffix, id.RecoveryKey)
}

// delta builds {"updateCommitment":…,"patches":[…]} and its hash.
func delta(updateCommitment string, patches []Patch) ([]byte, string, error) {
	d := make([]byte, 0, 128+patchesLen(patches))
	d = append(d, `{"updateCommitment":`...)
	d = appendString(d, updateCommitment)
	d = append(d, `,"patches":[`...)
	for i, p := range patches {
		if i > 0 {
			d = append(d, ',')
		}
		d = append(d, p...)
	}
	d = append(d, "]}"...)
	canon, err := sidetree.Canonicalize(d)
	if err != nil {
		return nil, "", fmt.Errorf("build delta: %w", err)
	}
	return d, sidetree.HashOut(canon), nil
}

func patchesLen(patches []Patch) int {
	n := 0
	for _, p := range patches {
		n += len(p) + 1
	}
	return n
}

// CreateRequest builds a create request from the two commitments and the patches, and returns
// it with the DID suffix.
func CreateRequest(recoveryCommitment, updateCommitment string, patches ...Patch) ([]byte, string, error) {
	return createRequest(recoveryCommitment, updateCommitment, "", patches)
}

func createRequest(recoveryCommitment, updateCommitment, anchorOrigin string, patches []Patch) ([]byte, string, error) {
	d, deltaHash, err := delta(updateCommitment, patches)
	if err != nil {
		return nil, "", fmt.Errorf("create request: %w", err)
	}
	sd := make([]byte, 0, 128+len(anchorOrigin))
	sd = append(sd, `{"deltaHash":`...)
	sd = appendString(sd, deltaHash)
	sd = append(sd, `,"recoveryCommitment":`...)
	sd = appendString(sd, recoveryCommitment)
	if anchorOrigin != "" {
		sd = append(sd, `,"anchorOrigin":`...)
		sd = appendString(sd, anchorOrigin)
	}
	sd = append(sd, '}')
	// Without an origin suffixData is already canonical: two string members in JCS order.
	canon := sd
	if anchorOrigin != "" {
		if canon, err = sidetree.Canonicalize(sd); err != nil {
			return nil, "", fmt.Errorf("create request: %w", err)
		}
	}
	suffix := sidetree.HashOut(canon)
	req := make([]byte, 0, len(sd)+len(d)+48)
	req = append(req, `{"type":"create","suffixData":`...)
	req = append(req, sd...)
	req = append(req, `,"delta":`...)
	req = append(req, d...)
	req = append(req, '}')
	return req, suffix, nil
}

// UpdateRequest builds an update request signed with key.
func UpdateRequest(suffix string, key *Key, nextUpdateCommitment string, patches ...Patch) ([]byte, error) {
	d, deltaHash, err := delta(nextUpdateCommitment, patches)
	if err != nil {
		return nil, fmt.Errorf("update request: %w", err)
	}
	payload := make([]byte, 0, 200)
	payload = append(payload, `{"updateKey":`...)
	payload = append(payload, key.jwk...)
	payload = append(payload, `,"deltaHash":`...)
	payload = appendString(payload, deltaHash)
	payload = append(payload, '}')
	return signedRequest("update", suffix, key, payload, d), nil
}

// RecoverRequest builds a recover request signed with key.
func RecoverRequest(suffix string, key *Key, nextRecoveryCommitment, nextUpdateCommitment string, patches ...Patch) ([]byte, error) {
	return recoverRequest(suffix, key, nextRecoveryCommitment, nextUpdateCommitment, "", patches)
}

func recoverRequest(suffix string, key *Key, nextRecoveryCommitment, nextUpdateCommitment, anchorOrigin string, patches []Patch) ([]byte, error) {
	d, deltaHash, err := delta(nextUpdateCommitment, patches)
	if err != nil {
		return nil, fmt.Errorf("recover request: %w", err)
	}
	payload := make([]byte, 0, 260)
	payload = append(payload, `{"recoveryCommitment":`...)
	payload = appendString(payload, nextRecoveryCommitment)
	payload = append(payload, `,"recoveryKey":`...)
	payload = append(payload, key.jwk...)
	payload = append(payload, `,"deltaHash":`...)
	payload = appendString(payload, deltaHash)
	if anchorOrigin != "" {
		payload = append(payload, `,"anchorOrigin":`...)
		payload = appendString(payload, anchorOrigin)
	}
	payload = append(payload, '}')
	return signedRequest("recover", suffix, key, payload, d), nil
}

// DeactivateRequest builds a deactivate request signed with key.
func DeactivateRequest(suffix string, key *Key) ([]byte, error) {
	payload := make([]byte, 0, 200)
	payload = append(payload, `{"didSuffix":`...)
	payload = appendString(payload, suffix)
	payload = append(payload, `,"recoveryKey":`...)
	payload = append(payload, key.jwk...)
	payload = append(payload, '}')
	return signedRequest("deactivate", suffix, key, payload, nil), nil
}

func signedRequest(typ, suffix string, key *Key, payload, delta []byte) []byte {
	jws := key.Sign(payload)
	req := make([]byte, 0, len(jws)+len(delta)+160)
	req = append(req, `{"type":"`...)
	req = append(req, typ...)
	req = append(req, `","didSuffix":`...)
	req = appendString(req, suffix)
	req = append(req, `,"revealValue":`...)
	req = appendString(req, key.reveal)
	req = append(req, `,"signedData":`...)
	req = appendString(req, jws)
	if delta != nil {
		req = append(req, `,"delta":`...)
		req = append(req, delta...)
	}
	return append(req, '}')
}

// appendString quotes s with encoding/json, which is correct for any string; Sidetree values
// (multihashes, JWS) need no escaping at all.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
