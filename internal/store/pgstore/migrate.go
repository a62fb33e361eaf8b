package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

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

// applyMigrations applies every pending migration in one transaction holding the schema's
// migration lock: instances starting together wait for the first, then find nothing to do.
// PostgreSQL DDL is transactional, so a failed migration leaves no trace.
func (s *Store) applyMigrations(ctx context.Context, ms []store.Migration) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qMigrationsLock); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, qMigrationsBootstrap); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied, err := executor{q: tx}.MigrationList(ctx)
		if err != nil {
			return err
		}
		if err := store.CheckNotNewer(applied, ms); err != nil {
			return err
		}
		done := make(map[int]bool, len(applied))
		for _, a := range applied {
			done[a.Version] = true
		}
		for _, m := range ms {
			if done[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply %04d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, qMigrationInsert, m.Version, m.Name); err != nil {
				return fmt.Errorf("record %04d_%s: %w", m.Version, m.Name, err)
			}
			s.logger.InfoContext(ctx, "migration applied", "version", m.Version, "name", m.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// MigrationList implements store.Executor.
func (e executor) MigrationList(ctx context.Context) ([]store.AppliedMigration, error) {
	rows, err := e.q.Query(ctx, qMigrationList)
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AppliedMigration, error) {
		var m store.AppliedMigration
		err := r.Scan(&m.Version, &m.Name, &m.AppliedAt)
		m.AppliedAt = m.AppliedAt.UTC()
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	return out, nil
}
