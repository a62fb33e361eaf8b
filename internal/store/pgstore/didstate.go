package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// DIDStateGet implements store.Executor.
func (e executor) DIDStateGet(ctx context.Context, suffix string) ([]byte, error) {
	var state []byte
	if err := e.q.QueryRow(ctx, qDIDStateGet, suffix).Scan(&state); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = store.ErrNotFound
		}
		return nil, fmt.Errorf("get state of %s: %w", suffix, err)
	}
	return state, nil
}

// DIDStateGetMany implements store.Executor.
func (e executor) DIDStateGetMany(ctx context.Context, suffixes []string) (map[string][]byte, error) {
	out, err := e.states(ctx, qDIDStateGetMany, suffixes)
	if err != nil {
		return nil, fmt.Errorf("get states of %d DIDs: %w", len(suffixes), err)
	}
	return out, nil
}

// DIDStateLockMany implements store.Executor with SELECT … FOR UPDATE in suffix order.
func (e executor) DIDStateLockMany(ctx context.Context, suffixes []string) (map[string][]byte, error) {
	out, err := e.states(ctx, qDIDStateLock, suffixes)
	if err != nil {
		return nil, fmt.Errorf("lock states of %d DIDs: %w", len(suffixes), err)
	}
	return out, nil
}

func (e executor) states(ctx context.Context, q string, suffixes []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(suffixes))
	if len(suffixes) == 0 {
		return out, nil
	}
	rows, err := e.q.Query(ctx, q, suffixes)
	if err != nil {
		return nil, err
	}
	var suffix string
	var state []byte
	_, err = pgx.ForEachRow(rows, []any{&suffix, &state}, func() error {
		out[suffix] = state
		state = nil // the next row's bytes are its own
		return nil
	})
	return out, err
}

// DIDStateInsertMany implements store.Executor.
func (e executor) DIDStateInsertMany(ctx context.Context, states []store.DIDState) (map[string]bool, error) {
	out := make(map[string]bool, len(states))
	if len(states) == 0 {
		return out, nil
	}
	suffixes, values, positions := stateColumns(states)
	rows, err := e.q.Query(ctx, qDIDStateInsert, suffixes, values, positions)
	if err != nil {
		return nil, fmt.Errorf("insert states of %d DIDs: %w", len(states), err)
	}
	var suffix string
	if _, err := pgx.ForEachRow(rows, []any{&suffix}, func() error {
		out[suffix] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("insert states of %d DIDs: %w", len(states), err)
	}
	return out, nil
}

// DIDStatePutMany implements store.Executor.
func (e executor) DIDStatePutMany(ctx context.Context, states []store.DIDState) error {
	if len(states) == 0 {
		return nil
	}
	suffixes, values, positions := stateColumns(states)
	if _, err := e.q.Exec(ctx, qDIDStatePut, suffixes, values, positions); err != nil {
		return fmt.Errorf("put states of %d DIDs: %w", len(states), err)
	}
	return nil
}

// stateColumns returns the states' suffixes, values and positions as arrays, in suffix order
// (bytewise, as COLLATE "C" orders them); a state that names no positions has NULL.
func stateColumns(states []store.DIDState) ([]string, [][]byte, [][]byte) {
	sorted := slices.SortedFunc(slices.Values(states), func(a, b store.DIDState) int { return cmp.Compare(a.Suffix, b.Suffix) })
	suffixes, values, positions := make([]string, len(sorted)), make([][]byte, len(sorted)), make([][]byte, len(sorted))
	for i, s := range sorted {
		suffixes[i], values[i] = s.Suffix, s.State
		if values[i] == nil {
			values[i] = []byte{} // nil would be NULL
		}
		if len(s.Positions) > 0 {
			positions[i] = store.AppendPositions(nil, s.Positions)
		}
	}
	return suffixes, values, positions
}
