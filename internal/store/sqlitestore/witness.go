package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

const (
	qWitnessAnchorColumns = `anchor_seq, vc_id, hashlink, link, credential, origin_proof, created_at, check_at`
	qWitnessAnchorInsert  = `INSERT INTO witness_anchors (` + qWitnessAnchorColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qWitnessAnchorGet     = `SELECT ` + qWitnessAnchorColumns + ` FROM witness_anchors WHERE anchor_seq = ?`
	qWitnessAnchorByVCID  = `SELECT ` + qWitnessAnchorColumns + ` FROM witness_anchors WHERE vc_id = ?`
	qWitnessAnchorsDue    = `SELECT w.anchor_seq, w.vc_id, w.hashlink, w.link, w.credential, w.origin_proof, w.created_at, w.check_at
		FROM witness_anchors w JOIN anchors a ON a.seq = w.anchor_seq
		WHERE a.status = 'pending' AND w.check_at <= ? ORDER BY w.check_at, w.anchor_seq LIMIT ?`
	qWitnessAnchorSetCheck = `UPDATE witness_anchors SET check_at = ? WHERE anchor_seq = ?`
	qWitnessAnchorComplete = `UPDATE anchors SET status = 'completed', completed_at = ?,
			hashlink = (SELECT hashlink FROM witness_anchors WHERE anchor_seq = ?)
		WHERE seq = ? AND status = 'pending' AND seq IN (SELECT anchor_seq FROM witness_anchors)
		RETURNING ` + qAnchorColumns

	qAnchorWitnessColumns = `anchor_seq, actor, batch, system, has_log, selected, offer_id, offered_at, offer_end, proof, proof_at,
		log_origin, log_index, log_deadline, log_verified_at, log_broken_at`
	qAnchorWitnessUpsert = `INSERT INTO anchor_witnesses (anchor_seq, actor, batch, system, has_log, selected, offer_id, offered_at, offer_end)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (anchor_seq, actor) DO UPDATE SET batch = excluded.batch, system = excluded.system,
			has_log = excluded.has_log, selected = excluded.selected, offer_id = excluded.offer_id,
			offered_at = excluded.offered_at, offer_end = excluded.offer_end`
	qAnchorWitnessList     = `SELECT ` + qAnchorWitnessColumns + ` FROM anchor_witnesses WHERE anchor_seq = ? ORDER BY actor`
	qAnchorWitnessAddProof = `UPDATE anchor_witnesses SET proof = ?, proof_at = ? WHERE anchor_seq = ? AND actor = ? AND proof IS NULL`
	qAnchorWitnessExists   = `SELECT 1 FROM anchor_witnesses WHERE anchor_seq = ? AND actor = ?`
	qAnchorWitnessPromise  = `UPDATE anchor_witnesses SET log_origin = ?, log_index = ?, log_deadline = ?
		WHERE anchor_seq = ? AND actor = ? AND proof IS NOT NULL`
	qLogPromisesUnsettled = `SELECT ` + qAnchorWitnessColumns + ` FROM anchor_witnesses
		WHERE log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL
		ORDER BY proof_at, anchor_seq, actor LIMIT ?`
	qLogPromiseVerified = `UPDATE anchor_witnesses SET log_verified_at = ?
		WHERE anchor_seq = ? AND actor = ? AND log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL`
	qLogPromiseBroken = `UPDATE anchor_witnesses SET log_broken_at = ?
		WHERE anchor_seq = ? AND actor = ? AND log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL`
	qLogPromisesBroken = `SELECT actor, count(*) FROM anchor_witnesses WHERE log_broken_at IS NOT NULL GROUP BY actor`

	qWitnessedColumns = `offer_id, offerer, hashlink, vc_id, accept_id, proof, log_index, created_at`
	qWitnessedInsert  = `INSERT INTO witnessed (` + qWitnessedColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qWitnessedGet     = `SELECT ` + qWitnessedColumns + ` FROM witnessed WHERE offer_id = ?`
)

// WitnessAnchorInsert implements store.Executor.
func (e executor) WitnessAnchorInsert(ctx context.Context, a store.WitnessAnchor, checkAfter time.Duration) error {
	now := nowMicros()
	_, err := e.w.ExecContext(ctx, qWitnessAnchorInsert, a.Seq, a.VCID, a.Hashlink, a.Link, a.Credential, a.OriginProof,
		now, now+checkAfter.Microseconds())
	if err != nil {
		return fmt.Errorf("insert witness anchor %d: %w", a.Seq, interpretError(err))
	}
	return nil
}

// WitnessAnchorGet implements store.Executor.
func (e executor) WitnessAnchorGet(ctx context.Context, seq int64) (store.WitnessAnchor, error) {
	a, err := scanWitnessAnchor(e.r.QueryRowContext(ctx, qWitnessAnchorGet, seq))
	if err != nil {
		return a, fmt.Errorf("get witness anchor %d: %w", seq, err)
	}
	return a, nil
}

// WitnessAnchorByVCID implements store.Executor.
func (e executor) WitnessAnchorByVCID(ctx context.Context, vcID string) (store.WitnessAnchor, error) {
	a, err := scanWitnessAnchor(e.r.QueryRowContext(ctx, qWitnessAnchorByVCID, vcID))
	if err != nil {
		return a, fmt.Errorf("get witness anchor of credential %q: %w", vcID, err)
	}
	return a, nil
}

// WitnessAnchorsDue implements store.Executor.
func (e executor) WitnessAnchorsDue(ctx context.Context, limit int) ([]store.WitnessAnchor, error) {
	rows, err := e.r.QueryContext(ctx, qWitnessAnchorsDue, nowMicros(), limit)
	if err != nil {
		return nil, fmt.Errorf("list due witness anchors: %w", err)
	}
	defer rows.Close()
	var out []store.WitnessAnchor
	for rows.Next() {
		a, err := scanWitnessAnchor(rows)
		if err != nil {
			return nil, fmt.Errorf("list due witness anchors: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list due witness anchors: %w", err)
	}
	return out, nil
}

// WitnessAnchorComplete implements store.Executor.
func (e executor) WitnessAnchorComplete(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.w.QueryRowContext(ctx, qWitnessAnchorComplete, nowMicros(), seq, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("complete witness anchor %d: %w", seq, store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("complete witness anchor %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// WitnessAnchorSetCheck implements store.Executor.
func (e executor) WitnessAnchorSetCheck(ctx context.Context, seq int64, after time.Duration) error {
	res, err := e.w.ExecContext(ctx, qWitnessAnchorSetCheck, nowMicros()+after.Microseconds(), seq)
	if err != nil {
		return fmt.Errorf("set check of witness anchor %d: %w", seq, interpretError(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set check of witness anchor %d: %w", seq, store.ErrNotFound)
	}
	return nil
}

// AnchorWitnessUpsert implements store.Executor.
func (e executor) AnchorWitnessUpsert(ctx context.Context, w store.AnchorWitness) error {
	_, err := e.w.ExecContext(ctx, qAnchorWitnessUpsert, w.Seq, w.Actor, w.Batch, w.System, w.HasLog, w.Selected,
		nullString(w.OfferID), nullMicros(w.OfferedAt), nullMicros(w.OfferEnd))
	if err != nil {
		return fmt.Errorf("record witness %s of anchor %d: %w", w.Actor, w.Seq, interpretError(err))
	}
	return nil
}

// AnchorWitnessList implements store.Executor.
func (e executor) AnchorWitnessList(ctx context.Context, seq int64) ([]store.AnchorWitness, error) {
	out, err := e.anchorWitnesses(ctx, qAnchorWitnessList, seq)
	if err != nil {
		return nil, fmt.Errorf("list witnesses of anchor %d: %w", seq, err)
	}
	return out, nil
}

func (e executor) anchorWitnesses(ctx context.Context, query string, args ...any) ([]store.AnchorWitness, error) {
	rows, err := e.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.AnchorWitness
	for rows.Next() {
		var w store.AnchorWitness
		var offer, logOrigin sql.NullString
		var offered, end, proofAt, logIndex, logDeadline, verified, broken sql.NullInt64
		if err := rows.Scan(&w.Seq, &w.Actor, &w.Batch, &w.System, &w.HasLog, &w.Selected, &offer, &offered, &end,
			&w.Proof, &proofAt, &logOrigin, &logIndex, &logDeadline, &verified, &broken); err != nil {
			return nil, err
		}
		w.OfferID = offer.String
		w.OfferedAt, w.OfferEnd, w.ProofAt = fromNullMicros(offered), fromNullMicros(end), fromNullMicros(proofAt)
		if logIndex.Valid && logOrigin.Valid && logDeadline.Valid {
			w.Promise = &store.LogPromise{Origin: logOrigin.String, Index: logIndex.Int64, Deadline: fromMicros(logDeadline.Int64)}
		}
		w.PromiseVerifiedAt, w.PromiseBrokenAt = fromNullMicros(verified), fromNullMicros(broken)
		out = append(out, w)
	}
	return out, rows.Err()
}

// AnchorWitnessAddProof implements store.Executor.
func (e executor) AnchorWitnessAddProof(ctx context.Context, seq int64, actor string, proof []byte) (bool, error) {
	res, err := e.w.ExecContext(ctx, qAnchorWitnessAddProof, proof, nowMicros(), seq, actor)
	if err != nil {
		return false, fmt.Errorf("add proof of %s to anchor %d: %w", actor, seq, interpretError(err))
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	var one int
	err = e.w.QueryRowContext(ctx, qAnchorWitnessExists, seq, actor).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("add proof of %s to anchor %d: %w", actor, seq, store.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("add proof of %s to anchor %d: %w", actor, seq, err)
	}
	return false, nil
}

// AnchorWitnessPromise implements store.Executor.
func (e executor) AnchorWitnessPromise(ctx context.Context, seq int64, actor string, p store.LogPromise) error {
	res, err := e.w.ExecContext(ctx, qAnchorWitnessPromise, p.Origin, p.Index, micros(p.Deadline), seq, actor)
	if err != nil {
		return fmt.Errorf("record log promise of %s for anchor %d: %w", actor, seq, interpretError(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record log promise of %s for anchor %d: no proof: %w", actor, seq, store.ErrNotFound)
	}
	return nil
}

// LogPromisesUnsettled implements store.Executor.
func (e executor) LogPromisesUnsettled(ctx context.Context, limit int) ([]store.AnchorWitness, error) {
	out, err := e.anchorWitnesses(ctx, qLogPromisesUnsettled, limit)
	if err != nil {
		return nil, fmt.Errorf("list unsettled log promises: %w", err)
	}
	return out, nil
}

// LogPromiseSettle implements store.Executor.
func (e executor) LogPromiseSettle(ctx context.Context, seq int64, actor string, broken bool) (bool, error) {
	q := qLogPromiseVerified
	if broken {
		q = qLogPromiseBroken
	}
	res, err := e.w.ExecContext(ctx, q, nowMicros(), seq, actor)
	if err != nil {
		return false, fmt.Errorf("settle log promise of %s for anchor %d: %w", actor, seq, interpretError(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("settle log promise of %s for anchor %d: %w", actor, seq, err)
	}
	return n == 1, nil
}

// LogPromisesBroken implements store.Executor.
func (e executor) LogPromisesBroken(ctx context.Context) (map[string]int64, error) {
	rows, err := e.r.QueryContext(ctx, qLogPromisesBroken)
	if err != nil {
		return nil, fmt.Errorf("count broken log promises: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var actor string
		var n int64
		if err := rows.Scan(&actor, &n); err != nil {
			return nil, fmt.Errorf("count broken log promises: %w", err)
		}
		out[actor] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count broken log promises: %w", err)
	}
	return out, nil
}

// WitnessedInsert implements store.Executor.
func (e executor) WitnessedInsert(ctx context.Context, w store.Witnessed) error {
	var index sql.NullInt64
	if w.LogIndex != nil {
		index = sql.NullInt64{Int64: *w.LogIndex, Valid: true}
	}
	_, err := e.w.ExecContext(ctx, qWitnessedInsert, w.OfferID, w.Offerer, w.Hashlink, w.VCID, w.AcceptID, w.Proof, index, nowMicros())
	if err != nil {
		return fmt.Errorf("record witnessed offer %s: %w", w.OfferID, interpretError(err))
	}
	return nil
}

// WitnessedGet implements store.Executor.
func (e executor) WitnessedGet(ctx context.Context, offerID string) (store.Witnessed, error) {
	var w store.Witnessed
	var index sql.NullInt64
	var created int64
	err := e.r.QueryRowContext(ctx, qWitnessedGet, offerID).Scan(&w.OfferID, &w.Offerer, &w.Hashlink, &w.VCID, &w.AcceptID,
		&w.Proof, &index, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return w, fmt.Errorf("get witnessed offer %s: %w", offerID, store.ErrNotFound)
	}
	if err != nil {
		return w, fmt.Errorf("get witnessed offer %s: %w", offerID, err)
	}
	if index.Valid {
		w.LogIndex = &index.Int64
	}
	w.CreatedAt = fromMicros(created)
	return w, nil
}

func scanWitnessAnchor(r scanner) (store.WitnessAnchor, error) {
	var a store.WitnessAnchor
	var created, check int64
	err := r.Scan(&a.Seq, &a.VCID, &a.Hashlink, &a.Link, &a.Credential, &a.OriginProof, &created, &check)
	if errors.Is(err, sql.ErrNoRows) {
		return a, store.ErrNotFound
	}
	if err != nil {
		return a, err
	}
	a.CreatedAt, a.CheckAt = fromMicros(created), fromMicros(check)
	return a, nil
}

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*t), Valid: true}
}
