package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
)

// The per-DID index without an index by suffix (migration 30): a DID's rows of did_operations
// are the positions its did_states row names. Each create then makes one insert in random key
// order, into did_states' narrow index by suffix, and appends its state's row and its
// operation's row.

const (
	qDIDSuffixIndexExists = `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'did_operations_suffix')`
	qDIDIndexEmpty        = `SELECT NOT EXISTS (SELECT 1 FROM did_operations) AND NOT EXISTS (SELECT 1 FROM did_states)`
	qDIDSuffixIndexDrop   = `DROP INDEX did_operations_suffix`
	// qDIDStatesWithoutRowid tells migration 29's table, keyed by suffix, from qDIDStatesByRowid's.
	qDIDStatesWithoutRowid = `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'did_states'
		AND sql LIKE '%WITHOUT ROWID%')`
	// qDIDStatesByRowid is did_states as a new database has it: the rows in the order they were
	// inserted (by rowid) and a separate index by suffix. Keyed by suffix, a batch of creates
	// inserted ~300-byte rows at random places, dirtying and splitting a page per create; now
	// they are appended, and only the narrow index takes random inserts. The observer's index
	// transaction of 10,000 creates on 200,000 DIDs took 740-790 ms keyed by suffix and
	// 300-420 ms by rowid, at the same bytes per DID.
	qDIDStatesByRowid = `DROP TABLE did_states;
		CREATE TABLE did_states (suffix TEXT PRIMARY KEY, state BLOB NOT NULL, positions BLOB)`

	qDIDPositions = `SELECT positions FROM did_states WHERE suffix = ?`
	// qDIDPositionsMany is completed with one placeholder per suffix.
	qDIDPositionsMany = `SELECT suffix, positions FROM did_states WHERE suffix IN (%s) AND positions IS NOT NULL`
	qDIDOperationAt   = `SELECT d.suffix, d.op_type, d.request, COALESCE(a.origin, ''), COALESCE(a.anchor_string, ''),
		COALESCE(a.issued_at, 0)
		FROM did_operations d LEFT JOIN anchors a ON a.seq = d.anchor_seq
		WHERE d.anchor_seq = ? AND d.op_index = ?`
	// qDIDStateSuffixList pages through the states' suffix index, which holds every DID with
	// anchored operations once: narrower than did_operations, and in the order the suffix
	// index's listing has always been in.
	qDIDStateSuffixList = `SELECT suffix FROM did_states WHERE suffix > ? ORDER BY suffix LIMIT ?`
	// qAnchorHashlinks is completed with one placeholder per sequence number.
	qAnchorHashlinks = `SELECT seq, COALESCE(hashlink, '') FROM anchors WHERE seq IN (%s)`
)

// indexLayout is how the per-DID index is read, shared by a store and its transactions. It
// changes once at most while they run, from the suffix index to the states' positions
// (Relayout), so every read takes the decision when it starts.
type indexLayout struct {
	bySuffix atomic.Bool
	// suffixReads counts the reads going through did_operations_suffix. The index is dropped
	// only once none is left after the switch: a read SQLite prepared after the drop would
	// still run, as a scan of every operation.
	suffixReads atomic.Int64
	// unnamed counts the writes of states that name no positions (stored as NULL, which the
	// pass fills from the suffix index). The switch looks for such states outside the write
	// lock; one written between that look and the drop is seen through this count instead.
	unnamed atomic.Int64
	// suffixIndexGone is set once did_operations_suffix is dropped, for good: from then on
	// nothing reads an operation's row by its suffix (its state names its position and the
	// reader knows whose state it read), so rows are written without it, an empty string that
	// costs no byte of the record's body instead of 46 characters per operation. bySuffix is
	// not the signal: the switch sets it back when a state without positions slips in before
	// the drop, and a row written without its suffix in that window would be lost to reads
	// through the index.
	suffixIndexGone atomic.Bool
}

// rowSuffix is what an operation's row of did_operations keeps of its DID's suffix.
func (l *indexLayout) rowSuffix(suffix string) string {
	if l != nil && l.suffixIndexGone.Load() {
		return ""
	}
	return suffix
}

// wroteUnnamed records a write of states of which some name no positions.
func (l *indexLayout) wroteUnnamed() {
	if l != nil {
		l.unnamed.Add(1)
	}
}

// enterSuffixRead reports whether a read goes through the suffix index; if so, the caller
// calls leaveSuffixRead when it is done. A nil layout (an executor of no store) reads by positions.
func (l *indexLayout) enterSuffixRead() bool {
	if l == nil || !l.bySuffix.Load() {
		return false
	}
	l.suffixReads.Add(1)
	// Checked again once counted: stopSuffixReads stores before it counts, this counts before
	// it loads, so either it waits for this read or this read sees the switch.
	if !l.bySuffix.Load() {
		l.suffixReads.Add(-1)
		return false
	}
	return true
}

func (l *indexLayout) leaveSuffixRead() { l.suffixReads.Add(-1) }

// stopSuffixReads turns every read that starts from now on over to positions and returns once
// no read through the suffix index is left.
func (l *indexLayout) stopSuffixReads(ctx context.Context) error {
	l.bySuffix.Store(false)
	for l.suffixReads.Load() > 0 {
		if !loop.Sleep(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// settleIndexLayout gives a database that has indexed nothing yet the per-DID index's current
// layout (no index of did_operations by suffix, did_states by rowid) and reports whether the
// database reads the index through did_operations_suffix, as one that indexed operations before
// migration 30 does: rewriting the tables of millions of DIDs is left to no start, but to
// Relayout, in the background.
func settleIndexLayout(ctx context.Context, db *sql.DB) (bySuffix bool, err error) {
	var exists, empty, keyed bool
	if err := db.QueryRowContext(ctx, qDIDSuffixIndexExists).Scan(&exists); err != nil {
		return false, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if err := db.QueryRowContext(ctx, qDIDIndexEmpty).Scan(&empty); err != nil {
		return false, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if !empty {
		return exists, nil
	}
	if err := db.QueryRowContext(ctx, qDIDStatesWithoutRowid).Scan(&keyed); err != nil {
		return false, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if !exists && !keyed {
		return false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("settle the per-DID index's layout: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if exists {
		if _, err := tx.ExecContext(ctx, qDIDSuffixIndexDrop); err != nil {
			return false, fmt.Errorf("drop the suffix index: %w", err)
		}
	}
	if keyed {
		if _, err := tx.ExecContext(ctx, qDIDStatesByRowid); err != nil {
			return false, fmt.Errorf("lay out did_states by rowid: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("settle the per-DID index's layout: %w", err)
	}
	return false, nil
}

// positionsOf returns the positions suffix's state names; none for a DID without a state.
func (e executor) positionsOf(ctx context.Context, suffix string) ([]store.DIDPosition, error) {
	var row *sql.Row
	if e.didPositions != nil {
		row = e.didPositions.QueryRowContext(ctx, suffix)
	} else {
		row = e.r.QueryRowContext(ctx, qDIDPositions, suffix)
	}
	var b []byte
	if err := row.Scan(&b); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	return store.DecodePositions(b)
}

// positionsOfMany is positionsOf for several suffixes: those with a state that names positions.
func (e executor) positionsOfMany(ctx context.Context, suffixes []string) (map[string][]store.DIDPosition, error) {
	out := make(map[string][]store.DIDPosition, len(suffixes))
	for start := 0; start < len(suffixes); start += maxInList {
		chunk := suffixes[start:min(start+maxInList, len(suffixes))]
		args := make([]any, len(chunk))
		for i, s := range chunk {
			args[i] = s
		}
		err := e.collect(ctx, fmt.Sprintf(qDIDPositionsMany, placeholders(len(chunk))), args, func(rows *sql.Rows) error {
			var s string
			var b []byte
			if err := rows.Scan(&s, &b); err != nil {
				return err
			}
			pos, err := store.DecodePositions(b)
			if err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			if len(pos) > 0 {
				out[s] = pos
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listByPositions is DIDOperationList through the DID's state.
func (e executor) listByPositions(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	positions, err := e.positionsOf(ctx, suffix)
	if err != nil {
		return nil, err
	}
	var out []store.DIDOperation
	for _, p := range positions {
		var row *sql.Row
		if e.didOpAt != nil {
			row = e.didOpAt.QueryRowContext(ctx, p.AnchorSeq, p.Index)
		} else {
			row = e.r.QueryRowContext(ctx, qDIDOperationAt, p.AnchorSeq, p.Index)
		}
		op := store.DIDOperation{AnchorSeq: p.AnchorSeq, Index: p.Index}
		if err := row.Scan(&op.Suffix, &op.Type, &op.Request, &op.Origin, &op.AnchorString, &op.AnchorIssuedAt); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("operation %d/%d named by the state has no row", p.AnchorSeq, p.Index)
			}
			return nil, err
		}
		switch op.Suffix {
		case "": // written once rows stopped keeping it (indexLayout.suffixIndexGone)
			op.Suffix = suffix
		case suffix:
		default:
			return nil, fmt.Errorf("operation %d/%d named by the state is of %s", p.AnchorSeq, p.Index, op.Suffix)
		}
		if len(op.Request) == 0 {
			op.Request = nil // not kept: rebuilt from the batch files
		}
		out = append(out, op)
	}
	return out, nil
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
	seqs := make(map[int64]bool, len(latest))
	for _, seq := range latest {
		seqs[seq] = true
	}
	hashlinks := make(map[int64]string, len(seqs))
	args := make([]any, 0, min(len(seqs), maxInList))
	query := func() error {
		if len(args) == 0 {
			return nil
		}
		err := e.collect(ctx, fmt.Sprintf(qAnchorHashlinks, placeholders(len(args))), args, func(rows *sql.Rows) error {
			var seq int64
			var h string
			if err := rows.Scan(&seq, &h); err != nil {
				return err
			}
			hashlinks[seq] = h
			return nil
		})
		args = args[:0]
		return err
	}
	for seq := range seqs {
		if args = append(args, seq); len(args) == maxInList {
			if err := query(); err != nil {
				return nil, err
			}
		}
	}
	if err := query(); err != nil {
		return nil, err
	}
	return store.AnchorRefs(latest, hashlinks), nil
}

// suffixesOfStates is DIDSuffixList through the states: every DID with anchored operations has
// one once reads go by positions (the switch waits for the last state without them), and the
// operations' rows need not name their DID.
func (e executor) suffixesOfStates(ctx context.Context, after string, limit int) ([]string, string, error) {
	var out []string
	err := e.collect(ctx, qDIDStateSuffixList, []any{after, limit}, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) == 0 {
		return nil, after, nil
	}
	return out, out[len(out)-1], nil
}
