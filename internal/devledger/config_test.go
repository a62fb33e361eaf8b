package devledger

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()

	cfg, err := Config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, AddrDefault, cfg.Addr)
	require.Equal(t, CommitDelayDefault, cfg.CommitDelay)
	require.Equal(t, CommitIntervalDefault, cfg.CommitInterval)
	require.Equal(t, HangTimeoutDefault, cfg.HangTimeout)
	require.Equal(t, ShutdownTimeoutDefault, cfg.ShutdownTimeout)
	require.Equal(t, int64(MaxBodyDefault), cfg.MaxBody)
	require.Equal(t, "anchord", cfg.FamilyName)
	require.Equal(t, "1.0", cfg.FamilyVersion)
	require.NotNil(t, cfg.Logger)
	require.NotNil(t, cfg.NowFunc)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		cfg     Config
		wantErr string
	}{
		"negative delay":    {Config{CommitDelay: -time.Second}, "commit delay"},
		"negative hang":     {Config{HangTimeout: -1}, "hang timeout"},
		"negative max body": {Config{MaxBody: -1}, "max body"},
		"share above one":   {Config{Faults: FaultConfig{Lost: 1.5}}, "lost=1.5"},
		"negative share":    {Config{Faults: FaultConfig{Timeout: -0.1}}, "timeout=-0.1"},
		"NaN share":         {Config{Faults: FaultConfig{Invalid: math.NaN()}}, "invalid=NaN"},
		"shares above one":  {Config{Faults: FaultConfig{Unavailable: 0.6, TooManyRequests: 0.6}}, "add up to 1.2"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}

	_, err := New(Config{Faults: FaultConfig{Unavailable: 0.5, Lost: 0.5}})
	require.NoError(t, err, "shares may add up to exactly 1")

	reg := prometheus.NewRegistry()
	_, err = New(Config{Registerer: reg})
	require.NoError(t, err)
	_, err = New(Config{Registerer: reg})
	require.ErrorContains(t, err, "register devledger metrics", "two servers on one registry collide")
}

func TestConfigLogValue(t *testing.T) {
	t.Parallel()

	v := Config{Faults: FaultConfig{Seed: 3, Lost: 0.25}}.LogValue()
	got := map[string]string{}
	for _, a := range v.Group() {
		got[a.Key] = a.Value.String()
	}
	require.Equal(t, AddrDefault, got["addr"])
	require.Equal(t, "anchord/1.0", got["family"])
	require.Equal(t, "3", got["fault_seed"])
	require.Equal(t, "0.25", got["fault_lost"])
}
