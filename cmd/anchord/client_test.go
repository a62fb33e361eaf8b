package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
)

// apiClient talks to a running anchord the way an outside client would.
type apiClient struct {
	base string
	http *http.Client
}

func newClient(addr string) *apiClient {
	return &apiClient{base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
}

// post submits an operation; err is set only when no HTTP answer arrived.
func (c *apiClient) post(body []byte) (int, []byte, error) {
	resp, err := c.http.Post(c.base+"/sidetree/v1/operations", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *apiClient) resolve(did string) (int, []byte, error) {
	resp, err := c.http.Get(c.base + "/sidetree/v1/identifiers/" + did)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *apiClient) anchors(t *testing.T) []httpapi.AnchorView {
	t.Helper()
	var out []httpapi.AnchorView
	after := int64(0)
	for {
		resp, err := c.http.Get(fmt.Sprintf("%s/sidetree/v1/anchors?after=%d&limit=1000", c.base, after))
		require.NoError(t, err)
		var page httpapi.AnchorPage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		resp.Body.Close()
		out = append(out, page.Anchors...)
		if page.Next == nil {
			return out
		}
		after = *page.Next
	}
}

func (c *apiClient) fetch(uri string, maxSize int) ([]byte, error) {
	resp, err := c.http.Get(c.base + "/cas/" + uri)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /cas/%s: %s", uri, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, int64(maxSize)+1))
}

// batch reads one anchored batch back through the server's CAS.
func (c *apiClient) batch(t *testing.T, anchorString string) *batchfile.Batch {
	t.Helper()
	b, err := batchfile.Read(sidetree.DefaultProfile(), anchorString, c.fetch, batchfile.Limits{})
	require.NoError(t, err, anchorString)
	return b
}

// anchoredOperations reads every anchored batch back from the server's CAS, as another Sidetree
// node would, and returns the operations with their anchor sequence set.
func (c *apiClient) anchoredOperations(t *testing.T, p sidetree.Profile) []sidetree.AnchoredOperation {
	t.Helper()
	var ops []sidetree.AnchoredOperation
	for _, a := range c.anchors(t) {
		b, err := batchfile.Read(p, a.AnchorString, c.fetch, batchfile.Limits{})
		require.NoError(t, err, "anchor %d", a.Seq)
		require.NoError(t, b.ProvisionalErr, "anchor %d", a.Seq)
		require.Equal(t, a.OperationCount, len(b.Operations), "anchor %d", a.Seq)
		for _, op := range b.Operations {
			op.Sequence = uint64(a.Seq)
			ops = append(ops, op)
		}
	}
	return ops
}

// metric reads one unlabelled metric value from /metrics.
func (c *apiClient) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := c.http.Get(c.base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var v float64
		if n, _ := fmt.Sscanf(string(line), name+" %g", &v); n == 1 {
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// metricTotal sums every series of a metric family (0 when there is none yet).
func (c *apiClient) metricTotal(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := c.http.Get(c.base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var total float64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v); err == nil {
			total += v
		}
	}
	return total
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// eventuallyEach is anchordtest.Eventually for every item at once, on workers goroutines: each
// item gets timeout of its own, polled every interval. It returns the items whose condition
// never held, for the test to fail on. Checks of thousands of DIDs one after another spent
// most of their time waiting for answers, one at a time.
func eventuallyEach[T any](items []T, workers int, timeout, interval time.Duration, cond func(T) bool) []T {
	next := make(chan T)
	var mu sync.Mutex
	var failed []T
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for item := range next {
				deadline := time.Now().Add(timeout)
				for !cond(item) {
					if time.Now().After(deadline) {
						mu.Lock()
						failed = append(failed, item)
						mu.Unlock()
						break
					}
					time.Sleep(interval)
				}
			}
		})
	}
	for _, item := range items {
		next <- item
	}
	close(next)
	wg.Wait()
	return failed
}
