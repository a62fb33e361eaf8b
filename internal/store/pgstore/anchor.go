package pgstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// CASPut implements store.Executor.
func (e executor) CASPut(ctx context.Context, cid string, data []byte) error {
	sum := sha256.Sum256(data)
	if _, err := e.q.Exec(ctx, qCASPut, cid, data, len(data), sum[:]); err != nil {
		return fmt.Errorf("store %s: %w", cid, err)
	}
	return nil
}

// CASGet implements store.Executor.
func (e executor) CASGet(ctx context.Context, cid string) ([]byte, error) {
	var data []byte
	if err := e.q.QueryRow(ctx, qCASGet, cid).Scan(&data); err != nil {
		return nil, fmt.Errorf("read %s: %w", cid, interpretError(err))
	}
	return data, nil
}

// CASGetBySHA256 implements store.Executor.
func (e executor) CASGetBySHA256(ctx context.Context, digest []byte) ([]byte, error) {
	var data []byte
	if err := e.q.QueryRow(ctx, qCASGetBySHA256, digest).Scan(&data); err != nil {
		return nil, fmt.Errorf("read sha2-256 %x: %w", digest, interpretError(err))
	}
	return data, nil
}

// CASExistsBySHA256 implements store.Executor.
func (e executor) CASExistsBySHA256(ctx context.Context, digest []byte) (bool, error) {
	var ok bool
	if err := e.q.QueryRow(ctx, qCASExistsBySHA256, digest).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up sha2-256 %x: %w", digest, interpretError(err))
	}
	return ok, nil
}

// AnchorInsert implements store.Executor.
func (e executor) AnchorInsert(ctx context.Context, p store.AnchorInsertParams) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorInsert, p.AnchorString, p.CoreIndexCID, p.OpCount, p.Backend,
		p.Status, p.Record, p.Signature, p.Observed, p.Origin, p.Hashlink, p.IssuedAt))
	if err != nil {
		return a, fmt.Errorf("record anchor %s: %w", p.AnchorString, interpretError(err))
	}
	return a, nil
}

// AnchorGet implements store.Executor.
func (e executor) AnchorGet(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorGet, seq))
	if err != nil {
		return a, fmt.Errorf("get anchor %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// AnchorList implements store.Executor.
func (e executor) AnchorList(ctx context.Context, p store.AnchorListParams) ([]store.Anchor, error) {
	rows, err := e.q.Query(ctx, qAnchorList, p.AfterSeq, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list anchors: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Anchor, error) { return scanAnchor(r) })
	if err != nil {
		return nil, fmt.Errorf("list anchors: %w", err)
	}
	return out, nil
}

// AnchorListLatest implements store.Executor.
func (e executor) AnchorListLatest(ctx context.Context, p store.AnchorListLatestParams) ([]store.Anchor, error) {
	rows, err := e.q.Query(ctx, qAnchorListLatest, p.Before(), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list latest anchors: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Anchor, error) { return scanAnchor(r) })
	if err != nil {
		return nil, fmt.Errorf("list latest anchors: %w", err)
	}
	return out, nil
}

// AnchorNextToObserve implements store.Executor.
func (e executor) AnchorNextToObserve(ctx context.Context) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorNextToObserve))
	if err != nil {
		return a, fmt.Errorf("next anchor to observe: %w", interpretError(err))
	}
	return a, nil
}

// AnchorMarkObserved implements store.Executor.
func (e executor) AnchorMarkObserved(ctx context.Context, seq int64) error {
	tag, err := e.q.Exec(ctx, qAnchorMarkObserved, seq)
	if err != nil {
		return fmt.Errorf("mark anchor %d observed: %w", seq, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("mark anchor %d observed: %w", seq, store.ErrNotFound)
	}
	return nil
}

func scanAnchor(r pgx.Row) (store.Anchor, error) {
	var a store.Anchor
	var completed, observed, published *time.Time
	var origin, hashlink *string
	var issued *int64
	err := r.Scan(&a.Seq, &a.AnchorString, &a.CoreIndexCID, &a.OpCount, &a.Backend, &a.Status, &a.Record,
		&a.Signature, &a.Error, &a.CreatedAt, &completed, &observed, &origin, &hashlink, &published, &issued)
	if issued != nil {
		a.IssuedAt = *issued
	}
	a.CreatedAt = a.CreatedAt.UTC()
	a.CompletedAt, a.ObservedAt, a.PublishedAt = utcPtr(completed), utcPtr(observed), utcPtr(published)
	if origin != nil {
		a.Origin = *origin
	}
	if hashlink != nil {
		a.Hashlink = *hashlink
	}
	return a, err
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// DIDOperationInsertMany implements store.Executor.
func (e executor) DIDOperationInsertMany(ctx context.Context, ops []store.DIDOperation) error {
	if len(ops) == 0 {
		return nil
	}
	n := len(ops)
	suffixes, types := make([]string, n), make([]string, n)
	seqs := make([]int64, n)
	idx := make([]int32, n)
	for i, op := range ops {
		suffixes[i], seqs[i], idx[i], types[i] = e.rowSuffix(op.Suffix), op.AnchorSeq, int32(op.Index), op.Type
	}
	if _, err := e.q.Exec(ctx, qDIDOperationInsert, suffixes, seqs, idx, types); err != nil {
		return fmt.Errorf("index %d operations: %w", n, err)
	}
	return nil
}

// DIDOperationList implements store.Executor.
func (e executor) DIDOperationList(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	if !e.bySuffix {
		out, err := e.listByPositions(ctx, suffix)
		if err != nil {
			return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
		}
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDOperationList, suffix)
	if err != nil {
		return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.DIDOperation, error) {
		var op store.DIDOperation
		err := r.Scan(&op.Suffix, &op.AnchorSeq, &op.Index, &op.Type, &op.Request, &op.Origin, &op.AnchorString, &op.AnchorIssuedAt)
		if len(op.Request) == 0 {
			op.Request = nil // not kept: rebuilt from the batch files
		}
		return op, err
	})
	if err != nil {
		return nil, fmt.Errorf("list operations of %s: %w", suffix, err)
	}
	return out, nil
}

// DIDOperationLists implements store.Executor.
func (e executor) DIDOperationLists(ctx context.Context, suffixes []string) (map[string][]store.DIDOperation, error) {
	out := make(map[string][]store.DIDOperation)
	if len(suffixes) == 0 {
		return out, nil
	}
	if !e.bySuffix {
		out, err := e.listsByPositions(ctx, suffixes)
		if err != nil {
			return nil, fmt.Errorf("list operations of %d DIDs: %w", len(suffixes), err)
		}
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDOperationLists, suffixes)
	if err != nil {
		return nil, fmt.Errorf("list operations of %d DIDs: %w", len(suffixes), err)
	}
	var op store.DIDOperation
	_, err = pgx.ForEachRow(rows, []any{&op.Suffix, &op.AnchorSeq, &op.Index, &op.Type, &op.Request, &op.Origin, &op.AnchorString, &op.AnchorIssuedAt}, func() error {
		if len(op.Request) == 0 {
			op.Request = nil // not kept: rebuilt from the batch files
		}
		out[op.Suffix] = append(out[op.Suffix], op)
		op.Request = nil // the next row's bytes are its own
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list operations of %d DIDs: %w", len(suffixes), err)
	}
	return out, nil
}

// DIDLastAnchors implements store.Executor.
func (e executor) DIDLastAnchors(ctx context.Context, suffixes []string) (map[string]int64, error) {
	out := make(map[string]int64)
	if len(suffixes) == 0 {
		return out, nil
	}
	if !e.bySuffix {
		out, err := e.lastAnchorsByPositions(ctx, suffixes)
		if err != nil {
			return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
		}
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDLastAnchors, suffixes)
	if err != nil {
		return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
	}
	var s string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&s, &seq}, func() error { out[s] = seq; return nil }); err != nil {
		return nil, fmt.Errorf("last anchors of %d DIDs: %w", len(suffixes), err)
	}
	return out, nil
}

// DIDSuffixList implements store.Executor: the distinct suffixes in suffix order, the cursor
// the last of them; through did_operations' key by suffix or, without it, the states'.
func (e executor) DIDSuffixList(ctx context.Context, after string, limit int) ([]string, string, error) {
	var out []string
	var err error
	if e.bySuffix {
		var rows pgx.Rows
		if rows, err = e.q.Query(ctx, qDIDSuffixList, after, limit); err == nil {
			out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
	} else {
		out, err = e.suffixesOfStates(ctx, after, limit)
	}
	if err != nil {
		return nil, "", fmt.Errorf("list DID suffixes: %w", err)
	}
	if len(out) == 0 {
		return nil, after, nil
	}
	return out, out[len(out)-1], nil
}
