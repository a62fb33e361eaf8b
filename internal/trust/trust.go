// Package trust builds the TLS client configuration of anchord's outgoing connections (the
// broker over amqps://, the ledger over https://, later other domains): the system's
// certificate authorities plus those of a PEM file the operator names. Certificates are always
// verified; there is no switch to turn verification off.
package trust

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientConfig returns a TLS client configuration trusting the system's authorities and, when
// caFile is not empty, every certificate in that PEM file. It returns nil for an empty caFile,
// which means the libraries' defaults (system authorities).
func ClientConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
