package sawtooth

import (
	"cmp"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/anchord/anchord/internal/ledger/sawtoothpb"
)

// MaxAnchorLen bounds the anchor string a Builder accepts, in bytes. Sidetree anchor strings
// ("<count>.<CID>") are well under 100 bytes.
const MaxAnchorLen = 1024

// nonceBytes is the size of a random nonce before hex encoding.
const nonceBytes = 16

// BuilderConfig names the transaction family a Builder writes. The zero value is the anchord
// family, FamilyName and FamilyVersion.
type BuilderConfig struct {
	FamilyName    string
	FamilyVersion string
}

// Builder turns anchor strings into signed BatchLists of one batch holding one transaction of
// the anchord family. One Signer signs both the transaction and the batch, so the transaction's
// batcher_public_key is the batch signer's key, as Sawtooth requires. A Builder is safe for
// concurrent use.
type Builder struct {
	signer  *Signer
	family  string
	version string
}

// NewBuilder returns a Builder that signs with signer.
func NewBuilder(signer *Signer, cfg BuilderConfig) (*Builder, error) {
	if signer == nil {
		return nil, errors.New("new batch builder: signer is nil")
	}
	return &Builder{
		signer:  signer,
		family:  cmp.Or(cfg.FamilyName, FamilyName),
		version: cmp.Or(cfg.FamilyVersion, FamilyVersion),
	}, nil
}

// BuildParams are the inputs of one Build.
type BuildParams struct {
	// Anchor is the anchor string, e.g. "42.QmXyz…". It becomes the payload byte for byte. The
	// builder requires non-empty UTF-8 of at most MaxAnchorLen bytes and does not otherwise
	// interpret it; the family's processor does.
	Anchor string
	// Nonce makes the transaction unique. Empty means 32 random hex characters. Set it only to
	// reproduce a batch (tests, golden files): two batches with the same anchor, nonce and key
	// are the same batch.
	Nonce string
}

// Batch is a built, signed BatchList and what a submitter stores beside it.
type Batch struct {
	// ID is the batch header signature: the id Statuses reports on.
	ID string
	// TransactionIDs are the header signatures of the batch's transactions, in order.
	TransactionIDs []string
	// SignerPublicKey signed the batch and every transaction.
	SignerPublicKey string
	FamilyName      string
	FamilyVersion   string
	// Address is the state address the transaction reads and writes.
	Address string
	// Nonce is the transaction nonce that was used.
	Nonce string
	// Bytes is the serialized BatchList, the body to submit (and to resubmit, unchanged).
	Bytes []byte
}

// Build makes and signs the BatchList for one anchor.
func (b *Builder) Build(p BuildParams) (Batch, error) {
	if p.Anchor == "" {
		return Batch{}, errors.New("build batch: anchor is empty")
	}
	if len(p.Anchor) > MaxAnchorLen {
		return Batch{}, fmt.Errorf("build batch: anchor is %d bytes, more than %d", len(p.Anchor), MaxAnchorLen)
	}
	if !utf8.ValidString(p.Anchor) {
		return Batch{}, errors.New("build batch: anchor is not valid UTF-8")
	}
	nonce := p.Nonce
	if nonce == "" {
		var raw [nonceBytes]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return Batch{}, fmt.Errorf("build batch: nonce: %w", err)
		}
		nonce = hex.EncodeToString(raw[:])
	}

	payload := []byte(p.Anchor)
	payloadSum := sha512.Sum512(payload)
	address := AnchorAddress(b.family, p.Anchor)
	pub := b.signer.PublicKey()

	txnHeader, err := marshal(&sawtoothpb.TransactionHeader{
		BatcherPublicKey: pub,
		FamilyName:       b.family,
		FamilyVersion:    b.version,
		Inputs:           []string{address},
		Outputs:          []string{address},
		Nonce:            nonce,
		PayloadSha512:    hex.EncodeToString(payloadSum[:]),
		SignerPublicKey:  pub,
	})
	if err != nil {
		return Batch{}, fmt.Errorf("build batch: transaction header: %w", err)
	}
	txnID := b.signer.Sign(txnHeader)

	batchHeader, err := marshal(&sawtoothpb.BatchHeader{
		SignerPublicKey: pub,
		TransactionIds:  []string{txnID},
	})
	if err != nil {
		return Batch{}, fmt.Errorf("build batch: batch header: %w", err)
	}
	batchID := b.signer.Sign(batchHeader)

	list, err := marshal(&sawtoothpb.BatchList{Batches: []*sawtoothpb.Batch{{
		Header:          batchHeader,
		HeaderSignature: batchID,
		Transactions: []*sawtoothpb.Transaction{{
			Header:          txnHeader,
			HeaderSignature: txnID,
			Payload:         payload,
		}},
	}}})
	if err != nil {
		return Batch{}, fmt.Errorf("build batch: batch list: %w", err)
	}
	return Batch{
		ID:              batchID,
		TransactionIDs:  []string{txnID},
		SignerPublicKey: pub,
		FamilyName:      b.family,
		FamilyVersion:   b.version,
		Address:         address,
		Nonce:           nonce,
		Bytes:           list,
	}, nil
}

// marshal serializes deterministically, so that equal messages give equal bytes (the headers
// are signed as bytes, and the golden test pins them).
func marshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}
