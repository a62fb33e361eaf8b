package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// The handlers' collaborators are small interfaces of this package; these stand-ins let the
// tests drive every branch of the status mapping. The real components are exercised end to end
// in the daemon's tests.
type opsFunc func(ctx context.Context, body []byte) ([]byte, error)

func (f opsFunc) Submit(ctx context.Context, body []byte) ([]byte, error) { return f(ctx, body) }

type resolverFunc func(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error)

func (f resolverFunc) Resolve(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error) {
	return f(ctx, did)
}

// ResolveVersion stands in for the versioned resolution: it marks the result with the version
// asked for, or fails with errVersionNotFound for version "missing".
func (f resolverFunc) ResolveVersion(ctx context.Context, did, versionID string, versionTime time.Time) ([]byte, sidetree.ResolutionStatus, error) {
	if versionID == "missing" {
		return nil, 0, fmt.Errorf("resolve: %w", errVersionNotFound)
	}
	body, status, err := f(ctx, did)
	version := versionID
	if !versionTime.IsZero() {
		version = versionTime.UTC().Format(time.RFC3339)
	}
	return bytes.Replace(body, []byte(`"didDocumentMetadata":{`), []byte(`"didDocumentMetadata":{"versionId":"`+version+`",`), 1), status, err
}

type casFunc func(ctx context.Context, cid string, max int) ([]byte, error)

func (f casFunc) Get(ctx context.Context, cid string, max int) ([]byte, error) {
	return f(ctx, cid, max)
}

type anchorsFunc func(ctx context.Context, p store.AnchorListParams) ([]store.Anchor, error)

func (f anchorsFunc) AnchorList(ctx context.Context, p store.AnchorListParams) ([]store.Anchor, error) {
	return f(ctx, p)
}

var (
	errCASNotFound = errors.New("cas: not found")
	errCASInvalid  = errors.New("cas: invalid cid")

	errVersionNotFound = errors.New("no such version")
)

func sidetreeServer(t *testing.T, maxBody int64) string {
	t.Helper()
	return sidetreeServerWith(t, maxBody, func(*SidetreeConfig) {})
}

// sidetreeServerWith is sidetreeServer with its configuration changed by mutate.
func sidetreeServerWith(t *testing.T, maxBody int64, mutate func(*SidetreeConfig)) string {
	t.Helper()
	cfg := SidetreeConfig{
		Operations: opsFunc(func(_ context.Context, body []byte) ([]byte, error) {
			switch string(body) {
			case "create":
				return []byte(`{"didDocument":{}}`), nil
			case "update":
				return nil, nil
			case "bad":
				return nil, fmt.Errorf("validate: %w", sidetree.Errorf(sidetree.CodeInvalidSignature, "signature does not verify"))
			case "full":
				return nil, fmt.Errorf("%w: read DID state: dial tcp 10.9.8.7:5432: connect: connection refused", intake.ErrRetryLater)
			}
			if strings.HasPrefix(string(body), "echo") {
				// A message that repeats the whole input, as a careless one would.
				return nil, sidetree.Errorf(sidetree.CodeInvalidProperty, "bad value %s", body)
			}
			return nil, errors.New("disk on fire")
		}),
		Resolver: resolverFunc(func(_ context.Context, did string) ([]byte, sidetree.ResolutionStatus, error) {
			switch did {
			case "did:sidetree:found":
				return []byte(`{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:found"},"didDocumentMetadata":{"method":{"published":true}}}`), sidetree.ResolutionFound, nil
			case "did:sidetree:gone":
				return []byte(`{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:gone"},"didDocumentMetadata":{"deactivated":true}}`), sidetree.ResolutionDeactivated, nil
			case "did:sidetree:missing":
				return nil, sidetree.ResolutionNotFound, nil
			case "did:sidetree:dberror":
				return nil, 0, errors.New("db down")
			}
			return nil, 0, sidetree.Errorf(sidetree.CodeInvalidDID, "bad DID")
		}),
		CAS: casFunc(func(_ context.Context, cid string, _ int) ([]byte, error) {
			switch cid {
			case "QmHere":
				return []byte{1, 2, 3}, nil
			case "QmGone":
				return nil, errCASNotFound
			}
			return nil, fmt.Errorf("parse: %w", errCASInvalid)
		}),
		DIDMethod: "sidetree", VersionNotFound: errVersionNotFound,
		CASNotFound: errCASNotFound, CASInvalid: errCASInvalid,
		Anchors: anchorsFunc(func(_ context.Context, p store.AnchorListParams) ([]store.Anchor, error) {
			var out []store.Anchor
			for s := p.AfterSeq + 1; s <= 5 && len(out) < p.Limit; s++ {
				out = append(out, store.Anchor{Seq: s, AnchorString: fmt.Sprintf("%d.Qm", s), Status: store.AnchorCompleted, CreatedAt: time.Unix(s, 0)})
			}
			return out, nil
		}),
		RetryAfter: 2 * time.Second,
	}
	mutate(&cfg)
	b := setup(t, Config{MaxBodyBytes: maxBody, Routes: SidetreeRoutes(cfg)})
	return b.base
}

func do(t *testing.T, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(body, &eb), "body %s", body)
	require.NotEmpty(t, eb.Message)
	return eb.Code
}

func TestPostOperationStatusMapping(t *testing.T) {
	t.Parallel()
	base := sidetreeServer(t, 4096)
	url := base + "/sidetree/v1/operations"

	resp, body := do(t, http.MethodPost, url, "create")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/did+ld+json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"didDocument":{}}`, string(body))

	resp, body = do(t, http.MethodPost, url, "update")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body)

	resp, body = do(t, http.MethodPost, url, "bad")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "jws_failed_signature_validation", errorCode(t, body))

	resp, body = do(t, http.MethodPost, url, "full")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
	require.Equal(t, "unavailable", errorCode(t, body))
	require.NotContains(t, string(body), "10.9.8.7", "internal addresses stay in the log")

	resp, body = do(t, http.MethodPost, url, "echo"+strings.Repeat("z", 4000))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(body, &eb))
	require.LessOrEqual(t, len(eb.Message), MaxMessageBytes)
	require.True(t, strings.HasSuffix(eb.Message, "..."))

	resp, body = do(t, http.MethodPost, url, strings.Repeat("x", 4097))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Equal(t, "request_too_large", errorCode(t, body))

	resp, body = do(t, http.MethodPost, url, "anything else")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "internal_error", errorCode(t, body))
	require.NotContains(t, string(body), "disk on fire", "internal details stay in the log")

	resp, _ = do(t, http.MethodGet, url, "")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestBodyReadErrorNamesNoAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ReadTimeout: 300 * time.Millisecond, Routes: SidetreeRoutes(SidetreeConfig{
		Operations: opsFunc(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("never called") }),
	})})
	conn, err := net.Dial("tcp", b.srv.Addr())
	require.NoError(t, err)
	defer conn.Close()
	// Promise 100 bytes and send 5: the server's read times out, with an error that names both
	// ends of the connection.
	_, err = fmt.Fprintf(conn, "POST /sidetree/v1/operations HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nshort")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "invalid_request", errorCode(t, body))
	require.NotContains(t, string(body), "127.0.0.1")
}

func TestGetIdentifierStatusMapping(t *testing.T) {
	t.Parallel()
	base := sidetreeServer(t, 4096)
	for did, want := range map[string]int{
		"did:sidetree:found":   http.StatusOK,
		"did:sidetree:gone":    http.StatusGone,
		"did:sidetree:missing": http.StatusNotFound,
		"did:sidetree:dberror": http.StatusServiceUnavailable,
		"not-a-did":            http.StatusBadRequest,
	} {
		resp, body := do(t, http.MethodGet, base+"/sidetree/v1/identifiers/"+did, "")
		require.Equal(t, want, resp.StatusCode, did)
		if want >= 400 && want != http.StatusGone {
			errorCode(t, body)
		}
	}
}

func TestGetCAS(t *testing.T) {
	t.Parallel()
	base := sidetreeServer(t, 4096)
	resp, body := do(t, http.MethodGet, base+"/cas/QmHere", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []byte{1, 2, 3}, body)
	resp, _ = do(t, http.MethodGet, base+"/cas/QmGone", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, body = do(t, http.MethodGet, base+"/cas/nonsense", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "invalid_cid", errorCode(t, body))
	require.NotContains(t, string(body), "nonsense", "the CID is not echoed")
}

func TestGetAnchorsPages(t *testing.T) {
	t.Parallel()
	base := sidetreeServer(t, 4096)
	var seqs []int64
	after := ""
	for {
		resp, body := do(t, http.MethodGet, base+"/sidetree/v1/anchors?limit=2"+after, "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var page AnchorPage
		require.NoError(t, json.Unmarshal(body, &page))
		for _, a := range page.Anchors {
			seqs = append(seqs, a.Seq)
			require.Equal(t, fmt.Sprintf("%d.Qm", a.Seq), a.AnchorString)
		}
		if page.Next == nil {
			break
		}
		after = fmt.Sprintf("&after=%d", *page.Next)
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5}, seqs)
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=-1", "after=x"} {
		resp, body := do(t, http.MethodGet, base+"/sidetree/v1/anchors?"+q, "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
		require.Equal(t, "invalid_parameter", errorCode(t, body))
	}
}
