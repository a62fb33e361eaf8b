package pgstore

import "context"

// RunOnce runs one round of the Analyzer.
func (a *Analyzer) RunOnce(ctx context.Context) ([]string, error) { return a.runOnce(ctx) }
