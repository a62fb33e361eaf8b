package pgstore

import (
	"context"
	"fmt"
)

// The schema's indexes against PostgreSQL's shared buffers. Three of them take an insert at a
// random place for every create (the operations' and the states' keys by suffix, the anchored
// operations' by id), so once they outgrow the shared buffers nearly every insert evicts a dirty
// page and reads one back. Loading ten million creates into one instance with PostgreSQL's
// default 128 MB, the backends wrote ~3.5 evicted pages per create themselves and the load ran
// at 75 % of its first million's rate by the tenth (docs/design/scale-cluster.md, "PostgreSQL at 10M").
// That is the server's setting, not the schema's, so the Maintainer says so once, where an
// operator looks, instead of leaving it to be found in a profile.
const qIndexesAndBuffers = `SELECT
	(SELECT COALESCE(sum(pg_relation_size(indexrelid)), 0)::bigint FROM pg_stat_user_indexes WHERE schemaname = current_schema()),
	pg_size_bytes(current_setting('shared_buffers'))`

// sizeOnce reads the size of the schema's indexes and of the shared buffers, reports both, and
// warns when the indexes grow past the buffers (and notes when they fit again).
func (m *Maintainer) sizeOnce(ctx context.Context) (indexes, buffers int64, err error) {
	if err := m.pool.QueryRow(ctx, qIndexesAndBuffers).Scan(&indexes, &buffers); err != nil {
		return 0, 0, fmt.Errorf("size the indexes: %w", err)
	}
	m.indexBytes.Set(float64(indexes))
	m.sharedBuffers.Set(float64(buffers))
	m.noteSize(ctx, indexes, buffers)
	return indexes, buffers, nil
}

// noteSize logs a change of whether the indexes fit in the shared buffers: once as they outgrow
// them, not at every round.
func (m *Maintainer) noteSize(ctx context.Context, indexes, buffers int64) {
	over := indexes > buffers
	switch {
	case over && !m.indexesOver:
		m.logger.WarnContext(ctx, "the indexes of anchord's tables outgrow PostgreSQL's shared_buffers: "+
			"creates slow down as PostgreSQL evicts and writes back their pages; "+
			"give shared_buffers at least the indexes' size (README, \"Run it as a cluster\")",
			"index_bytes", indexes, "shared_buffers_bytes", buffers)
	case !over && m.indexesOver:
		m.logger.InfoContext(ctx, "the indexes of anchord's tables fit in PostgreSQL's shared_buffers again",
			"index_bytes", indexes, "shared_buffers_bytes", buffers)
	}
	m.indexesOver = over
}
