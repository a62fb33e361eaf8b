package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// Migrations returns the embedded migrations of this backend.
func Migrations() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFS, "migration")
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	return s.upgrade(ctx, ms)
}

// upgrade applies ms, then settles the per-DID index's layout (settleIndexLayout).
func (s *Store) upgrade(ctx context.Context, ms []store.Migration) error {
	if err := s.applyMigrations(ctx, ms); err != nil {
		return err
	}
	bySuffix, err := settleIndexLayout(ctx, s.writer)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if s.layout == nil {
		s.layout = new(indexLayout)
	}
	s.layout.bySuffix.Store(bySuffix)
	s.layout.suffixIndexGone.Store(!bySuffix)
	return nil
}

// applyMigrations applies, in order, every migration not yet recorded, all in one write
// transaction together with their schema_migrations rows, as the PostgreSQL backend does: a
// crash or a failed migration leaves none of them, and a fresh database's first start syncs
// the disk once instead of once per migration (seconds on a busy disk).
func (s *Store) applyMigrations(ctx context.Context, ms []store.Migration) error {
	if _, err := s.writer.ExecContext(ctx, qMigrationsBootstrap); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var applied []store.Migration
	err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		applied = applied[:0]
		recorded, err := tx.MigrationList(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if err := store.CheckNotNewer(recorded, ms); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		done := make(map[int]bool, len(recorded))
		for _, a := range recorded {
			done[a.Version] = true
		}
		e := tx.(executor)
		for _, m := range ms {
			if done[m.Version] {
				continue
			}
			if _, err := e.w.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate %04d_%s: apply: %w", m.Version, m.Name, err)
			}
			if _, err := e.w.ExecContext(ctx, qMigrationInsert, m.Version, m.Name, time.Now().UnixMicro()); err != nil {
				return fmt.Errorf("migrate %04d_%s: record: %w", m.Version, m.Name, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range applied {
		s.logger.InfoContext(ctx, "migration applied", "version", m.Version, "name", m.Name)
	}
	return nil
}

// MigrationList implements store.Executor.
func (e executor) MigrationList(ctx context.Context) ([]store.AppliedMigration, error) {
	rows, err := e.r.QueryContext(ctx, qMigrationList)
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	defer rows.Close()
	var out []store.AppliedMigration
	for rows.Next() {
		var m store.AppliedMigration
		var at int64
		if err := rows.Scan(&m.Version, &m.Name, &at); err != nil {
			return nil, fmt.Errorf("list migrations: %w", err)
		}
		m.AppliedAt = time.UnixMicro(at).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	return out, nil
}
