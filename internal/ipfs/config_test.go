package ipfs

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"empty url", Config{}, "url is empty"},
		{"multiaddr", Config{URL: "/ip4/127.0.0.1/tcp/5001"}, "scheme must be http or https"},
		{"no host", Config{URL: "http://"}, "has no host"},
		{"query", Config{URL: "http://127.0.0.1:5001/?x=1"}, "query"},
		{"user", Config{URL: "http://a:b@127.0.0.1:5001"}, "user info"},
		{"negative timeout", Config{URL: "http://127.0.0.1:5001", RequestTimeout: -time.Second}, "negative"},
		{"negative max response", Config{URL: "http://127.0.0.1:5001", MaxResponseBytes: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			require.ErrorContains(t, err, "new ipfs client: ")
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url      string
		wantBase string
	}{
		{"http://127.0.0.1:5001", "http://127.0.0.1:5001/api/v0"},
		{"http://127.0.0.1:5001/", "http://127.0.0.1:5001/api/v0"},
		{"https://ipfs.example:443/proxy/", "https://ipfs.example:443/proxy/api/v0"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{URL: tt.url})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			require.Equal(t, tt.wantBase, c.base.String())
			require.Equal(t, RequestTimeoutDefault, c.cfg.RequestTimeout)
			require.Equal(t, int64(MaxResponseBytesDefault), c.cfg.MaxResponseBytes)
			require.NotNil(t, c.cfg.Logger)
			attrs := c.cfg.LogValue().Group()
			require.Equal(t, "request_timeout", attrs[1].Key)
			require.Equal(t, RequestTimeoutDefault, attrs[1].Value.Duration())
		})
	}
}

func TestNewRejectsSecondRegistration(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	_, err := New(Config{URL: "http://127.0.0.1:5001", Registerer: reg})
	require.NoError(t, err)
	_, err = New(Config{URL: "http://127.0.0.1:5001", Registerer: reg})
	require.ErrorContains(t, err, "register ipfs metrics")
}
