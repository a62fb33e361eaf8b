package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

// CASPut implements store.Executor.
func (e executor) CASPut(ctx context.Context, cid string, data []byte) error {
	sum := sha256.Sum256(data)
	if _, err := e.w.ExecContext(ctx, qCASPut, cid, data, len(data), nowMicros(), sum[:]); err != nil {
		return fmt.Errorf("store %s: %w", cid, err)
	}
	return nil
}

// CASGet implements store.Executor.
func (e executor) CASGet(ctx context.Context, cid string) ([]byte, error) {
	var data []byte
	err := e.r.QueryRowContext(ctx, qCASGet, cid).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read %s: %w", cid, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cid, err)
	}
	return data, nil
}

// CASGetBySHA256 implements store.Executor.
func (e executor) CASGetBySHA256(ctx context.Context, digest []byte) ([]byte, error) {
	var data []byte
	err := e.r.QueryRowContext(ctx, qCASGetBySHA256, digest).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read sha2-256 %x: %w", digest, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read sha2-256 %x: %w", digest, err)
	}
	return data, nil
}

// CASExistsBySHA256 implements store.Executor.
func (e executor) CASExistsBySHA256(ctx context.Context, digest []byte) (bool, error) {
	var ok bool
	if err := e.r.QueryRowContext(ctx, qCASExistsBySHA256, digest).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up sha2-256 %x: %w", digest, err)
	}
	return ok, nil
}
