package anchor

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

func TestKeyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	domain := filepath.Join(dir, "domain.pem")
	require.NoError(t, os.WriteFile(domain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	got, err := LoadDomainKeyFile(domain)
	require.NoError(t, err)
	require.Equal(t, pub, got.Public())

	require.NoError(t, os.Chmod(domain, 0o640))
	_, err = LoadDomainKeyFile(domain)
	require.ErrorContains(t, err, "chmod 600", "a key others can read is refused")

	hexKey, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	ledger := filepath.Join(dir, "ledger.key")
	require.NoError(t, os.WriteFile(ledger, []byte(hexKey+"\n"), 0o600))
	k, err := LoadLedgerKeyFile(ledger)
	require.NoError(t, err)
	require.Equal(t, hexKey, k)

	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a key"), 0o600))
	_, err = LoadDomainKeyFile(bad)
	require.Error(t, err)
	_, err = LoadLedgerKeyFile(bad)
	require.Error(t, err)
	_, err = LoadDomainKeyFile(filepath.Join(dir, "missing"))
	require.Error(t, err)
}
