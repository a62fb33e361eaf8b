package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

const (
	qWitnessAnchorColumns = `anchor_seq, vc_id, hashlink, link, credential, origin_proof, created_at, check_at`
	qWitnessAnchorInsert  = `INSERT INTO witness_anchors (anchor_seq, vc_id, hashlink, link, credential, origin_proof, check_at)
		VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`
	qWitnessAnchorGet    = `SELECT ` + qWitnessAnchorColumns + ` FROM witness_anchors WHERE anchor_seq = $1`
	qWitnessAnchorByVCID = `SELECT ` + qWitnessAnchorColumns + ` FROM witness_anchors WHERE vc_id = $1`
	qWitnessAnchorsDue   = `SELECT w.anchor_seq, w.vc_id, w.hashlink, w.link, w.credential, w.origin_proof, w.created_at, w.check_at
		FROM witness_anchors w JOIN anchors a ON a.seq = w.anchor_seq
		WHERE a.status = 'pending' AND w.check_at <= now() ORDER BY w.check_at, w.anchor_seq LIMIT $1`
	qWitnessAnchorSetCheck = `UPDATE witness_anchors SET check_at = now() + make_interval(secs => $2) WHERE anchor_seq = $1`
	qWitnessAnchorComplete = `UPDATE anchors a SET status = 'completed', completed_at = now(), hashlink = w.hashlink
		FROM witness_anchors w WHERE a.seq = $1 AND w.anchor_seq = a.seq AND a.status = 'pending'
		RETURNING a.seq, a.anchor_string, a.core_index_cid, a.op_count, a.backend, a.status, a.record, a.signature,
			a.error, a.created_at, a.completed_at, a.observed_at, a.origin, a.hashlink, a.published_at, a.issued_at`

	qAnchorWitnessColumns = `anchor_seq, actor, batch, system, has_log, selected, offer_id, offered_at, offer_end, proof, proof_at,
		log_origin, log_index, log_deadline, log_verified_at, log_broken_at`
	qAnchorWitnessUpsert = `INSERT INTO anchor_witnesses (anchor_seq, actor, batch, system, has_log, selected, offer_id, offered_at, offer_end)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (anchor_seq, actor) DO UPDATE SET batch = excluded.batch, system = excluded.system,
			has_log = excluded.has_log, selected = excluded.selected, offer_id = excluded.offer_id,
			offered_at = excluded.offered_at, offer_end = excluded.offer_end`
	qAnchorWitnessList     = `SELECT ` + qAnchorWitnessColumns + ` FROM anchor_witnesses WHERE anchor_seq = $1 ORDER BY actor`
	qAnchorWitnessAddProof = `UPDATE anchor_witnesses SET proof = $3, proof_at = now() WHERE anchor_seq = $1 AND actor = $2 AND proof IS NULL`
	qAnchorWitnessExists   = `SELECT 1 FROM anchor_witnesses WHERE anchor_seq = $1 AND actor = $2`
	qAnchorWitnessPromise  = `UPDATE anchor_witnesses SET log_origin = $3, log_index = $4, log_deadline = $5
		WHERE anchor_seq = $1 AND actor = $2 AND proof IS NOT NULL`
	qLogPromisesUnsettled = `SELECT ` + qAnchorWitnessColumns + ` FROM anchor_witnesses
		WHERE log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL
		ORDER BY proof_at, anchor_seq, actor LIMIT $1`
	qLogPromiseVerified = `UPDATE anchor_witnesses SET log_verified_at = now()
		WHERE anchor_seq = $1 AND actor = $2 AND log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL`
	qLogPromiseBroken = `UPDATE anchor_witnesses SET log_broken_at = now()
		WHERE anchor_seq = $1 AND actor = $2 AND log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL`
	qLogPromisesBroken = `SELECT actor, count(*) FROM anchor_witnesses WHERE log_broken_at IS NOT NULL GROUP BY actor`

	qWitnessedColumns = `offer_id, offerer, hashlink, vc_id, accept_id, proof, log_index, created_at`
	qWitnessedInsert  = `INSERT INTO witnessed (offer_id, offerer, hashlink, vc_id, accept_id, proof, log_index)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qWitnessedGet = `SELECT ` + qWitnessedColumns + ` FROM witnessed WHERE offer_id = $1`
)

// WitnessAnchorInsert implements store.Executor.
func (e executor) WitnessAnchorInsert(ctx context.Context, a store.WitnessAnchor, checkAfter time.Duration) error {
	_, err := e.q.Exec(ctx, qWitnessAnchorInsert, a.Seq, a.VCID, a.Hashlink, a.Link, a.Credential, a.OriginProof, checkAfter.Seconds())
	if err != nil {
		return fmt.Errorf("insert witness anchor %d: %w", a.Seq, interpretError(err))
	}
	return nil
}

// WitnessAnchorGet implements store.Executor.
func (e executor) WitnessAnchorGet(ctx context.Context, seq int64) (store.WitnessAnchor, error) {
	a, err := scanWitnessAnchor(e.q.QueryRow(ctx, qWitnessAnchorGet, seq))
	if err != nil {
		return a, fmt.Errorf("get witness anchor %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// WitnessAnchorByVCID implements store.Executor.
func (e executor) WitnessAnchorByVCID(ctx context.Context, vcID string) (store.WitnessAnchor, error) {
	a, err := scanWitnessAnchor(e.q.QueryRow(ctx, qWitnessAnchorByVCID, vcID))
	if err != nil {
		return a, fmt.Errorf("get witness anchor of credential %q: %w", vcID, interpretError(err))
	}
	return a, nil
}

// WitnessAnchorsDue implements store.Executor.
func (e executor) WitnessAnchorsDue(ctx context.Context, limit int) ([]store.WitnessAnchor, error) {
	rows, err := e.q.Query(ctx, qWitnessAnchorsDue, limit)
	if err != nil {
		return nil, fmt.Errorf("list due witness anchors: %w", interpretError(err))
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
		return nil, fmt.Errorf("list due witness anchors: %w", interpretError(err))
	}
	return out, nil
}

// WitnessAnchorComplete implements store.Executor.
func (e executor) WitnessAnchorComplete(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qWitnessAnchorComplete, seq))
	if err != nil {
		return a, fmt.Errorf("complete witness anchor %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// WitnessAnchorSetCheck implements store.Executor.
func (e executor) WitnessAnchorSetCheck(ctx context.Context, seq int64, after time.Duration) error {
	tag, err := e.q.Exec(ctx, qWitnessAnchorSetCheck, seq, after.Seconds())
	if err != nil {
		return fmt.Errorf("set check of witness anchor %d: %w", seq, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set check of witness anchor %d: %w", seq, store.ErrNotFound)
	}
	return nil
}

// AnchorWitnessUpsert implements store.Executor.
func (e executor) AnchorWitnessUpsert(ctx context.Context, w store.AnchorWitness) error {
	var offer *string
	if w.OfferID != "" {
		offer = &w.OfferID
	}
	_, err := e.q.Exec(ctx, qAnchorWitnessUpsert, w.Seq, w.Actor, w.Batch, w.System, w.HasLog, w.Selected, offer, w.OfferedAt, w.OfferEnd)
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
	rows, err := e.q.Query(ctx, query, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []store.AnchorWitness
	for rows.Next() {
		var w store.AnchorWitness
		var offer, logOrigin *string
		var logIndex *int64
		var logDeadline *time.Time
		if err := rows.Scan(&w.Seq, &w.Actor, &w.Batch, &w.System, &w.HasLog, &w.Selected, &offer, &w.OfferedAt, &w.OfferEnd,
			&w.Proof, &w.ProofAt, &logOrigin, &logIndex, &logDeadline, &w.PromiseVerifiedAt, &w.PromiseBrokenAt); err != nil {
			return nil, err
		}
		if offer != nil {
			w.OfferID = *offer
		}
		if logIndex != nil && logOrigin != nil && logDeadline != nil {
			w.Promise = &store.LogPromise{Origin: *logOrigin, Index: *logIndex, Deadline: *logDeadline}
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// AnchorWitnessAddProof implements store.Executor.
func (e executor) AnchorWitnessAddProof(ctx context.Context, seq int64, actor string, proof []byte) (bool, error) {
	tag, err := e.q.Exec(ctx, qAnchorWitnessAddProof, seq, actor, proof)
	if err != nil {
		return false, fmt.Errorf("add proof of %s to anchor %d: %w", actor, seq, interpretError(err))
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var one int
	if err := e.q.QueryRow(ctx, qAnchorWitnessExists, seq, actor).Scan(&one); err != nil {
		return false, fmt.Errorf("add proof of %s to anchor %d: %w", actor, seq, interpretError(err))
	}
	return false, nil
}

// AnchorWitnessPromise implements store.Executor.
func (e executor) AnchorWitnessPromise(ctx context.Context, seq int64, actor string, p store.LogPromise) error {
	tag, err := e.q.Exec(ctx, qAnchorWitnessPromise, seq, actor, p.Origin, p.Index, p.Deadline)
	if err != nil {
		return fmt.Errorf("record log promise of %s for anchor %d: %w", actor, seq, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
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
	tag, err := e.q.Exec(ctx, q, seq, actor)
	if err != nil {
		return false, fmt.Errorf("settle log promise of %s for anchor %d: %w", actor, seq, interpretError(err))
	}
	return tag.RowsAffected() == 1, nil
}

// LogPromisesBroken implements store.Executor.
func (e executor) LogPromisesBroken(ctx context.Context) (map[string]int64, error) {
	rows, err := e.q.Query(ctx, qLogPromisesBroken)
	if err != nil {
		return nil, fmt.Errorf("count broken log promises: %w", interpretError(err))
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
		return nil, fmt.Errorf("count broken log promises: %w", interpretError(err))
	}
	return out, nil
}

// WitnessedInsert implements store.Executor.
func (e executor) WitnessedInsert(ctx context.Context, w store.Witnessed) error {
	_, err := e.q.Exec(ctx, qWitnessedInsert, w.OfferID, w.Offerer, w.Hashlink, w.VCID, w.AcceptID, w.Proof, w.LogIndex)
	if err != nil {
		return fmt.Errorf("record witnessed offer %s: %w", w.OfferID, interpretError(err))
	}
	return nil
}

// WitnessedGet implements store.Executor.
func (e executor) WitnessedGet(ctx context.Context, offerID string) (store.Witnessed, error) {
	var w store.Witnessed
	err := e.q.QueryRow(ctx, qWitnessedGet, offerID).Scan(&w.OfferID, &w.Offerer, &w.Hashlink, &w.VCID, &w.AcceptID,
		&w.Proof, &w.LogIndex, &w.CreatedAt)
	if err != nil {
		return w, fmt.Errorf("get witnessed offer %s: %w", offerID, interpretError(err))
	}
	return w, nil
}

func scanWitnessAnchor(r pgx.Row) (store.WitnessAnchor, error) {
	var a store.WitnessAnchor
	err := r.Scan(&a.Seq, &a.VCID, &a.Hashlink, &a.Link, &a.Credential, &a.OriginProof, &a.CreatedAt, &a.CheckAt)
	return a, err
}
