package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

const (
	qDIDPendingReserve = `INSERT INTO did_pending AS p (suffix, op_id, expires_at)
		VALUES ($1, $2, now() + $3 * interval '1 microsecond')
		ON CONFLICT (suffix) DO UPDATE SET op_id = EXCLUDED.op_id, expires_at = EXCLUDED.expires_at
		WHERE p.op_id = EXCLUDED.op_id OR p.expires_at < now()
			OR EXISTS (SELECT 1 FROM dead_letters d WHERE d.ref = p.op_id AND d.kind = 'operation')
		RETURNING true`
	// qSynchronousCommitOff applies to the implicit transaction of the batch it is sent in.
	qSynchronousCommitOff = `SET LOCAL synchronous_commit TO OFF`
	qDIDPendingRelease    = `DELETE FROM did_pending p USING unnest($1::text[], $2::text[]) AS k(suffix, op_id)
		WHERE p.suffix = k.suffix AND p.op_id = k.op_id`
)

// DIDPendingReserve implements store.Executor. Outside a transaction it commits without waiting
// for the WAL flush (synchronous_commit off, set for this statement's implicit transaction
// only, in the same round trip): a reservation sits on every cluster request's path, and one
// that a PostgreSQL crash loses only lets a second operation for the DID through, which then
// resolves as invalid. Nothing accepted depends on it being durable.
func (e executor) DIDPendingReserve(ctx context.Context, p store.DIDPendingParams) (bool, error) {
	var ok bool
	var err error
	if _, inTx := e.q.(pgx.Tx); inTx {
		err = e.q.QueryRow(ctx, qDIDPendingReserve, p.Suffix, p.OpID, p.TTL.Microseconds()).Scan(&ok)
	} else {
		b := &pgx.Batch{}
		b.Queue(qSynchronousCommitOff)
		b.Queue(qDIDPendingReserve, p.Suffix, p.OpID, p.TTL.Microseconds()).QueryRow(func(row pgx.Row) error { return row.Scan(&ok) })
		err = e.q.SendBatch(ctx, b).Close()
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reserve DID %s: %w", p.Suffix, interpretError(err))
	}
	return ok, nil
}

// DIDPendingRelease implements store.Executor.
func (e executor) DIDPendingRelease(ctx context.Context, keys []store.DIDPendingKey) error {
	if len(keys) == 0 {
		return nil
	}
	suffixes := make([]string, len(keys))
	opIDs := make([]string, len(keys))
	for i, k := range keys {
		suffixes[i], opIDs[i] = k.Suffix, k.OpID
	}
	if _, err := e.q.Exec(ctx, qDIDPendingRelease, suffixes, opIDs); err != nil {
		return fmt.Errorf("release %d DID reservations: %w", len(keys), interpretError(err))
	}
	return nil
}
