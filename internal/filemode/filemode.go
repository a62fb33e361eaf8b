// Package filemode tightens the permissions of what anchord keeps private (the data directory,
// the database, the admin token): it removes bits, and never adds any, so an operator's stricter
// choice (a read-only 0500 directory) stays as it is.
package filemode

import (
	"fmt"
	"io/fs"
	"os"
)

// Tighten clears the permission bits of path beyond limit (0o700 for a directory, 0o600 for a
// file); it never sets a bit the path does not have.
func Tighten(path string, limit fs.FileMode) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("tighten %s: %w", path, err)
	}
	perm := info.Mode().Perm()
	if perm&^limit == 0 {
		return nil
	}
	if err := os.Chmod(path, perm&limit); err != nil {
		return fmt.Errorf("tighten %s: %w", path, err)
	}
	return nil
}
