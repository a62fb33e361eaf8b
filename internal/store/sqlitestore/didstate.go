package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anchord/anchord/internal/store"
)

// DIDStateGet implements store.Executor. Like DIDOperationList, it reads under a context that
// cannot be cancelled (once it runs): it is one indexed lookup.
func (e executor) DIDStateGet(ctx context.Context, suffix string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get state of %s: %w", suffix, err)
	}
	ctx = context.WithoutCancel(ctx)
	var row *sql.Row
	if e.didState != nil {
		row = e.didState.QueryRowContext(ctx, suffix)
	} else {
		row = e.r.QueryRowContext(ctx, qDIDStateGet, suffix)
	}
	var state []byte
	if err := row.Scan(&state); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = store.ErrNotFound
		}
		return nil, fmt.Errorf("get state of %s: %w", suffix, err)
	}
	return state, nil
}

// DIDStateGetMany implements store.Executor.
func (e executor) DIDStateGetMany(ctx context.Context, suffixes []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(suffixes))
	for start := 0; start < len(suffixes); start += maxInList {
		chunk := suffixes[start:min(start+maxInList, len(suffixes))]
		args := make([]any, len(chunk))
		for i, s := range chunk {
			args[i] = s
		}
		q := fmt.Sprintf(qDIDStateGetMany, strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ","))
		if err := e.scanStates(ctx, q, args, func(suffix string, state []byte) { out[suffix] = state }); err != nil {
			return nil, fmt.Errorf("get states of %d DIDs: %w", len(suffixes), err)
		}
	}
	return out, nil
}

// DIDStateLockMany implements store.Executor: SQLite has one writer, whose transaction holds the
// whole database, so a read inside it is as good as a lock.
func (e executor) DIDStateLockMany(ctx context.Context, suffixes []string) (map[string][]byte, error) {
	return e.DIDStateGetMany(ctx, suffixes)
}

// statesPerInsert bounds the rows of one multi-row INSERT of states.
const statesPerInsert = 200

// DIDStateInsertMany implements store.Executor.
func (e executor) DIDStateInsertMany(ctx context.Context, states []store.DIDState) (map[string]bool, error) {
	states = sortedStates(states)
	out := make(map[string]bool, len(states))
	err := e.writeStates(ctx, qDIDStateInsert, states, func(rows *sql.Rows) error {
		for rows.Next() {
			var suffix string
			if err := rows.Scan(&suffix); err != nil {
				return err
			}
			out[suffix] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("insert states of %d DIDs: %w", len(states), err)
	}
	return out, nil
}

// DIDStatePutMany implements store.Executor.
func (e executor) DIDStatePutMany(ctx context.Context, states []store.DIDState) error {
	if err := e.writeStates(ctx, qDIDStatePut, sortedStates(states), nil); err != nil {
		return fmt.Errorf("put states of %d DIDs: %w", len(states), err)
	}
	return nil
}

// writeStates runs q, completed with one row of values per state, for states in chunks; scan
// reads what each chunk returns (nil: it returns nothing). As DIDOperationInsertMany does, the
// statement of a full chunk is prepared once per call.
func (e executor) writeStates(ctx context.Context, q string, states []store.DIDState, scan func(*sql.Rows) error) error {
	// Counted before the write, so that the relayout's drop of the suffix index, which reads the
	// count under the write lock, sees every such write that committed before it; one that then
	// rolls back costs the pass one more round at most.
	for _, s := range states {
		if len(s.Positions) == 0 {
			e.layout.wroteUnnamed()
			break
		}
	}
	return e.batch(ctx, func(tx *sql.Tx) error {
		var full *sql.Stmt
		defer func() {
			if full != nil {
				_ = full.Close()
			}
		}()
		args := make([]any, 0, 3*min(statesPerInsert, len(states)))
		for start := 0; start < len(states); start += statesPerInsert {
			chunk := states[start:min(start+statesPerInsert, len(states))]
			args = stateArgs(args[:0], chunk)
			var rows *sql.Rows
			var err error
			switch {
			case len(chunk) < statesPerInsert:
				rows, err = tx.QueryContext(ctx, stateRows(q, len(chunk)), args...)
			case full == nil:
				if full, err = tx.PrepareContext(ctx, stateRows(q, statesPerInsert)); err != nil {
					return err
				}
				fallthrough
			default:
				rows, err = full.QueryContext(ctx, args...)
			}
			if err != nil {
				return err
			}
			if scan != nil {
				err = scan(rows)
			}
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// stateArgs appends the values of states' rows to args.
func stateArgs(args []any, states []store.DIDState) []any {
	for _, s := range states {
		state := s.State
		if state == nil {
			state = []byte{} // nil would be NULL
		}
		var positions []byte // NULL when it names none
		if len(s.Positions) > 0 {
			positions = store.AppendPositions(nil, s.Positions)
		}
		args = append(args, s.Suffix, state, positions)
	}
	return args
}

// stateRows completes q with n rows of values.
func stateRows(q string, n int) string {
	return fmt.Sprintf(q, strings.TrimSuffix(strings.Repeat("(?, ?, ?),", n), ","))
}

// sortedStates returns states in suffix order (a copy when they were not).
func sortedStates(states []store.DIDState) []store.DIDState {
	byID := func(a, b store.DIDState) int { return cmp.Compare(a.Suffix, b.Suffix) }
	if slices.IsSortedFunc(states, byID) {
		return states
	}
	states = slices.Clone(states)
	slices.SortFunc(states, byID)
	return states
}

// scanStates runs q and calls fn with each row's suffix and, when selected, state.
func (e executor) scanStates(ctx context.Context, q string, args []any, fn func(suffix string, state []byte)) error {
	rows, err := e.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		var suffix string
		var state []byte
		dest := []any{&suffix, &state}[:len(cols)]
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		fn(suffix, state)
	}
	return rows.Err()
}
