package pgstore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// The per-DID index by positions (migration 30): in a database that indexed nothing before it,
// did_operations is keyed by (anchor, index) and its rows keep no suffix; a DID's rows are the
// positions its did_states row names. Each create then inserts at a random place into one B-tree
// (did_states' by suffix) instead of two, and appends its operation's row to the end of
// did_operations' key. A database with operations indexed before keeps the key by suffix, and
// every read goes through it (bySuffix): its older states name no positions. The layout is read
// once at Open and never changes while the store runs.

const (
	// qDIDOperationsBySuffix reads whether did_operations' primary key begins with the suffix.
	qDIDOperationsBySuffix = `SELECT a.attname = 'suffix' FROM pg_constraint c
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
		WHERE c.conrelid = 'did_operations'::regclass AND c.contype = 'p'`

	qDIDPositionsMany = `SELECT suffix, positions FROM did_states WHERE suffix = ANY($1) AND positions IS NOT NULL`
	// qDIDOperationsAt reads the rows at positions, each with the suffix it is read for, in the
	// order given.
	qDIDOperationsAt = `SELECT p.s, d.anchor_seq, d.op_index, d.op_type, d.request,
		COALESCE(a.origin, ''), COALESCE(a.anchor_string, ''), COALESCE(a.issued_at, 0)
		FROM unnest($1::text[], $2::bigint[], $3::int[]) WITH ORDINALITY AS p(s, seq, i, n)
		JOIN did_operations d ON d.anchor_seq = p.seq AND d.op_index = p.i
		LEFT JOIN anchors a ON a.seq = d.anchor_seq
		ORDER BY p.n`
	qDIDStateSuffixList = `SELECT suffix FROM did_states WHERE suffix > $1 ORDER BY suffix LIMIT $2`
	qAnchorHashlinks    = `SELECT seq, COALESCE(hashlink, '') FROM anchors WHERE seq = ANY($1)`
)

// readIndexLayout reports whether the per-DID index is read through did_operations' key by suffix.
func readIndexLayout(ctx context.Context, q querier) (bySuffix bool, err error) {
	if err := q.QueryRow(ctx, qDIDOperationsBySuffix).Scan(&bySuffix); err != nil {
		return false, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	return bySuffix, nil
}

// rowSuffix is what an operation's row keeps of its DID's suffix: nothing once no read finds
// the row by it (the empty text is its one-byte header).
func (e executor) rowSuffix(suffix string) string {
	if e.bySuffix {
		return suffix
	}
	return ""
}

// positionsOfMany returns the positions the states of suffixes name: those with a state that
// names any.
func (e executor) positionsOfMany(ctx context.Context, suffixes []string) (map[string][]store.DIDPosition, error) {
	out := make(map[string][]store.DIDPosition, len(suffixes))
	if len(suffixes) == 0 {
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDPositionsMany, suffixes)
	if err != nil {
		return nil, err
	}
	var s string
	var b []byte
	_, err = pgx.ForEachRow(rows, []any{&s, &b}, func() error {
		pos, err := store.DecodePositions(b)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		if len(pos) > 0 {
			out[s] = pos
		}
		return nil
	})
	return out, err
}

// operationsAt reads the rows at each suffix's positions, in anchor order per suffix; a
// position without a row is an error, since the state that names it was committed with it.
func (e executor) operationsAt(ctx context.Context, positions map[string][]store.DIDPosition) (map[string][]store.DIDOperation, error) {
	var suffixes []string
	var seqs []int64
	var idx []int32
	for s, pos := range positions {
		for _, p := range pos {
			suffixes, seqs, idx = append(suffixes, s), append(seqs, p.AnchorSeq), append(idx, int32(p.Index))
		}
	}
	out := make(map[string][]store.DIDOperation, len(positions))
	if len(seqs) == 0 {
		return out, nil
	}
	rows, err := e.q.Query(ctx, qDIDOperationsAt, suffixes, seqs, idx)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	for s, pos := range positions {
		if len(out[s]) != len(pos) {
			return nil, fmt.Errorf("%d of the %d operations the state of %s names have no row", len(pos)-len(out[s]), len(pos), s)
		}
	}
	return out, nil
}

// listByPositions is DIDOperationList through the DID's state.
func (e executor) listByPositions(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	ops, err := e.listsByPositions(ctx, []string{suffix})
	return ops[suffix], err
}

// listsByPositions is DIDOperationLists through the DIDs' states.
func (e executor) listsByPositions(ctx context.Context, suffixes []string) (map[string][]store.DIDOperation, error) {
	positions, err := e.positionsOfMany(ctx, suffixes)
	if err != nil {
		return nil, err
	}
	return e.operationsAt(ctx, positions)
}

// lastAnchorsByPositions is DIDLastAnchors through the DIDs' states.
func (e executor) lastAnchorsByPositions(ctx context.Context, suffixes []string) (map[string]int64, error) {
	positions, err := e.positionsOfMany(ctx, suffixes)
	if err != nil {
		return nil, err
	}
	return store.LastAnchors(positions), nil
}

// latestAnchorsByPositions is DIDLatestAnchors through the DIDs' states.
func (e executor) latestAnchorsByPositions(ctx context.Context, suffixes []string, beforeSeq int64) (map[string]store.AnchorRef, error) {
	positions, err := e.positionsOfMany(ctx, suffixes)
	if err != nil {
		return nil, err
	}
	latest := store.AnchorsBefore(positions, beforeSeq)
	if len(latest) == 0 {
		return map[string]store.AnchorRef{}, nil
	}
	seqs := slices.Compact(slices.Sorted(maps.Values(latest)))
	rows, err := e.q.Query(ctx, qAnchorHashlinks, seqs)
	if err != nil {
		return nil, err
	}
	hashlinks := make(map[int64]string, len(seqs))
	var seq int64
	var h string
	if _, err := pgx.ForEachRow(rows, []any{&seq, &h}, func() error { hashlinks[seq] = h; return nil }); err != nil {
		return nil, err
	}
	return store.AnchorRefs(latest, hashlinks), nil
}

// suffixesOfStates is DIDSuffixList through the states: every DID with anchored operations has one.
func (e executor) suffixesOfStates(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := e.q.Query(ctx, qDIDStateSuffixList, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
