package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// rawClient sends requests of any method and path over one keep-alive connection, which
// http.Client would normalise or refuse.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// do sends one request and returns its response with the body read.
func (c *rawClient) do(method, target string) (*http.Response, []byte) {
	c.t.Helper()
	_, err := fmt.Fprintf(c.conn, "%s %s HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n", method, target)
	require.NoError(c.t, err)
	resp, err := http.ReadResponse(c.r, &http.Request{Method: method})
	require.NoError(c.t, err, "%s %s", method, target)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, body
}

// seriesCount is the number of series the registry exposes.
func seriesCount(t *testing.T, g prometheus.Gatherer) int {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomToken(r *rand.Rand, min, max int) string {
	b := make([]byte, min+r.IntN(max-min+1))
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}

// pathKinds are the kinds of target the random requests use; within a kind, the answer (route,
// status) depends only on the method, so one request per kind and method meets every label
// combination the random ones can.
var pathKinds = []func(r *rand.Rand) string{
	func(r *rand.Rand) string { return "/" + randomToken(r, 1, 30) + "/" + randomToken(r, 1, 30) }, // no route
	func(r *rand.Rand) string { return "/things/" + randomToken(r, 1, 60) + "?q=" + randomToken(r, 0, 9) },
	func(r *rand.Rand) string { return "/things/" + randomToken(r, 1, 9) + "/../" + randomToken(r, 1, 9) }, // redirect
	func(r *rand.Rand) string { return "/things/" + randomToken(r, 1, 9) + "/" + randomToken(r, 1, 9) },
	func(*rand.Rand) string { return "/healthcheck" },
}

func TestRandomMethodsAndPathsAddNoSeries(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Routes: func(mux Router) {
		mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
		mux.HandleFunc("POST /things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	}})
	c := dialRaw(t, b.srv.Addr())
	r := rand.New(rand.NewPCG(11, 12))

	// Every label combination once: each kind of path with each standard method and one
	// made-up method.
	for _, kind := range pathKinds {
		for _, m := range append(standardMethods, "MADEUP") {
			c.do(m, kind(r))
		}
	}
	before := seriesCount(t, b.reg)

	for i := range 10_000 {
		method := standardMethods[r.IntN(len(standardMethods))]
		if i%2 == 0 {
			method = strings.ToUpper(randomToken(r, 1, 20))
		}
		c.do(method, pathKinds[r.IntN(len(pathKinds))](r))
	}
	require.Equal(t, before, seriesCount(t, b.reg), "10,000 random requests added series")

	code, body := get(t, b.base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `method="other",route="unmatched"`)
	require.Contains(t, string(body), `code="418",method="GET",route="GET /things/{id}"`)
	require.Less(t, len(body), 64<<10)
}

// TestRouterErrorsAreJSON: the router's own 404 and 405 get the JSON error body, and a route's
// own 404 keeps its body; so with a guard in front (--auth-tokens-def), which hands the router a
// copy of the request.
func TestRouterErrorsAreJSON(t *testing.T) {
	t.Parallel()
	guard, err := ParseTokenAuth(`^/guarded|r|`, "r=s3cret")
	require.NoError(t, err)
	for name, g := range map[string]func(http.Handler) http.Handler{"no guard": nil, "a guard": guard.Wrap} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Guard: g, Routes: func(mux Router) {
				mux.HandleFunc("POST /things/{id}", func(w http.ResponseWriter, r *http.Request) {
					WriteError(w, http.StatusNotFound, "no_such_thing", "no thing "+r.PathValue("id"))
				})
			}})
			long := strings.Repeat("p", 4000)
			resp, body := do(t, http.MethodGet, b.base+"/"+long, "")
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Equal(t, "not_found", errorCode(t, body))
			require.NotContains(t, string(body), "ppp", "the path is not echoed")

			resp, body = do(t, http.MethodDelete, b.base+"/things/x", "")
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Equal(t, "POST", resp.Header.Get("Allow"))
			var eb ErrorBody
			require.NoError(t, json.Unmarshal(body, &eb))
			require.Equal(t, "method_not_allowed", eb.Code)

			// A handler's own 404 keeps its body.
			resp, body = do(t, http.MethodPost, b.base+"/things/x", "")
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Equal(t, "no_such_thing", errorCode(t, body))
		})
	}
}

func TestMethodLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"GET": "GET", "PATCH": "PATCH", "CONNECT": "CONNECT", "get": "other", "PROPFIND": "other", "": "other",
	} {
		require.Equal(t, want, methodLabel(in), in)
	}
}

func TestRouteLabelsAreBounded(t *testing.T) {
	t.Parallel()
	var l routeLabels
	for i := range maxRouteLabels + 10 {
		r := &http.Request{Method: http.MethodGet, Pattern: fmt.Sprintf("GET /p%d", i)}
		got := l.of(r)
		if i < maxRouteLabels {
			require.Equal(t, r.Pattern, got)
		} else {
			require.Equal(t, routeOther, got)
		}
	}
	require.Equal(t, "GET /p0", l.of(&http.Request{Method: http.MethodGet, Pattern: "GET /p0"}), "known patterns stay labels")
	require.Equal(t, routeUnmatched, l.of(&http.Request{Method: http.MethodGet}))
	require.Equal(t, routeUnmatched, l.of(&http.Request{Method: http.MethodConnect, Pattern: "/made/up/"}),
		"a CONNECT redirect's path is not learnt")
	require.Equal(t, "GET /p1", l.of(&http.Request{Method: http.MethodConnect, Pattern: "GET /p1"}))
}
