package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// AnchorNextToPublish implements store.Executor.
func (e executor) AnchorNextToPublish(ctx context.Context) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorNextToPublish))
	if err != nil {
		return a, fmt.Errorf("next anchor to publish: %w", interpretError(err))
	}
	return a, nil
}

// AnchorMarkPublished implements store.Executor.
func (e executor) AnchorMarkPublished(ctx context.Context, seq int64, hashlink string) error {
	tag, err := e.q.Exec(ctx, qAnchorMarkPublished, hashlink, seq)
	if err != nil {
		return fmt.Errorf("mark anchor %d published: %w", seq, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("mark anchor %d published: %w", seq, store.ErrNotFound)
	}
	return nil
}

// AnchorsByHashlink implements store.Executor.
func (e executor) AnchorsByHashlink(ctx context.Context, hashlinks []string) (map[string]int64, error) {
	out := make(map[string]int64, len(hashlinks))
	if len(hashlinks) == 0 {
		return out, nil
	}
	rows, err := e.q.Query(ctx, qAnchorsByHashlink, hashlinks)
	if err != nil {
		return nil, fmt.Errorf("anchors by hashlink: %w", err)
	}
	var h string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&h, &seq}, func() error { out[h] = seq; return nil }); err != nil {
		return nil, fmt.Errorf("anchors by hashlink: %w", err)
	}
	return out, nil
}

// DIDLatestAnchors implements store.Executor.
func (e executor) DIDLatestAnchors(ctx context.Context, suffixes []string, beforeSeq int64) (map[string]store.AnchorRef, error) {
	out := make(map[string]store.AnchorRef, len(suffixes))
	if len(suffixes) == 0 {
		return out, nil
	}
	if !e.bySuffix {
		out, err := e.latestAnchorsByPositions(ctx, suffixes, beforeSeq)
		if err != nil {
			return nil, fmt.Errorf("latest anchors of %d DIDs: %w", len(suffixes), err)
		}
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDLatestAnchors, suffixes, beforeSeq)
	if err != nil {
		return nil, fmt.Errorf("latest anchors of %d DIDs: %w", len(suffixes), err)
	}
	var s string
	var ref store.AnchorRef
	if _, err := pgx.ForEachRow(rows, []any{&s, &ref.Seq, &ref.Hashlink}, func() error { out[s] = ref; return nil }); err != nil {
		return nil, fmt.Errorf("latest anchors of %d DIDs: %w", len(suffixes), err)
	}
	return out, nil
}

// WaitingAnchorInsert implements store.Executor.
func (e executor) WaitingAnchorInsert(ctx context.Context, w store.WaitingAnchor) error {
	if _, err := e.q.Exec(ctx, qWaitingAnchorInsert, w.Hashlink, w.Origin, w.Sender, w.Live, w.WaitingFor, w.Event); err != nil {
		return fmt.Errorf("record waiting anchor %s: %w", w.Hashlink, err)
	}
	return nil
}

// WaitingAnchorReady implements store.Executor.
func (e executor) WaitingAnchorReady(ctx context.Context, limit int) ([]store.WaitingAnchor, error) {
	rows, err := e.q.Query(ctx, qWaitingAnchorReady, limit)
	if err != nil {
		return nil, fmt.Errorf("ready waiting anchors: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.WaitingAnchor, error) {
		var w store.WaitingAnchor
		var created time.Time
		err := r.Scan(&w.Hashlink, &w.Origin, &w.Sender, &w.Live, &w.WaitingFor, &w.Event, &created)
		w.CreatedAt = created.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("ready waiting anchors: %w", err)
	}
	return out, nil
}

// WaitingAnchorUpdate implements store.Executor.
func (e executor) WaitingAnchorUpdate(ctx context.Context, hashlink, waitingFor string) error {
	tag, err := e.q.Exec(ctx, qWaitingAnchorUpdate, waitingFor, hashlink)
	if err != nil {
		return fmt.Errorf("update waiting anchor %s: %w", hashlink, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("update waiting anchor %s: %w", hashlink, store.ErrNotFound)
	}
	return nil
}

// WaitingAnchorDelete implements store.Executor.
func (e executor) WaitingAnchorDelete(ctx context.Context, hashlink string) error {
	tag, err := e.q.Exec(ctx, qWaitingAnchorDelete, hashlink)
	if err != nil {
		return fmt.Errorf("delete waiting anchor %s: %w", hashlink, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete waiting anchor %s: %w", hashlink, store.ErrNotFound)
	}
	return nil
}

// WaitingAnchorCount implements store.Executor.
func (e executor) WaitingAnchorCount(ctx context.Context, origin string) (int, error) {
	var n int
	if err := e.q.QueryRow(ctx, qWaitingAnchorCount, origin).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting anchors: %w", err)
	}
	return n, nil
}
