package cosigner

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEndpointClientIsBoundedAndHasItsOwnTransport(t *testing.T) {
	t.Parallel()
	c := EndpointClient(3 * time.Second)
	require.Equal(t, 3*time.Second, c.Timeout)
	tr, ok := c.Transport.(*http.Transport)
	require.True(t, ok)
	require.NotSame(t, http.DefaultTransport, tr, "closing its idle connections touches nobody else's")
}
