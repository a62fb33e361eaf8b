package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

const (
	qCASPinQueue = `INSERT INTO cas_pins (cid) SELECT unnest($1::text[])
		ON CONFLICT (cid) DO NOTHING`
	qCASPinRequeue = `INSERT INTO cas_pins (cid) SELECT unnest($1::text[])
		ON CONFLICT (cid) DO UPDATE SET status = 'queued', due_at = now(), claimed_by = '', claim_until = now()`
	// qCASPinClaim locks the rows it picks and skips rows other claimers hold locked.
	qCASPinClaim = `UPDATE cas_pins SET claimed_by = $1, claim_until = now() + $2 * interval '1 microsecond'
		WHERE cid IN (
			SELECT cid FROM cas_pins
			WHERE status = 'queued' AND due_at <= now() AND (claimed_by = '' OR claim_until < now())
			ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING cid, attempts, history`
	qCASPinDone = `UPDATE cas_pins SET status = 'done', claimed_by = '' WHERE cid = $1 AND claimed_by = $2`
	qCASPinFail = `UPDATE cas_pins SET attempts = attempts + 1, history = $3::jsonb, claimed_by = '',
		due_at = now() + $4 * interval '1 microsecond' WHERE cid = $1 AND claimed_by = $2`
	qCASPinPark    = `UPDATE cas_pins SET status = 'parked', claimed_by = '' WHERE cid = $1 AND claimed_by = $2`
	qCASPinPending = `SELECT count(*) FROM cas_pins WHERE status <> 'done'`
	qCASList       = `SELECT cid FROM cas_objects WHERE cid > $1 ORDER BY cid LIMIT $2`
)

// CASPinQueue implements store.Executor.
func (e executor) CASPinQueue(ctx context.Context, cids []string, requeue bool) error {
	if len(cids) == 0 {
		return nil
	}
	q := qCASPinQueue
	if requeue {
		q = qCASPinRequeue
	}
	if _, err := e.q.Exec(ctx, q, cids); err != nil {
		return fmt.Errorf("queue %d files for IPFS: %w", len(cids), interpretError(err))
	}
	return nil
}

// CASPinClaim implements store.Executor.
func (e executor) CASPinClaim(ctx context.Context, p store.CASPinClaimParams) ([]store.CASPin, error) {
	rows, err := e.q.Query(ctx, qCASPinClaim, p.Owner, p.TTL.Microseconds(), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim IPFS pins: %w", err)
	}
	var out []store.CASPin
	var pin store.CASPin
	var hist []byte
	if _, err := pgx.ForEachRow(rows, []any{&pin.CID, &pin.Attempts, &hist}, func() error {
		pin.History = parseHistory(hist)
		out = append(out, pin)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("claim IPFS pins: %w", err)
	}
	return out, nil
}

func (e executor) settlePin(ctx context.Context, what, q string, args ...any) error {
	tag, err := e.q.Exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, interpretError(err))
	}
	if tag.RowsAffected() != 1 {
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
	return e.settlePin(ctx, "record failed IPFS add "+p.CID, qCASPinFail, p.CID, p.Owner, historyJSON(p.History), p.Retry.Microseconds())
}

// CASPinPark implements store.Executor.
func (e executor) CASPinPark(ctx context.Context, cid, owner string) error {
	return e.settlePin(ctx, "park IPFS pin "+cid, qCASPinPark, cid, owner)
}

// CASPinPending implements store.Executor.
func (e executor) CASPinPending(ctx context.Context) (int, error) {
	var n int
	if err := e.q.QueryRow(ctx, qCASPinPending).Scan(&n); err != nil {
		return 0, fmt.Errorf("count IPFS pins: %w", err)
	}
	return n, nil
}

// CASList implements store.Executor.
func (e executor) CASList(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := e.q.Query(ctx, qCASList, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list CAS: %w", err)
	}
	var out []string
	var cid string
	if _, err := pgx.ForEachRow(rows, []any{&cid}, func() error { out = append(out, cid); return nil }); err != nil {
		return nil, fmt.Errorf("list CAS: %w", err)
	}
	return out, nil
}
