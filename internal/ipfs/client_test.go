package ipfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/servicetest"
)

type testBundle struct {
	node   *servicetest.IPFS
	client *Client
}

// setup starts a private Kubo node and a client for it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	node := servicetest.StartIPFS(t)
	client, err := New(Config{
		URL:            node.URL(),
		RequestTimeout: 20 * time.Second,
		Logger:         anchordtest.Logger(t),
		Registerer:     prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return &testBundle{node: node, client: client}
}

// randomBytes returns n bytes from a generator seeded by seed, so a failure names its input.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestAddSameCIDAsCAS is the contract the CAS store relies on: for every size around the
// chunk boundaries, and some random ones, the node names a file exactly as cas.ComputeCID does
// in both CID versions, keeps it pinned, and returns the same bytes.
func TestAddSameCIDAsCAS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const kib, mib = 1 << 10, 1 << 20
	sizes := []int{0, 1, kib, 255 * kib, 256 * kib, 256*kib + 1, mib, 3 * mib}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random sizes from seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for range 6 {
		sizes = append(sizes, r.IntN(3*mib))
	}
	for i, size := range sizes {
		for _, v := range []cas.CIDVersion{cas.CIDv0, cas.CIDv1} {
			t.Run(fmt.Sprintf("%dB/v%d", size, v), func(t *testing.T) {
				t.Parallel()
				ctx := anchordtest.Context(t, time.Minute)
				data := randomBytes(seed+uint64(i), size)
				cid, err := b.client.Add(ctx, data, v)
				require.NoError(t, err)
				require.Equal(t, cas.ComputeCID(data, v), cid)

				got, err := b.client.Get(ctx, cid, int64(size)+1)
				require.NoError(t, err)
				require.Equal(t, len(data), len(got))
				require.True(t, string(data) == string(got), "bytes differ")

				pinned, err := b.client.Pinned(ctx, cid)
				require.NoError(t, err)
				require.True(t, pinned)
			})
		}
	}
}

// TestAddTwoLevelDAG crosses 174 chunks, where the balanced layout grows a second level of
// internal nodes: the only shape the smaller sizes do not reach.
func TestAddTwoLevelDAG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("adds 43.5 MiB")
	}
	b := setup(t)
	ctx := anchordtest.Context(t, 2*time.Minute)
	data := randomBytes(7, 174*256<<10+1)
	for _, v := range []cas.CIDVersion{cas.CIDv0, cas.CIDv1} {
		cid, err := b.client.Add(ctx, data, v)
		require.NoError(t, err, "v%d", v)
		got, err := b.client.Get(ctx, cid, int64(len(data)))
		require.NoError(t, err)
		require.True(t, string(data) == string(got), "bytes differ")
	}
}

func TestCatLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := anchordtest.Context(t, time.Minute)
	for _, size := range []int{2, 300 << 10} { // one block, and a DAG
		data := randomBytes(uint64(size), size)
		cid, err := b.client.Add(ctx, data, cas.CIDv1)
		require.NoError(t, err)

		got, err := b.client.Cat(ctx, cid, int64(size))
		require.NoError(t, err, "a file of exactly the limit is allowed")
		require.Len(t, got, size)

		_, err = b.client.Cat(ctx, cid, int64(size)-1)
		require.ErrorIs(t, err, ErrTooLarge)
		_, err = b.client.Get(ctx, cid, int64(size)-1)
		require.ErrorIs(t, err, ErrTooLarge)
	}
	_, err := b.client.Cat(ctx, cas.ComputeCID([]byte("x"), cas.CIDv0), 0)
	require.Error(t, err, "a limit is required")
	require.Equal(t, 2.0, testutil.ToFloat64(b.client.m.requests.WithLabelValues("cat", outcomeTooLarge)))
	require.Equal(t, 2.0, testutil.ToFloat64(b.client.m.requests.WithLabelValues("get", outcomeTooLarge)))
}

// TestNodeStoppedAndBack: while the node is down every request fails with ErrUnavailable (the
// caller retries later); once it is back the same client works, and what was added before is
// still there.
func TestNodeStoppedAndBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := anchordtest.Context(t, time.Minute)
	before := []byte("added before the stop")
	cid, err := b.client.Add(ctx, before, cas.CIDv0)
	require.NoError(t, err)

	b.node.Stop()
	_, err = b.client.Add(ctx, []byte("added while stopped"), cas.CIDv0)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "ipfs add:")
	_, err = b.client.Cat(ctx, cid, 1<<10)
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = b.client.Pinned(ctx, cid)
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = b.client.Version(ctx)
	require.ErrorIs(t, err, ErrUnavailable)
	require.Equal(t, 1.0, testutil.ToFloat64(b.client.m.requests.WithLabelValues("add", outcomeUnavailable)))

	b.node.Start()
	later := []byte("added after the restart")
	cid2, err := b.client.Add(ctx, later, cas.CIDv0)
	require.NoError(t, err)
	require.Equal(t, cas.ComputeCID(later, cas.CIDv0), cid2)
	got, err := b.client.Get(ctx, cid, 1<<10)
	require.NoError(t, err)
	require.Equal(t, before, got)
}

// TestMissingContent: an offline node answers at once that it lacks a file, as an *Error; Pin
// cannot fetch it, Pinned says no, and a wiped node can be refilled with Add.
func TestMissingContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := anchordtest.Context(t, time.Minute)
	data := []byte("a file the node will lose")
	cid, err := b.client.Add(ctx, data, cas.CIDv1)
	require.NoError(t, err)
	b.node.Wipe()

	_, err = b.client.Cat(ctx, cid, 1<<10)
	var apiErr *Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, 500, apiErr.Status)
	require.NotErrorIs(t, err, ErrUnavailable)
	err = b.client.Pin(ctx, cid)
	require.True(t, errors.As(err, &apiErr), "%v", err)
	pinned, err := b.client.Pinned(ctx, cid)
	require.NoError(t, err)
	require.False(t, pinned)

	_, err = b.client.Add(ctx, data, cas.CIDv1)
	require.NoError(t, err)
	pinned, err = b.client.Pinned(ctx, cid)
	require.NoError(t, err)
	require.True(t, pinned)
}

// TestPinsListsAdded: the listing holds every added file, CIDv0 ones as "Qm…" and CIDv1 ones in
// base32, as Add returned them; Pin of a file the node has is accepted.
func TestPinsListsAdded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := anchordtest.Context(t, time.Minute)
	want := map[string]bool{}
	for i := range 5 {
		v := cas.CIDVersion(i % 2)
		cid, err := b.client.Add(ctx, randomBytes(uint64(i), 100+i), v)
		require.NoError(t, err)
		require.NoError(t, b.client.Pin(ctx, cid), "pinning again is a no-op")
		want[cid] = true
	}
	got := map[string]bool{}
	require.NoError(t, b.client.Pins(ctx, func(cid string) error {
		got[cid] = true
		return nil
	}))
	for cid := range want {
		require.True(t, got[cid], "%s is not listed in %v", cid, got)
	}
	// Besides ours, a new repository pins only the empty directory ipfs init creates.
	require.Len(t, got, len(want)+1)

	stop := errors.New("enough")
	err := b.client.Pins(ctx, func(string) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v, err := b.client.Version(anchordtest.Context(t, time.Minute))
	require.NoError(t, err)
	require.Equal(t, "0.43.1", v)
	require.Equal(t, 1.0, testutil.ToFloat64(b.client.m.requests.WithLabelValues("version", outcomeOK)))
}

func TestCallerCancelIsNotUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.client.Version(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrUnavailable)
}

// roundTripFunc answers requests in-process, for the answers a healthy Kubo never gives.
type roundTripFunc func(*http.Request) *http.Response

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

// fakeClient returns a client whose requests all get answer's response.
func fakeClient(t *testing.T, answer func(*http.Request) *http.Response) *Client {
	t.Helper()
	c, err := New(Config{
		URL:              "http://127.0.0.1:1",
		MaxResponseBytes: 1 << 10,
		HTTPClient:       &http.Client{Transport: roundTripFunc(answer)},
	})
	require.NoError(t, err)
	return c
}

func response(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
}

func TestMisbehavingNode(t *testing.T) {
	t.Parallel()
	data := []byte("payload")
	cid := cas.ComputeCID(data, cas.CIDv0)
	ctx := context.Background()

	t.Run("add names another CID", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response {
			return response(200, `{"Name":"file","Hash":"`+cas.ComputeCID([]byte("other"), cas.CIDv0)+`","Size":"15"}`)
		})
		_, err := c.Add(ctx, data, cas.CIDv0)
		require.ErrorIs(t, err, ErrMismatch)
		require.Equal(t, 1.0, testutil.ToFloat64(c.m.requests.WithLabelValues("add", outcomeMismatch)))
	})
	t.Run("add names the v0 CID when v1 was asked", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response { return response(200, `{"Hash":"`+cid+`"}`) })
		_, err := c.Add(ctx, data, cas.CIDv1)
		require.ErrorIs(t, err, ErrMismatch)
	})
	t.Run("add sends the DAG options", func(t *testing.T) {
		t.Parallel()
		var query url.Values
		var part []byte
		c := fakeClient(t, func(r *http.Request) *http.Response {
			query = r.URL.Query()
			mr, err := r.MultipartReader()
			if err != nil {
				return response(400, err.Error())
			}
			p, err := mr.NextPart()
			if err != nil {
				return response(400, err.Error())
			}
			part, _ = io.ReadAll(p)
			return response(200, `{"Hash":"`+cas.ComputeCID(part, cas.CIDv1)+`"}`)
		})
		got, err := c.Add(ctx, data, cas.CIDv1)
		require.NoError(t, err)
		require.Equal(t, cas.ComputeCID(data, cas.CIDv1), got)
		require.Equal(t, data, part)
		for k, v := range map[string]string{
			"cid-version": "1", "raw-leaves": "false", "chunker": "size-262144", "hash": "sha2-256",
			"trickle": "false", "max-file-links": "174", "inline": "false", "pin": "true", "cid-base": "base32",
		} {
			require.Equal(t, v, query.Get(k), k)
		}
	})
	t.Run("add answer without a CID", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response { return response(200, `{"Name":"file"}`) })
		_, err := c.Add(ctx, data, cas.CIDv0)
		require.ErrorContains(t, err, "names no CID")
	})
	t.Run("add answer too long", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response {
			return response(200, `{"Name":"`+strings.Repeat("x", 2<<10)+`"}`)
		})
		_, err := c.Add(ctx, data, cas.CIDv0)
		require.ErrorContains(t, err, "answer longer than 1024 bytes")
		require.NotErrorIs(t, err, ErrUnavailable)
		_, err = c.Version(ctx)
		require.ErrorContains(t, err, "answer longer than 1024 bytes")
	})
	t.Run("answer not JSON", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response { return response(200, "Hash: Qm") })
		_, err := c.Add(ctx, data, cas.CIDv0)
		require.ErrorContains(t, err, "malformed answer")
		require.NotErrorIs(t, err, ErrUnavailable)
		require.Equal(t, 1.0, testutil.ToFloat64(c.m.requests.WithLabelValues("add", outcomeInvalid)))
		err = c.Pins(ctx, func(string) error { return nil })
		require.ErrorContains(t, err, "malformed answer line")
	})
	t.Run("answer cut by the connection", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response {
			r := response(200, "")
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"Hash":"Qm`), iotest.ErrReader(io.ErrUnexpectedEOF)))
			return r
		})
		_, err := c.Add(ctx, data, cas.CIDv0)
		require.ErrorIs(t, err, ErrUnavailable)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})
	t.Run("stream error trailer", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response {
			r := response(200, "partial")
			r.Trailer = http.Header{"X-Stream-Error": {"datastore broke"}}
			return r
		})
		_, err := c.Cat(ctx, cid, 1<<10)
		var apiErr *Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, "datastore broke", apiErr.Message)
	})
	t.Run("error body not JSON", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response { return response(502, "<html>bad gateway</html>\n") })
		_, err := c.Version(ctx)
		var apiErr *Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, 502, apiErr.Status)
		require.Equal(t, "<html>bad gateway</html>", apiErr.Message)
		require.Equal(t, 1.0, testutil.ToFloat64(c.m.requests.WithLabelValues("version", outcomeError)))
	})
	t.Run("announced size above limit", func(t *testing.T) {
		t.Parallel()
		body := &countingReader{r: strings.NewReader(strings.Repeat("x", 100))}
		c := fakeClient(t, func(*http.Request) *http.Response {
			r := response(200, "")
			r.Body = io.NopCloser(body)
			r.Header.Set("X-Content-Length", "100")
			return r
		})
		_, err := c.Cat(ctx, cid, 99)
		require.ErrorIs(t, err, ErrTooLarge)
		require.Zero(t, body.n, "refused before reading")
	})
	t.Run("get of wrong bytes", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(*http.Request) *http.Response { return response(200, "not the payload") })
		got, err := c.Cat(ctx, cid, 1<<10)
		require.NoError(t, err, "Cat does not check")
		require.Equal(t, "not the payload", string(got))
		_, err = c.Get(ctx, cid, 1<<10)
		require.ErrorIs(t, err, ErrMismatch)
		require.Equal(t, 1.0, testutil.ToFloat64(c.m.requests.WithLabelValues("get", outcomeMismatch)))
	})
	t.Run("bad arguments never reach the node", func(t *testing.T) {
		t.Parallel()
		c := fakeClient(t, func(r *http.Request) *http.Response {
			t.Errorf("unexpected request %s", r.URL)
			return response(500, "")
		})
		_, err := c.Add(ctx, data, cas.CIDVersion(2))
		require.ErrorContains(t, err, "neither 0 nor 1")
		_, err = c.Cat(ctx, "not-a-cid", 10)
		require.ErrorIs(t, err, cas.ErrInvalidCID)
		require.ErrorIs(t, c.Pin(ctx, "../../etc"), cas.ErrInvalidCID)
		_, err = c.Pinned(ctx, "")
		require.ErrorIs(t, err, cas.ErrInvalidCID)
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestUnansweredRequestTimesOut: a node that accepts the connection and says nothing is
// unavailable after RequestTimeout, not a hung caller.
func TestUnansweredRequestTimesOut(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	c, err := New(Config{URL: "http://" + l.Addr().String(), RequestTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	start := time.Now()
	_, err = c.Version(context.Background())
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}
