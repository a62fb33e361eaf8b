// Package admintoken keeps the admin API's bearer token when the operator gives none: made at
// the first start of `anchord serve` into <data-dir>/admin-token (mode 0600, the directory
// 0700), read back at every later start, and read by `anchord admin` from the same directory.
// It holds no flags and no HTTP; the daemon and the admin command decide when to call it.
package admintoken

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/anchord/anchord/internal/filemode"
)

// FileName is the token file's name in the data directory.
const FileName = "admin-token"

// tokenBytes is the entropy of a made token: 256 bits, written as 64 hex digits.
const tokenBytes = 32

// maxFileBytes bounds what Read takes from the file: a token an operator wrote there by hand is
// a line, not a document.
const maxFileBytes = 4096

// ErrInvalid is wrapped when the file holds something that cannot be a bearer token.
var ErrInvalid = errors.New("not an admin token")

// Path returns the token file of a data directory.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Read returns the token kept in dataDir. An error wrapping fs.ErrNotExist means there is none.
func Read(dataDir string) (string, error) {
	path := Path(dataDir)
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read admin token %s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		return "", fmt.Errorf("read admin token %s: %w: longer than %d bytes", path, ErrInvalid, maxFileBytes)
	}
	token := strings.TrimSpace(string(b))
	if err := Check(token); err != nil {
		return "", fmt.Errorf("read admin token %s: %w", path, err)
	}
	return token, nil
}

// LoadOrCreate returns the token kept in dataDir, making one when there is none: the directory
// is created 0700 if missing, the file 0600, written in full and synced before it is renamed
// into place, so that a crash never leaves half a token. An existing file is tightened to 0600.
// created reports that the token was made now. Instances that share the directory and start at
// once agree on one token: the rename that loses finds the winner's file.
func LoadOrCreate(dataDir string) (token string, created bool, err error) {
	path := Path(dataDir)
	if token, err := Read(dataDir); err == nil {
		if err := filemode.Tighten(path, 0o600); err != nil {
			return "", false, fmt.Errorf("restrict admin token %s: %w", path, err)
		}
		return token, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("create admin token: %w", err)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", false, fmt.Errorf("create admin token: %w", err)
	}
	token = hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(dataDir, "."+FileName+"-*")
	if err != nil {
		return "", false, fmt.Errorf("create admin token: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the link below, or after a failure
	// CreateTemp makes the file 0600 already; said again, since the token depends on it.
	err = errors.Join(tmp.Chmod(0o600), writeAll(tmp, token+"\n"), tmp.Sync(), tmp.Close())
	if err != nil {
		return "", false, fmt.Errorf("create admin token %s: %w", path, err)
	}
	// A hard link, unlike a rename, fails when the file exists: a concurrent start that made
	// its own token first keeps it, and this one reads it.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			token, err := Read(dataDir)
			return token, false, err
		}
		return "", false, fmt.Errorf("create admin token %s: %w", path, err)
	}
	if d, err := os.Open(dataDir); err == nil {
		_ = d.Sync() // the new name survives a crash; best effort, the token is already whole
		_ = d.Close()
	}
	return token, true, nil
}

// Check returns an error wrapping ErrInvalid unless token can be sent as a bearer token: not
// empty, printable ASCII without spaces.
func Check(token string) error {
	if token == "" {
		return fmt.Errorf("%w: empty", ErrInvalid)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: holds a character that is not printable ASCII", ErrInvalid)
		}
	}
	return nil
}

func writeAll(f *os.File, s string) error {
	_, err := f.WriteString(s)
	return err
}
