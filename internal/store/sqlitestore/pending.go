package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qDIDPendingReserve = `INSERT INTO did_pending AS p (suffix, op_id, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (suffix) DO UPDATE SET op_id = excluded.op_id, expires_at = excluded.expires_at
		WHERE p.op_id = excluded.op_id OR p.expires_at < ?
			OR EXISTS (SELECT 1 FROM dead_letters d WHERE d.ref = p.op_id AND d.kind = 'operation')
		RETURNING 1`
	qDIDPendingRelease = `DELETE FROM did_pending WHERE suffix = ? AND op_id = ?`
)

// DIDPendingReserve implements store.Executor.
func (e executor) DIDPendingReserve(ctx context.Context, p store.DIDPendingParams) (bool, error) {
	now := nowMicros()
	var one int
	err := e.w.QueryRowContext(ctx, qDIDPendingReserve, p.Suffix, p.OpID, now+p.TTL.Microseconds(), now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reserve DID %s: %w", p.Suffix, interpretError(err))
	}
	return true, nil
}

// DIDPendingRelease implements store.Executor.
func (e executor) DIDPendingRelease(ctx context.Context, keys []store.DIDPendingKey) error {
	if len(keys) == 0 {
		return nil
	}
	err := e.batch(ctx, func(tx *sql.Tx) error {
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, qDIDPendingRelease, k.Suffix, k.OpID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release %d DID reservations: %w", len(keys), interpretError(err))
	}
	return nil
}
