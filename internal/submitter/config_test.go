package submitter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	requeue := func(context.Context, store.Executor, store.Anchor) error { return nil }
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"no instance":       {Config{RequeueFunc: requeue}, "instance id is empty"},
		"no requeue":        {Config{InstanceID: "a"}, "RequeueFunc is nil"},
		"negative":          {Config{InstanceID: "a", RequeueFunc: requeue, ClaimLimit: -1}, "claim limit is negative"},
		"timeout vs ttl":    {Config{InstanceID: "a", RequeueFunc: requeue, ClaimTTL: 10 * time.Second}, "more than half the claim ttl"},
		"backoff order":     {Config{InstanceID: "a", RequeueFunc: requeue, BackoffInitial: time.Hour}, "below backoff initial"},
		"shrinking backoff": {Config{InstanceID: "a", RequeueFunc: requeue, BackoffMultiplier: 0.5}, "below 1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.cfg.withDefaults()
			require.ErrorContains(t, err, tc.want)
		})
	}
	cfg, err := Config{InstanceID: "a", RequeueFunc: requeue}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, ClaimLimitDefault, cfg.ClaimLimit)
	require.Equal(t, ClaimTTLDefault, cfg.ClaimTTL)
	require.Equal(t, RequestTimeoutDefault, cfg.RequestTimeout)
	require.Equal(t, MaxAttemptsDefault, cfg.MaxAttempts)
	require.Equal(t, BackoffMultiplierDefault, cfg.BackoffMultiplier)
	require.Equal(t, 45*time.Second, cfg.workWindow())

	_, err = PollerConfig{}.withDefaults()
	require.ErrorContains(t, err, "RequeueFunc is nil")
	pcfg, err := PollerConfig{RequeueFunc: requeue}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, UnknownGraceDefault, pcfg.UnknownGrace)
	require.Equal(t, PollPageSizeDefault, pcfg.PageSize)
}
