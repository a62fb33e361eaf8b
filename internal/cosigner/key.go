package cosigner

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// Signature type identifiers of c2sp.org/signed-note assigned to the cosignature formats.
const (
	algCosignatureV1 = 0x04 // Ed25519 cosignature/v1
	algSubtreeV1     = 0x06 // ML-DSA-44 subtree/v1
)

// Labels of the key derivation: each key is derived from the domain key for one purpose only.
const (
	infoEd25519 = "anchord tlog-witness cosignature/v1 Ed25519 key"
	infoMLDSA44 = "anchord tlog-witness subtree/v1 ML-DSA-44 key"
)

// subtreeLabel opens the ML-DSA-44 cosigned_message of c2sp.org/tlog-cosignature.
const subtreeLabel = "subtree/v1\n\x00"

// Key is a witness's cosigning identity: a name and an Ed25519 key for cosignature/v1, and
// optionally an ML-DSA-44 key for subtree/v1 cosignatures.
type Key struct {
	name   string
	ed     ed25519.PrivateKey
	edHash uint32
	ml     *mldsa44.PrivateKey // nil: no ML-DSA-44 cosignatures
	mlPub  []byte
	mlHash uint32
}

// DeriveKey returns the witness key named name derived from the domain key: HKDF-SHA256 of
// its seed, with one label per algorithm. Every instance of a domain derives the same keys, the
// domain key itself never signs a cosignature (tlog-cosignature asks for keys used for one
// cosigner only), and nothing new needs keeping secret. withMLDSA adds the ML-DSA-44 key.
func DeriveKey(name string, domainKey ed25519.PrivateKey, withMLDSA bool) (*Key, error) {
	if !validName(name) {
		return nil, fmt.Errorf("cosigner: %q is not a key name (empty, or with a space or '+')", name)
	}
	if len(domainKey) != ed25519.PrivateKeySize {
		return nil, errors.New("cosigner: the domain key is not an Ed25519 private key")
	}
	seed, err := hkdf.Key(sha256.New, domainKey.Seed(), nil, infoEd25519, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("cosigner: derive the Ed25519 key: %w", err)
	}
	k := &Key{name: name, ed: ed25519.NewKeyFromSeed(seed)}
	k.edHash = keyID(name, algCosignatureV1, k.ed.Public().(ed25519.PublicKey))
	if withMLDSA {
		s, err := hkdf.Key(sha256.New, domainKey.Seed(), nil, infoMLDSA44, mldsa44.SeedSize)
		if err != nil {
			return nil, fmt.Errorf("cosigner: derive the ML-DSA-44 key: %w", err)
		}
		var mlSeed [mldsa44.SeedSize]byte
		copy(mlSeed[:], s)
		pub, priv := mldsa44.NewKeyFromSeed(&mlSeed)
		k.ml, k.mlPub = priv, pub.Bytes()
		k.mlHash = keyID(name, algSubtreeV1, k.mlPub)
	}
	return k, nil
}

// Name is the witness's name, the key name of its cosignatures.
func (k *Key) Name() string { return k.name }

// VerifierKeys returns the vkeys of the witness: the Ed25519 cosignature/v1 key, then the
// ML-DSA-44 one when there is one. They are what a log puts in its witness policy.
func (k *Key) VerifierKeys() []string {
	keys := []string{vkey(k.name, k.edHash, algCosignatureV1, k.ed.Public().(ed25519.PublicKey))}
	if k.ml != nil {
		keys = append(keys, vkey(k.name, k.mlHash, algSubtreeV1, k.mlPub))
	}
	return keys
}

// Signers returns note signers that cosign a checkpoint at time t: the cosignature/v1 one,
// then the subtree/v1 one when the key has ML-DSA-44.
func (k *Key) Signers(t time.Time) []note.Signer {
	ts := uint64(t.Unix())
	s := []note.Signer{&edSigner{k: k, ts: ts}}
	if k.ml != nil {
		s = append(s, &mlSigner{k: k, ts: ts})
	}
	return s
}

type edSigner struct {
	k  *Key
	ts uint64
}

func (s *edSigner) Name() string    { return s.k.name }
func (s *edSigner) KeyHash() uint32 { return s.k.edHash }

// Sign returns timestamp || Ed25519 signature of the cosignature/v1 message of checkpoint msg.
func (s *edSigner) Sign(msg []byte) ([]byte, error) {
	m := CosignatureV1Message(s.ts, msg)
	return append(binary.BigEndian.AppendUint64(nil, s.ts), ed25519.Sign(s.k.ed, m)...), nil
}

type mlSigner struct {
	k  *Key
	ts uint64
}

func (s *mlSigner) Name() string    { return s.k.name }
func (s *mlSigner) KeyHash() uint32 { return s.k.mlHash }

// Sign returns timestamp || ML-DSA-44 signature of the subtree/v1 message of checkpoint msg,
// for the whole tree (start 0, end its size), as add-checkpoint requires.
func (s *mlSigner) Sign(msg []byte) ([]byte, error) {
	var cp flog.Checkpoint
	if _, err := cp.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("cosign: %w", err)
	}
	m, err := SubtreeV1Message(s.k.name, s.ts, cp.Origin, 0, cp.Size, cp.Hash)
	if err != nil {
		return nil, err
	}
	sig := make([]byte, 8+mldsa44.SignatureSize)
	binary.BigEndian.PutUint64(sig, s.ts)
	// Randomized (hedged) signing, as FIPS 204 recommends; the context string is empty.
	if err := mldsa44.SignTo(s.k.ml, m, nil, true, sig[8:]); err != nil {
		return nil, fmt.Errorf("cosign with ML-DSA-44: %w", err)
	}
	return sig, nil
}

// CosignatureV1Message is the message an Ed25519 cosignature/v1 signs: the header line, the
// timestamp line and the whole checkpoint body (extension lines included).
func CosignatureV1Message(ts uint64, checkpoint []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "cosignature/v1\ntime %d\n", ts)
	b.Write(checkpoint)
	return b.Bytes()
}

// SubtreeV1Message is the cosigned_message an ML-DSA-44 subtree/v1 cosignature signs.
func SubtreeV1Message(name string, ts uint64, origin string, start, end uint64, hash []byte) ([]byte, error) {
	if len(name) == 0 || len(name) > 255 || len(origin) == 0 || len(origin) > 255 {
		return nil, errors.New("subtree/v1: the cosigner name and the log origin must be 1 to 255 bytes")
	}
	if len(hash) != sha256.Size {
		return nil, errors.New("subtree/v1: the hash must be 32 bytes")
	}
	if start != 0 && ts != 0 {
		return nil, errors.New("subtree/v1: a subtree that does not start at 0 has no timestamp")
	}
	m := []byte(subtreeLabel)
	m = append(m, byte(len(name)))
	m = append(m, name...)
	m = binary.BigEndian.AppendUint64(m, ts)
	m = append(m, byte(len(origin)))
	m = append(m, origin...)
	m = binary.BigEndian.AppendUint64(m, start)
	m = binary.BigEndian.AppendUint64(m, end)
	return append(m, hash...), nil
}

// keyID is SHA-256(name || "\n" || alg || key)[:4], big-endian.
func keyID(name string, alg byte, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', alg})
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func vkey(name string, id uint32, alg byte, key []byte) string {
	return fmt.Sprintf("%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(append([]byte{alg}, key...)))
}

// validName applies the signed-note rules for a key name.
func validName(name string) bool {
	return name != "" && utf8.ValidString(name) && !strings.ContainsFunc(name, unicode.IsSpace) && !strings.Contains(name, "+")
}
