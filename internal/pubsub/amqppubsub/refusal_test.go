package amqppubsub

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestNewFailsAtOnceOnARefusal: the real broker's refusals (a wrong password: 403
// ACCESS_REFUSED; a missing vhost: 530 NOT_ALLOWED) end New within seconds with ErrRefused and
// what to change, where an unreachable broker would be waited for until ctx ends.
func TestNewFailsAtOnceOnARefusal(t *testing.T) {
	t.Parallel()
	base, err := url.Parse(anchordtest.AMQPURL(t))
	require.NoError(t, err)
	wrongPassword := *base
	wrongPassword.User = url.UserPassword(base.User.Username(), "not-the-password")
	missingVhost := *base
	missingVhost.Path = "/" + testPrefix(t)
	for _, tc := range []struct {
		name string
		url  string
		want []string
	}{
		{"wrong password", wrongPassword.String(), []string{"403 ACCESS_REFUSED", "credentials"}},
		{"missing vhost", missingVhost.String(), []string{"virtual host", "rabbitmqctl add_vhost", missingVhost.Path[1:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			ps, err := New(ctx, Config{URL: tc.url, Prefix: testPrefix(t), Logger: anchordtest.Logger(t)})
			require.Nil(t, ps)
			require.ErrorIs(t, err, ErrRefused)
			require.Less(t, time.Since(start), 10*time.Second, "a refusal is not waited for")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "not-the-password")
		})
	}
}
