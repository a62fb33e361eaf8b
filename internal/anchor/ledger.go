package anchor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/store"
)

// LedgerKeySetting is the settings row holding the ledger signer's secp256k1 private key (hex).
const LedgerKeySetting = "ledger_secp256k1_key"

// LoadOrCreateLedgerKey returns the hex private key that signs ledger batches, creating it at
// first start. Instances starting together race on the insert; the loser reads the winner's key.
func LoadOrCreateLedgerKey(ctx context.Context, st store.Executor) (string, error) {
	raw, err := st.SettingGet(ctx, LedgerKeySetting)
	if errors.Is(err, store.ErrNotFound) {
		fresh, gerr := sawtooth.GenerateKey()
		if gerr != nil {
			return "", fmt.Errorf("create ledger key: %w", gerr)
		}
		err = st.SettingInsert(ctx, LedgerKeySetting, []byte(fresh))
		switch {
		case err == nil:
			raw = []byte(fresh)
		case errors.Is(err, store.ErrConflict):
			raw, err = st.SettingGet(ctx, LedgerKeySetting)
		}
	}
	if err != nil {
		return "", fmt.Errorf("load ledger key: %w", err)
	}
	key := strings.TrimSpace(string(raw))
	if _, err := sawtooth.NewSigner(key); err != nil {
		return "", fmt.Errorf("load ledger key: %w", err)
	}
	return key, nil
}

// LedgerConfig configures the ledger backend.
type LedgerConfig struct {
	// ServiceID is the ledger scope of every batch: "circuit::service" for Splinter, empty for
	// Sawtooth.
	ServiceID string
}

// Ledger is the ledger backend: inside the batch writer's transaction it builds and signs the
// Sawtooth BatchList that carries the anchor string, and records the anchor as pending together
// with its batches and transactions rows. Package submitter delivers the batch and completes or
// fails the anchor.
type Ledger struct {
	builder   *sawtooth.Builder
	serviceID string
}

// NewLedger returns the ledger backend building and signing batches with builder.
func NewLedger(builder *sawtooth.Builder, cfg LedgerConfig) (*Ledger, error) {
	if builder == nil {
		return nil, errors.New("new ledger backend: builder is nil")
	}
	return &Ledger{builder: builder, serviceID: cfg.ServiceID}, nil
}

// Name implements Backend.
func (l *Ledger) Name() string { return "ledger" }

// Anchor implements Backend. The anchor is pending until the ledger commits its batch.
func (l *Ledger) Anchor(ctx context.Context, tx store.Executor, req Request, rec Record) (store.Anchor, error) {
	batch, err := l.builder.Build(sawtooth.BuildParams{Anchor: req.AnchorString})
	if err != nil {
		return store.Anchor{}, fmt.Errorf("ledger anchor: %w", err)
	}
	// The record names the key that signs the batch; the ledger verifies that signature.
	rec.Signer = "secp256k1:" + batch.SignerPublicKey
	body, err := rec.Marshal()
	if err != nil {
		return store.Anchor{}, err
	}
	a, err := tx.AnchorInsert(ctx, store.AnchorInsertParams{
		AnchorString: req.AnchorString, CoreIndexCID: req.CoreIndexCID, OpCount: req.OpCount,
		Backend: l.Name(), Status: store.AnchorPending, Record: body, IssuedAt: rec.IssuedAt(),
	})
	if err != nil {
		return store.Anchor{}, err
	}
	txns := make([]store.LedgerTransaction, len(batch.TransactionIDs))
	for i, id := range batch.TransactionIDs {
		txns[i] = store.LedgerTransaction{HeaderSignature: id, FamilyName: batch.FamilyName,
			FamilyVersion: batch.FamilyVersion, SignerPublicKey: batch.SignerPublicKey}
	}
	if err := tx.LedgerBatchInsert(ctx, store.LedgerBatchInsertParams{
		HeaderSignature: batch.ID, DataChangeID: req.AnchorString, SignerPublicKey: batch.SignerPublicKey,
		SerializedBatch: batch.Bytes, ServiceID: l.serviceID, AnchorSeq: a.Seq, Transactions: txns,
	}); err != nil {
		return store.Anchor{}, fmt.Errorf("ledger anchor: %w", err)
	}
	return a, nil
}
