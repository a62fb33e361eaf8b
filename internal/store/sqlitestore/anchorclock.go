package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// AnchorClockGet implements store.Executor. Inside a transaction it reads through the writer,
// whose BEGIN IMMEDIATE is the lock the contract asks for.
func (e executor) AnchorClockGet(ctx context.Context) (store.AnchorClock, error) {
	var last, written sql.NullInt64
	if err := e.r.QueryRowContext(ctx, qAnchorClockGet).Scan(&last, &written); err != nil {
		return store.AnchorClock{}, fmt.Errorf("read anchor clock: %w", interpretError(err))
	}
	var c store.AnchorClock
	if last.Valid && written.Valid {
		c = store.AnchorClock{Last: time.UnixMicro(last.Int64).UTC(), WrittenAt: time.UnixMicro(written.Int64).UTC()}
	}
	return c, nil
}

// AnchorClockSet implements store.Executor.
func (e executor) AnchorClockSet(ctx context.Context, c store.AnchorClock) error {
	res, err := e.w.ExecContext(ctx, qAnchorClockSet, c.Last.UnixMicro(), c.WrittenAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("set anchor clock: %w", interpretError(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("set anchor clock: %w", store.ErrNotFound)
	}
	return nil
}
