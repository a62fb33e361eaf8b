package intake

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// SharedPending keeps the reservations of a cluster in the database, so that one pending
// operation per DID holds whichever instance takes each request: the second instance answers
// queueing_multiple_operations_per_did_not_allowed, and nothing surplus is anchored.
//
// A reservation is taken before the operation's state is read and before it is published, and
// ends in the transaction that indexes the operation (ReleaseTx, the observer's): a reservation
// that succeeds after that commit is followed by a read that sees the indexed rows, so no
// operation for the DID is validated against a state about to change. An operation that is parked frees its DID (the database sees
// the dead letter); one whose publish fails is dropped at once. What the TTL still covers: an
// instance that dies between the reservation and the publish leaves the DID held until the TTL
// ends (PendingTTLDefault), and an operation that takes longer than the TTL to be indexed lets
// a second one through, which resolution then rejects (no loss, no double effect).
type SharedPending struct {
	st     store.Store
	ttl    time.Duration
	logger *slog.Logger
}

// NewSharedPending returns database reservations that lapse after ttl (0: PendingTTLDefault).
func NewSharedPending(st store.Store, ttl time.Duration, logger *slog.Logger) *SharedPending {
	return &SharedPending{st: st, ttl: cmp.Or(ttl, PendingTTLDefault), logger: cmp.Or(logger, slog.New(slog.DiscardHandler))}
}

// Hold implements Reservations: the observer ends the reservation when it indexes the operation.
//
// A create reserves nothing, which spares the database a write on the path of most requests: a
// DID's suffix is the hash of its create's suffix data, which commits to the delta's hash, so two
// pending creates of one DID are the same request — the same operation id, which the queue and
// anchored_ops keep from being anchored twice — and no other operation of the DID can be accepted
// before its create is indexed.
func (p *SharedPending) Hold(ctx context.Context, suffix string, create bool, opID string) (bool, error) {
	if create {
		return true, nil
	}
	return p.st.DIDPendingReserve(ctx, store.DIDPendingParams{Suffix: suffix, OpID: opID, TTL: p.ttl})
}

// Drop implements Reservations. A failure only leaves the DID held until the TTL ends.
func (p *SharedPending) Drop(ctx context.Context, suffix, opID string) {
	if err := p.st.DIDPendingRelease(ctx, []store.DIDPendingKey{{Suffix: suffix, OpID: opID}}); err != nil {
		p.logger.WarnContext(ctx, "release DID reservation; it lapses after its TTL", "suffix", suffix, "error", err)
	}
}

// ReleaseTx ends, inside the observer's index transaction tx, the reservations of the
// operations being indexed (creates hold none).
func (p *SharedPending) ReleaseTx(ctx context.Context, tx store.Executor, ops []store.DIDOperation) error {
	keys := make([]store.DIDPendingKey, 0, len(ops))
	for _, op := range ops {
		if op.Type != string(sidetree.OperationCreate) {
			keys = append(keys, store.DIDPendingKey{Suffix: op.Suffix, OpID: opqueue.OpIDOf(op.Request)})
		}
	}
	if err := tx.DIDPendingRelease(ctx, keys); err != nil {
		return fmt.Errorf("release reservations of indexed operations: %w", err)
	}
	return nil
}
