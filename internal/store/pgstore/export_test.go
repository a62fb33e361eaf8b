package pgstore

import "context"

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
