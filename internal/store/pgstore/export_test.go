package pgstore

import "context"

// RunOnce runs one round of the Maintainer's analysis.
func (a *Maintainer) RunOnce(ctx context.Context) ([]string, error) { return a.runOnce(ctx) }

// VacuumOnce runs one round of the Maintainer's vacuuming.
func (a *Maintainer) VacuumOnce(ctx context.Context) ([]string, error) { return a.vacuumOnce(ctx) }
