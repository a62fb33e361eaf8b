package sawtooth

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/anchord/anchord/internal/ledger/sawtoothpb"
)

// Errors of ParseBatchList, matching the Sawtooth REST API's distinct 400 answers.
var (
	// ErrNoBatches: the body is empty or holds a BatchList without batches (API code 34).
	ErrNoBatches = errors.New("batch list holds no batches")
	// ErrUndecodable: the body is not a BatchList protobuf (API code 35).
	ErrUndecodable = errors.New("batch list is not a decodable protobuf")
)

// VerifiedTransaction is a transaction whose signature and payload hash checked out.
type VerifiedTransaction struct {
	ID      string
	Header  *sawtoothpb.TransactionHeader
	Payload []byte
}

// VerifiedBatch is a batch whose signatures and hashes checked out, with its headers decoded.
type VerifiedBatch struct {
	ID              string
	SignerPublicKey string
	Trace           bool
	Transactions    []VerifiedTransaction
}

// ParseBatchList decodes a serialized BatchList. Its errors wrap ErrNoBatches or
// ErrUndecodable.
func ParseBatchList(body []byte) (*sawtoothpb.BatchList, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("parse batch list: empty body: %w", ErrNoBatches)
	}
	var list sawtoothpb.BatchList
	if err := proto.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("parse batch list: %w: %w", ErrUndecodable, err)
	}
	if len(list.GetBatches()) == 0 {
		return nil, fmt.Errorf("parse batch list: %w", ErrNoBatches)
	}
	return &list, nil
}

// VerifyBatch applies the checks a Sawtooth validator makes before it schedules a batch: the
// batch header decodes and its signature verifies against its signer_public_key over the header
// bytes as carried; the header lists exactly the transactions' ids, in order, without repeats;
// each transaction header decodes, its signature verifies against its own signer_public_key,
// its batcher_public_key is the batch signer's, and payload_sha512 is the SHA-512 of the
// payload. A batch without transactions is refused too.
func VerifyBatch(b *sawtoothpb.Batch) (VerifiedBatch, error) {
	var header sawtoothpb.BatchHeader
	if err := proto.Unmarshal(b.GetHeader(), &header); err != nil {
		return VerifiedBatch{}, fmt.Errorf("batch header does not decode: %w", err)
	}
	id := b.GetHeaderSignature()
	if err := VerifySignature(header.GetSignerPublicKey(), id, b.GetHeader()); err != nil {
		return VerifiedBatch{}, fmt.Errorf("batch %.16s…: %w", id, err)
	}
	txns := b.GetTransactions()
	if len(txns) == 0 {
		return VerifiedBatch{}, fmt.Errorf("batch %.16s…: holds no transactions", id)
	}
	if len(header.GetTransactionIds()) != len(txns) {
		return VerifiedBatch{}, fmt.Errorf("batch %.16s…: header lists %d transaction ids for %d transactions",
			id, len(header.GetTransactionIds()), len(txns))
	}
	out := VerifiedBatch{ID: id, SignerPublicKey: header.GetSignerPublicKey(), Trace: b.GetTrace()}
	seen := make(map[string]bool, len(txns))
	for i, txn := range txns {
		vt, err := verifyTransaction(txn, header.GetSignerPublicKey())
		if err != nil {
			return VerifiedBatch{}, fmt.Errorf("batch %.16s…: transaction %d: %w", id, i, err)
		}
		if header.GetTransactionIds()[i] != vt.ID {
			return VerifiedBatch{}, fmt.Errorf("batch %.16s…: transaction %d: id is not the one the batch header lists", id, i)
		}
		if seen[vt.ID] {
			return VerifiedBatch{}, fmt.Errorf("batch %.16s…: transaction %d: repeated", id, i)
		}
		seen[vt.ID] = true
		out.Transactions = append(out.Transactions, vt)
	}
	return out, nil
}

func verifyTransaction(txn *sawtoothpb.Transaction, batcher string) (VerifiedTransaction, error) {
	var header sawtoothpb.TransactionHeader
	if err := proto.Unmarshal(txn.GetHeader(), &header); err != nil {
		return VerifiedTransaction{}, fmt.Errorf("header does not decode: %w", err)
	}
	if err := VerifySignature(header.GetSignerPublicKey(), txn.GetHeaderSignature(), txn.GetHeader()); err != nil {
		return VerifiedTransaction{}, err
	}
	if header.GetBatcherPublicKey() != batcher {
		return VerifiedTransaction{}, errors.New("batcher_public_key is not the batch signer's key")
	}
	sum := sha512.Sum512(txn.GetPayload())
	if header.GetPayloadSha512() != hex.EncodeToString(sum[:]) {
		return VerifiedTransaction{}, errors.New("payload_sha512 does not match the payload")
	}
	return VerifiedTransaction{ID: txn.GetHeaderSignature(), Header: &header, Payload: txn.GetPayload()}, nil
}
