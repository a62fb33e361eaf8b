package sqlitestore

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/anchord/anchord/internal/store"
)

// interpretError maps SQLite errors to the contract's sentinels, keeping the original text.
func interpretError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return fmt.Errorf("%w: %s", store.ErrConflict, se.Error())
		}
	}
	return err
}
