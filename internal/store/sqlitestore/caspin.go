package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qCASPinQueue   = `INSERT INTO cas_pins (cid, due_at) VALUES (?, ?) ON CONFLICT (cid) DO NOTHING`
	qCASPinRequeue = `INSERT INTO cas_pins (cid, due_at) VALUES (?, ?)
		ON CONFLICT (cid) DO UPDATE SET status = 'queued', due_at = excluded.due_at, claimed_by = '', claim_until = 0`
	// The one writer connection serialises claims, so no row locking is needed.
	qCASPinClaim = `UPDATE cas_pins SET claimed_by = ?, claim_until = ?
		WHERE cid IN (
			SELECT cid FROM cas_pins
			WHERE status = 'queued' AND due_at <= ? AND (claimed_by = '' OR claim_until < ?)
			ORDER BY due_at LIMIT ?)
		RETURNING cid, attempts, history`
	qCASPinDone = `UPDATE cas_pins SET status = 'done', claimed_by = '' WHERE cid = ? AND claimed_by = ?`
	qCASPinFail = `UPDATE cas_pins SET attempts = attempts + 1, history = ?, claimed_by = '', due_at = ?
		WHERE cid = ? AND claimed_by = ?`
	qCASPinPark    = `UPDATE cas_pins SET status = 'parked', claimed_by = '' WHERE cid = ? AND claimed_by = ?`
	qCASPinPending = `SELECT count(*) FROM cas_pins WHERE status <> 'done'`
	qCASList       = `SELECT cid FROM cas_objects WHERE cid > ? ORDER BY cid LIMIT ?`
)

// CASPinQueue implements store.Executor.
func (e executor) CASPinQueue(ctx context.Context, cids []string, requeue bool) error {
	q := qCASPinQueue
	if requeue {
		q = qCASPinRequeue
	}
	err := e.batch(ctx, func(tx *sql.Tx) error {
		now := nowMicros()
		for _, cid := range cids {
			if _, err := tx.ExecContext(ctx, q, cid, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue %d files for IPFS: %w", len(cids), interpretError(err))
	}
	return nil
}

// CASPinClaim implements store.Executor.
func (e executor) CASPinClaim(ctx context.Context, p store.CASPinClaimParams) ([]store.CASPin, error) {
	now := nowMicros()
	rows, err := e.w.QueryContext(ctx, qCASPinClaim, p.Owner, now+p.TTL.Microseconds(), now, now, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim IPFS pins: %w", err)
	}
	defer rows.Close()
	var out []store.CASPin
	for rows.Next() {
		var pin store.CASPin
		var hist string
		if err := rows.Scan(&pin.CID, &pin.Attempts, &hist); err != nil {
			return nil, fmt.Errorf("claim IPFS pins: %w", err)
		}
		pin.History = parseHistory(hist)
		out = append(out, pin)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim IPFS pins: %w", err)
	}
	return out, nil
}

func (e executor) settlePin(ctx context.Context, what, q string, args ...any) error {
	res, err := e.w.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, interpretError(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%s: %w", what, store.ErrLeaseLost)
	}
	return nil
}

// CASPinDone implements store.Executor.
func (e executor) CASPinDone(ctx context.Context, cid, owner string) error {
	return e.settlePin(ctx, "settle IPFS pin "+cid, qCASPinDone, cid, owner)
}

// CASPinFail implements store.Executor.
func (e executor) CASPinFail(ctx context.Context, p store.CASPinFailParams) error {
	return e.settlePin(ctx, "record failed IPFS add "+p.CID, qCASPinFail, historyJSON(p.History), nowMicros()+p.Retry.Microseconds(), p.CID, p.Owner)
}

// CASPinPark implements store.Executor.
func (e executor) CASPinPark(ctx context.Context, cid, owner string) error {
	return e.settlePin(ctx, "park IPFS pin "+cid, qCASPinPark, cid, owner)
}

// CASPinPending implements store.Executor.
func (e executor) CASPinPending(ctx context.Context) (int, error) {
	var n int
	if err := e.r.QueryRowContext(ctx, qCASPinPending).Scan(&n); err != nil {
		return 0, fmt.Errorf("count IPFS pins: %w", err)
	}
	return n, nil
}

// CASList implements store.Executor.
func (e executor) CASList(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := e.r.QueryContext(ctx, qCASList, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list CAS: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cid string
		if err := rows.Scan(&cid); err != nil {
			return nil, fmt.Errorf("list CAS: %w", err)
		}
		out = append(out, cid)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list CAS: %w", err)
	}
	return out, nil
}
