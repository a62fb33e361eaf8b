package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/anchord/anchord/internal/store"
)

// AnchorInsert implements store.Executor.
func (e executor) AnchorInsert(ctx context.Context, p store.AnchorInsertParams) (store.Anchor, error) {
	now := nowMicros()
	var completed sql.NullInt64
	if p.Status == store.AnchorCompleted {
		completed = sql.NullInt64{Int64: now, Valid: true}
	}
	var observed sql.NullInt64
	if p.Observed {
		observed = sql.NullInt64{Int64: now, Valid: true}
	}
	a, err := scanAnchor(e.w.QueryRowContext(ctx, qAnchorInsert, p.AnchorString, p.CoreIndexCID, p.OpCount,
		p.Backend, p.Status, p.Record, p.Signature, now, completed, observed, nullString(p.Origin), nullString(p.Hashlink), p.IssuedAt))
	if err != nil {
		return a, fmt.Errorf("record anchor %s: %w", p.AnchorString, interpretError(err))
	}
	return a, nil
}

// AnchorGet implements store.Executor.
func (e executor) AnchorGet(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.r.QueryRowContext(ctx, qAnchorGet, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("get anchor %d: %w", seq, store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("get anchor %d: %w", seq, err)
	}
	return a, nil
}

// AnchorList implements store.Executor.
func (e executor) AnchorList(ctx context.Context, p store.AnchorListParams) ([]store.Anchor, error) {
	rows, err := e.r.QueryContext(ctx, qAnchorList, p.AfterSeq, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list anchors: %w", err)
	}
	defer rows.Close()
	var out []store.Anchor
	for rows.Next() {
		a, err := scanAnchor(rows)
		if err != nil {
			return nil, fmt.Errorf("list anchors: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list anchors: %w", err)
	}
	return out, nil
}

// AnchorListLatest implements store.Executor.
func (e executor) AnchorListLatest(ctx context.Context, p store.AnchorListLatestParams) ([]store.Anchor, error) {
	rows, err := e.r.QueryContext(ctx, qAnchorListLatest, p.Before(), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list latest anchors: %w", err)
	}
	defer rows.Close()
	var out []store.Anchor
	for rows.Next() {
		a, err := scanAnchor(rows)
		if err != nil {
			return nil, fmt.Errorf("list latest anchors: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list latest anchors: %w", err)
	}
	return out, nil
}

// AnchorNextToObserve implements store.Executor. SQLite has one writer, so the transaction that
// reads the row already excludes every other observer until it commits.
func (e executor) AnchorNextToObserve(ctx context.Context) (store.Anchor, error) {
	a, err := scanAnchor(e.r.QueryRowContext(ctx, qAnchorNextToObserve))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("next anchor to observe: %w", store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("next anchor to observe: %w", err)
	}
	return a, nil
}

// AnchorMarkObserved implements store.Executor.
func (e executor) AnchorMarkObserved(ctx context.Context, seq int64) error {
	res, err := e.w.ExecContext(ctx, qAnchorMarkObserved, nowMicros(), seq)
	if err != nil {
		return fmt.Errorf("mark anchor %d observed: %w", seq, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("mark anchor %d observed: %w", seq, store.ErrNotFound)
	}
	return nil
}

func scanAnchor(r scanner) (store.Anchor, error) {
	var a store.Anchor
	var created int64
	var completed, observed, published sql.NullInt64
	var origin, hashlink sql.NullString
	var issued sql.NullInt64
	err := r.Scan(&a.Seq, &a.AnchorString, &a.CoreIndexCID, &a.OpCount, &a.Backend, &a.Status, &a.Record,
		&a.Signature, &a.Error, &created, &completed, &observed, &origin, &hashlink, &published, &issued)
	a.IssuedAt = issued.Int64
	a.CreatedAt = fromMicros(created)
	a.CompletedAt = fromNullMicros(completed)
	a.ObservedAt = fromNullMicros(observed)
	a.PublishedAt = fromNullMicros(published)
	a.Origin, a.Hashlink = origin.String, hashlink.String
	return a, err
}

// rowsPerInsert bounds the rows of one multi-row INSERT: 4 values each, well within SQLite's
// variable limit, and large enough that statement overhead stops mattering.
const rowsPerInsert = 200

// DIDOperationInsertMany implements store.Executor with multi-row statements. The statement of
// a full chunk is prepared once per call: a batch of 10,000 operations is 50 of them, and
// compiling each afresh was about a tenth of the observer's insert.
func (e executor) DIDOperationInsertMany(ctx context.Context, ops []store.DIDOperation) error {
	err := e.batch(ctx, func(tx *sql.Tx) error {
		var full *sql.Stmt
		defer func() {
			if full != nil {
				_ = full.Close()
			}
		}()
		args := make([]any, 0, 4*min(rowsPerInsert, len(ops)))
		for start := 0; start < len(ops); start += rowsPerInsert {
			chunk := ops[start:min(start+rowsPerInsert, len(ops))]
			args = args[:0]
			for _, op := range chunk {
				args = append(args, e.layout.rowSuffix(op.Suffix), op.AnchorSeq, op.Index, op.Type)
			}
			if len(chunk) < rowsPerInsert {
				if _, err := tx.ExecContext(ctx, didOperationInsert(len(chunk)), args...); err != nil {
					return err
				}
				continue
			}
			if full == nil {
				var err error
				if full, err = tx.PrepareContext(ctx, didOperationInsert(rowsPerInsert)); err != nil {
					return err
				}
			}
			if _, err := full.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index %d operations: %w", len(ops), err)
	}
	return nil
}

// didOperationInsert returns the INSERT of n index rows.
func didOperationInsert(n int) string {
	return fmt.Sprintf(qDIDOperationInsert, strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, x''),", n), ","))
}

// DIDOperationList implements store.Executor.
func (e executor) DIDOperationList(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	// The read is one index lookup of a few microseconds, and readers of a WAL database wait for
	// no lock, so there is nothing to interrupt once it runs; on a context that can be cancelled,
	// database/sql and the driver would each start a goroutine to watch it, per query, which at
	// tens of thousands of resolutions a second was a twentieth of the server's CPU. A cancelled
	// caller is still refused here, but no longer while it waits for a reader connection.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
	}
	ctx = context.WithoutCancel(ctx)
	if !e.layout.enterSuffixRead() {
		out, err := e.listByPositions(ctx, suffix)
		if err != nil {
			return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
		}
		return out, nil
	}
	defer e.layout.leaveSuffixRead()
	var rows *sql.Rows
	var err error
	if e.didOps != nil {
		rows, err = e.didOps.QueryContext(ctx, suffix)
	} else {
		rows, err = e.r.QueryContext(ctx, qDIDOperationList, suffix)
	}
	if err != nil {
		return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
	}
	defer rows.Close()
	var out []store.DIDOperation
	for rows.Next() {
		var op store.DIDOperation
		if err := rows.Scan(&op.Suffix, &op.AnchorSeq, &op.Index, &op.Type, &op.Request, &op.Origin, &op.AnchorString, &op.AnchorIssuedAt); err != nil {
			return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
		}
		if len(op.Request) == 0 {
			op.Request = nil // not kept: rebuilt from the batch files
		}
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
	}
	return out, nil
}

// DIDOperationLists implements store.Executor. Embedded, a read is a function call, not a round
// trip, so each suffix is read on its own.
func (e executor) DIDOperationLists(ctx context.Context, suffixes []string) (map[string][]store.DIDOperation, error) {
	out := make(map[string][]store.DIDOperation)
	for _, s := range suffixes {
		list, err := e.DIDOperationList(ctx, s)
		if err != nil {
			return nil, err
		}
		if len(list) > 0 {
			out[s] = list
		}
	}
	return out, nil
}

// maxInList bounds the placeholders of one IN list (SQLite allows 32,766 variables).
const maxInList = 1000

// DIDLastAnchors implements store.Executor.
func (e executor) DIDLastAnchors(ctx context.Context, suffixes []string) (map[string]int64, error) {
	if !e.layout.enterSuffixRead() {
		out, err := e.lastAnchorsByPositions(ctx, suffixes)
		if err != nil {
			return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
		}
		return out, nil
	}
	defer e.layout.leaveSuffixRead()
	out := make(map[string]int64)
	for start := 0; start < len(suffixes); start += maxInList {
		chunk := suffixes[start:min(start+maxInList, len(suffixes))]
		args := make([]any, len(chunk))
		for i, s := range chunk {
			args[i] = s
		}
		q := fmt.Sprintf(qDIDLastAnchors, strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ","))
		rows, err := e.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
		}
		for rows.Next() {
			var s string
			var seq int64
			if err := rows.Scan(&s, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
			}
			out[s] = seq
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
		}
	}
	return out, nil
}

// DIDSuffixList implements store.Executor: each suffix once, in suffix order, the cursor the
// last of them; through the operations' suffix index or, without it, the states'.
func (e executor) DIDSuffixList(ctx context.Context, after string, limit int) ([]string, string, error) {
	if !e.layout.enterSuffixRead() {
		out, next, err := e.suffixesOfStates(ctx, after, limit)
		if err != nil {
			return nil, "", fmt.Errorf("list DID suffixes: %w", err)
		}
		return out, next, nil
	}
	defer e.layout.leaveSuffixRead()
	rows, err := e.r.QueryContext(ctx, qDIDSuffixList, after, limit)
	if err != nil {
		return nil, "", fmt.Errorf("list DID suffixes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, "", fmt.Errorf("list DID suffixes: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list DID suffixes: %w", err)
	}
	if len(out) == 0 {
		return nil, after, nil
	}
	return out, out[len(out)-1], nil
}

// nullString stores "" as NULL: unique indexes then admit any number of rows without a value.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
