package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema change, read from a backend's embedded migration directory.
// File names are "<version>_<name>.sql" with a positive, unique version.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ReadMigrations returns the migrations of dir in fsys, ordered by version. Backends call it on
// their embedded files; a malformed name or a duplicate version is an error, so a bad migration
// fails the build's tests rather than a production start.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || name == "" {
			return nil, fmt.Errorf("read migrations: %q is not <version>_<name>.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("read migrations: version %d used by %q and %q", v, prev, e.Name())
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// ErrSchemaNewer: the database records a migration this binary does not know, applied by a
// newer anchord. What that one stores (rows in a form this binary cannot read, tables it does
// not know) would be served or changed as if it were ours, so the store refuses to open.
var ErrSchemaNewer = errors.New("the database was migrated by a newer anchord")

// CheckNotNewer returns ErrSchemaNewer, naming the first migration of applied that known lacks.
func CheckNotNewer(applied []AppliedMigration, known []Migration) error {
	versions := make(map[int]bool, len(known))
	for _, m := range known {
		versions[m.Version] = true
	}
	for _, a := range applied {
		if !versions[a.Version] {
			last := 0
			if len(known) > 0 {
				last = known[len(known)-1].Version
			}
			return fmt.Errorf("%w: it records migration %04d_%s, and this one knows them up to %04d; run that anchord or a later one",
				ErrSchemaNewer, a.Version, a.Name, last)
		}
	}
	return nil
}
