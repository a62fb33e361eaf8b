package witnesslog

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for name, mutate := range map[string]func(*Config){
		"no origin":         func(c *Config) { c.Origin = "" },
		"origin with space": func(c *Config) { c.Origin = "a.example /log" },
		"origin with plus":  func(c *Config) { c.Origin = "a+b.example/log" },
		"no key":            func(c *Config) { c.Key = nil },
		"short key":         func(c *Config) { c.Key = c.Key[:32] },
		"huge entries":      func(c *Config) { c.EntryMaxSize = EntryMaxSizeLimit + 1 },
		"negative age":      func(c *Config) { c.BatchMaxAge = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := tb.cfg
			mutate(&cfg)
			_, err := OpenPOSIX(context.Background(), cfg, filepath.Join(t.TempDir(), "log"))
			require.Error(t, err)
		})
	}
	_, err := OpenPOSIX(context.Background(), tb.cfg, "")
	require.Error(t, err)
}
