package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// SettingGet implements store.Executor.
func (e executor) SettingGet(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := e.r.QueryRowContext(ctx, qSettingGet, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get setting %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get setting %q: %w", name, err)
	}
	return v, nil
}

// SettingInsert implements store.Executor.
func (e executor) SettingInsert(ctx context.Context, name string, value []byte) error {
	if _, err := e.w.ExecContext(ctx, qSettingInsert, name, value, time.Now().UnixMicro()); err != nil {
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
	if _, err := e.w.ExecContext(ctx, qSettingPut, name, value, time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("put setting %q: %w", name, interpretError(err))
	}
	return nil
}
