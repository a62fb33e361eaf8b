package anchor

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// maxKeyFile bounds what a key file may hold.
const maxKeyFile = 16 << 10

// readKeyFile reads a key file that only its owner may read: a key readable by the group or by
// others is refused rather than used, since anyone who can read it can sign as the domain.
func readKeyFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: a key file must not be readable by group or others (chmod 600)", path, st.Mode().Perm())
	}
	if st.Size() > maxKeyFile {
		return nil, fmt.Errorf("%s is %d bytes: not a key file", path, st.Size())
	}
	return os.ReadFile(path)
}

// LoadDomainKeyFile reads the domain's Ed25519 signing key from a PEM file holding a PKCS #8
// "PRIVATE KEY" (what `openssl genpkey -algorithm ed25519` writes).
func LoadDomainKeyFile(path string) (ed25519.PrivateKey, error) {
	raw, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("load domain key file: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("load domain key file %s: want a PEM \"PRIVATE KEY\" block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load domain key file %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load domain key file %s: not an Ed25519 key", path)
	}
	return key, nil
}

// LoadLedgerKeyFile reads the ledger signing key (hex secp256k1, as the ledger backend stores
// it) from a file.
func LoadLedgerKeyFile(path string) (string, error) {
	raw, err := readKeyFile(path)
	if err != nil {
		return "", fmt.Errorf("load ledger key file: %w", err)
	}
	key := strings.TrimSpace(string(raw))
	if _, err := sawtooth.NewSigner(key); err != nil {
		return "", fmt.Errorf("load ledger key file %s: %w", path, err)
	}
	return key, nil
}
