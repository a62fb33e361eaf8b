package pgstore

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/anchord/anchord/internal/store"
)

// AnalyzeOnce runs one round of the Maintainer's analysis.
func (m *Maintainer) AnalyzeOnce(ctx context.Context) ([]string, error) { return m.analyzeOnce(ctx) }

// VacuumOnce runs one round of the Maintainer's vacuuming.
func (m *Maintainer) VacuumOnce(ctx context.Context) ([]string, error) { return m.vacuumOnce(ctx) }

// SizeOnce reads the indexes' and the shared buffers' sizes as a round does.
func (m *Maintainer) SizeOnce(ctx context.Context) (indexes, buffers int64, err error) {
	return m.sizeOnce(ctx)
}

// NoteSize is what a round does with the sizes it read.
func (m *Maintainer) NoteSize(ctx context.Context, indexes, buffers int64) {
	m.noteSize(ctx, indexes, buffers)
}

// MigrateBefore applies to the database at url only the migrations older than version, as an
// older anchord would have left it.
func MigrateBefore(ctx context.Context, url string, version int) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	ms, err := Migrations()
	if err != nil {
		return err
	}
	var older []store.Migration
	for _, m := range ms {
		if m.Version < version {
			older = append(older, m)
		}
	}
	s := &Store{executor: executor{q: pool}, pool: pool, logger: slog.New(slog.DiscardHandler)}
	return s.applyMigrations(ctx, older)
}
