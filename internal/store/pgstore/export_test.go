package pgstore

import "context"

// AnalyzeOnce runs one round of the Maintainer's analysis.
func (m *Maintainer) AnalyzeOnce(ctx context.Context) ([]string, error) { return m.analyzeOnce(ctx) }

// VacuumOnce runs one round of the Maintainer's vacuuming.
func (m *Maintainer) VacuumOnce(ctx context.Context) ([]string, error) { return m.vacuumOnce(ctx) }
