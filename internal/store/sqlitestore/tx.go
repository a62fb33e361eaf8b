package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// batch runs fn on a transaction: the current one when e is already inside InTx, otherwise a
// new write transaction, so that multi-row writes commit (and fsync) once, not once per row.
func (e executor) batch(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if tx, ok := e.w.(*sql.Tx); ok {
		return fn(tx)
	}
	db := e.w.(*sql.DB)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func nowMicros() int64 { return time.Now().UnixMicro() }
