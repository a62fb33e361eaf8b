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
	return s.applyMigrations(ctx, ms)
}

// applyMigrations applies, in order, each migration not yet recorded, each in its own write
// transaction together with its schema_migrations row, so a crash leaves either all of a
// migration or none of it.
func (s *Store) applyMigrations(ctx context.Context, ms []store.Migration) error {
	if _, err := s.writer.ExecContext(ctx, qMigrationsBootstrap); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			applied, err := tx.MigrationList(ctx)
			if err != nil {
				return err
			}
			for _, a := range applied {
				if a.Version == m.Version {
					return nil
				}
			}
			e := tx.(executor)
			if _, err := e.w.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			if _, err := e.w.ExecContext(ctx, qMigrationInsert, m.Version, m.Name, time.Now().UnixMicro()); err != nil {
				return fmt.Errorf("record: %w", err)
			}
			s.logger.InfoContext(ctx, "migration applied", "version", m.Version, "name", m.Name)
			return nil
		})
		if err != nil {
			return fmt.Errorf("migrate %04d_%s: %w", m.Version, m.Name, err)
		}
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
