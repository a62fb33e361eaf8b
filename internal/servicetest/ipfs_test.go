package servicetest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/ipfs"
)

func TestIPFSStopStartKillWipe(t *testing.T) {
	t.Parallel()
	node := StartIPFS(t)
	client, err := ipfs.New(ipfs.Config{URL: node.URL(), RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	ctx := context.Background()

	version, err := client.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, "0.43.1", version, "the Kubo version tools/ipfs pins")

	data := []byte("a file that must survive a restart but not a wipe")
	cid, err := client.Add(ctx, data, cas.CIDv0)
	require.NoError(t, err)

	node.Stop()
	_, err = client.Version(ctx)
	require.ErrorIs(t, err, ipfs.ErrUnavailable)
	node.Start()
	got, err := client.Get(ctx, cid, 1<<10)
	require.NoError(t, err)
	require.Equal(t, data, got, "content survives a clean stop")

	node.Kill()
	_, err = client.Version(ctx)
	require.ErrorIs(t, err, ipfs.ErrUnavailable)
	node.Start()
	pinned, err := client.Pinned(ctx, cid)
	require.NoError(t, err)
	require.True(t, pinned, "pins survive a crash")

	node.Wipe()
	pinned, err = client.Pinned(ctx, cid)
	require.NoError(t, err)
	require.False(t, pinned, "a wiped node has no pins")
	_, err = client.Cat(ctx, cid, 1<<10)
	var apiErr *ipfs.Error
	require.True(t, errors.As(err, &apiErr), "an offline node answers that it lacks the block: %v", err)
	require.Contains(t, apiErr.Message, "not found locally")
}

func TestIPFSGatewayServesAddedFile(t *testing.T) {
	t.Parallel()
	node := StartIPFS(t)
	client, err := ipfs.New(ipfs.Config{URL: node.URL()})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	ctx := context.Background()
	cid, err := client.Add(ctx, []byte("through the gateway"), cas.CIDv1)
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, node.GatewayURL()+"/ipfs/"+cid, nil)
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	require.NoError(t, err)
	require.Equal(t, "through the gateway", string(body))
}
