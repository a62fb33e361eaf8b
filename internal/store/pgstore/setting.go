package pgstore

import (
	"context"
	"fmt"
)

// SettingGet implements store.Executor.
func (e executor) SettingGet(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	if err := e.q.QueryRow(ctx, qSettingGet, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("get setting %q: %w", name, interpretError(err))
	}
	return v, nil
}

// SettingInsert implements store.Executor.
func (e executor) SettingInsert(ctx context.Context, name string, value []byte) error {
	if _, err := e.q.Exec(ctx, qSettingInsert, name, value); err != nil {
		return fmt.Errorf("insert setting %q: %w", name, interpretError(err))
	}
	return nil
}

// SettingPut implements store.Executor.
func (e executor) SettingPut(ctx context.Context, name string, value []byte) error {
	// The column is NOT NULL and a nil slice would be sent as NULL.
	if value == nil {
		value = []byte{}
	}
	if _, err := e.q.Exec(ctx, qSettingPut, name, value); err != nil {
		return fmt.Errorf("put setting %q: %w", name, interpretError(err))
	}
	return nil
}
