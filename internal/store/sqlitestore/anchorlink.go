package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

// AnchorNextToPublish implements store.Executor. SQLite has one writer, so the transaction that
// reads the row already excludes every other publisher until it commits.
func (e executor) AnchorNextToPublish(ctx context.Context) (store.Anchor, error) {
	a, err := scanAnchor(e.r.QueryRowContext(ctx, qAnchorNextToPublish))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("next anchor to publish: %w", store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("next anchor to publish: %w", err)
	}
	return a, nil
}

// AnchorMarkPublished implements store.Executor.
func (e executor) AnchorMarkPublished(ctx context.Context, seq int64, hashlink string) error {
	res, err := e.w.ExecContext(ctx, qAnchorMarkPublished, hashlink, nowMicros(), seq)
	if err != nil {
		return fmt.Errorf("mark anchor %d published: %w", seq, interpretError(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("mark anchor %d published: %w", seq, store.ErrNotFound)
	}
	return nil
}

// AnchorsByHashlink implements store.Executor.
func (e executor) AnchorsByHashlink(ctx context.Context, hashlinks []string) (map[string]int64, error) {
	out := make(map[string]int64, len(hashlinks))
	for start := 0; start < len(hashlinks); start += maxInList {
		chunk := hashlinks[start:min(start+maxInList, len(hashlinks))]
		args := make([]any, len(chunk))
		for i, h := range chunk {
			args[i] = h
		}
		err := e.collect(ctx, fmt.Sprintf(qAnchorsByHashlink, placeholders(len(chunk))), args, func(rows *sql.Rows) error {
			var h string
			var seq int64
			if err := rows.Scan(&h, &seq); err != nil {
				return err
			}
			out[h] = seq
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("anchors by hashlink: %w", err)
		}
	}
	return out, nil
}

// DIDLatestAnchors implements store.Executor.
func (e executor) DIDLatestAnchors(ctx context.Context, suffixes []string, beforeSeq int64) (map[string]store.AnchorRef, error) {
	if !e.layout.enterSuffixRead() {
		out, err := e.latestAnchorsByPositions(ctx, suffixes, beforeSeq)
		if err != nil {
			return nil, fmt.Errorf("latest anchors of %d DIDs: %w", len(suffixes), err)
		}
		return out, nil
	}
	defer e.layout.leaveSuffixRead()
	out := make(map[string]store.AnchorRef, len(suffixes))
	for start := 0; start < len(suffixes); start += maxInList {
		chunk := suffixes[start:min(start+maxInList, len(suffixes))]
		args := make([]any, 0, len(chunk)+1)
		for _, s := range chunk {
			args = append(args, s)
		}
		args = append(args, beforeSeq)
		err := e.collect(ctx, fmt.Sprintf(qDIDLatestAnchors, placeholders(len(chunk))), args, func(rows *sql.Rows) error {
			var s string
			var ref store.AnchorRef
			if err := rows.Scan(&s, &ref.Seq, &ref.Hashlink); err != nil {
				return err
			}
			out[s] = ref
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("latest anchors of %d DIDs: %w", len(suffixes), err)
		}
	}
	return out, nil
}

// WaitingAnchorInsert implements store.Executor.
func (e executor) WaitingAnchorInsert(ctx context.Context, w store.WaitingAnchor) error {
	if _, err := e.w.ExecContext(ctx, qWaitingAnchorInsert, w.Hashlink, w.Origin, w.Sender, w.Live, w.WaitingFor,
		w.Event, nowMicros()); err != nil {
		return fmt.Errorf("record waiting anchor %s: %w", w.Hashlink, err)
	}
	return nil
}

// WaitingAnchorReady implements store.Executor.
func (e executor) WaitingAnchorReady(ctx context.Context, limit int) ([]store.WaitingAnchor, error) {
	var out []store.WaitingAnchor
	err := e.collect(ctx, qWaitingAnchorReady, []any{limit}, func(rows *sql.Rows) error {
		var w store.WaitingAnchor
		var created int64
		if err := rows.Scan(&w.Hashlink, &w.Origin, &w.Sender, &w.Live, &w.WaitingFor, &w.Event, &created); err != nil {
			return err
		}
		w.CreatedAt = fromMicros(created)
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ready waiting anchors: %w", err)
	}
	return out, nil
}

// WaitingAnchorUpdate implements store.Executor.
func (e executor) WaitingAnchorUpdate(ctx context.Context, hashlink, waitingFor string) error {
	res, err := e.w.ExecContext(ctx, qWaitingAnchorUpdate, waitingFor, hashlink)
	if err != nil {
		return fmt.Errorf("update waiting anchor %s: %w", hashlink, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update waiting anchor %s: %w", hashlink, store.ErrNotFound)
	}
	return nil
}

// WaitingAnchorDelete implements store.Executor.
func (e executor) WaitingAnchorDelete(ctx context.Context, hashlink string) error {
	res, err := e.w.ExecContext(ctx, qWaitingAnchorDelete, hashlink)
	if err != nil {
		return fmt.Errorf("delete waiting anchor %s: %w", hashlink, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete waiting anchor %s: %w", hashlink, store.ErrNotFound)
	}
	return nil
}

// WaitingAnchorCount implements store.Executor.
func (e executor) WaitingAnchorCount(ctx context.Context, origin string) (int, error) {
	var n int
	if err := e.r.QueryRowContext(ctx, qWaitingAnchorCount, origin, origin).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting anchors: %w", err)
	}
	return n, nil
}

// collect runs a read query and hands each row to scan.
func (e executor) collect(ctx context.Context, q string, args []any, scan func(rows *sql.Rows) error) error {
	rows, err := e.r.QueryContext(ctx, q, args...)
	return eachRow(rows, err, scan)
}
