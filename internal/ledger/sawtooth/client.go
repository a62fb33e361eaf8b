package sawtooth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/ledger"
)

// Defaults of Config.
const (
	// TimeoutDefault bounds each HTTP request (Grid's submitter uses 15 s as well).
	TimeoutDefault = 15 * time.Second
)

// Limits of the Sawtooth REST API that the client respects.
const (
	// StatusesGetLimit is the most ids the client sends in one GET /batch_statuses; the API
	// documents GET for up to 15 ids and recommends POST beyond.
	StatusesGetLimit = 15
	// StatusesPostLimit is the most ids the client sends in one POST /batch_statuses, so that
	// one request stays small and quick for the validator.
	StatusesPostLimit = 100
)

const (
	maxErrorBody  = 64 << 10
	maxStatusBody = 4 << 20
	// apiCodeValidatorTimedOut is the Sawtooth API code of 503 "Validator Timed Out", whose
	// message says the request may or may not have been processed.
	apiCodeValidatorTimedOut = "17"
)

// Config configures a Client.
type Config struct {
	// URL is the base URL of the Sawtooth REST API, e.g. "http://localhost:8008".
	URL string
	// Timeout bounds each HTTP request. Zero means TimeoutDefault.
	Timeout time.Duration
	// HTTPClient sends the requests. Nil means a client of its own that does not follow
	// redirects (a redirect is then a Retry answer, not a silent re-POST).
	HTTPClient *http.Client
}

// Client is the Sawtooth REST API implementation of ledger.Client. It is safe for concurrent
// use. Sawtooth has one scope, so the serviceID arguments are ignored.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
}

var _ ledger.Client = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	base, err := baseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("new sawtooth client: %w", err)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("new sawtooth client: negative timeout %s", cfg.Timeout)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = NewHTTPClient(nil)
	}
	return &Client{base: base, timeout: cmp.Or(cfg.Timeout, TimeoutDefault), http: hc}, nil
}

// NewHTTPClient returns the http.Client a ledger client uses when none is configured: its own
// connection pool (sized for a few concurrent submitters), no redirects, no overall timeout
// (each request has its own), and tlsConfig for https (nil: the system's authorities).
func NewHTTPClient(tlsConfig *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Submit posts batchList to /batches as application/octet-stream. A 202 is Accepted.
func (c *Client) Submit(ctx context.Context, batchList []byte, _ string) ledger.Result {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.base+"/batches", bytes.NewReader(batchList))
	if err != nil {
		return ledger.Result{Class: ledger.Retry, Message: "build request: " + err.Error(), Err: err}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return ledger.ResultFromError(ctx, err, c.timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && resp.StatusCode/100 != 2 {
		// The status line is the answer; a body cut short only costs us the message.
		body = nil
	}
	r := ledger.ResultFromResponse(resp.StatusCode, body)
	if resp.StatusCode == http.StatusServiceUnavailable && r.Code == apiCodeValidatorTimedOut {
		r.MaybeProcessed = true
	}
	return r
}

// Statuses asks /batch_statuses about ids: one GET for up to StatusesGetLimit ids, else POSTs of
// up to StatusesPostLimit ids each. An id that is not 128 lower-case hex characters cannot name
// a Sawtooth batch and is reported UNKNOWN without asking (the API would refuse the whole
// request with 400).
func (c *Client) Statuses(ctx context.Context, ids []string, _ string) (map[string]ledger.BatchStatus, error) {
	out := make(map[string]ledger.BatchStatus, len(ids))
	var ask []string
	for _, id := range ids {
		if _, dup := out[id]; dup {
			continue
		}
		out[id] = ledger.BatchStatus{Status: ledger.StatusUnknown}
		if IsID(id) {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	if len(ask) <= StatusesGetLimit {
		if err := c.statuses(ctx, ask, false, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	for chunk := range slices.Chunk(ask, StatusesPostLimit) {
		if err := c.statuses(ctx, chunk, true, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) statuses(ctx context.Context, ids []string, post bool, out map[string]ledger.BatchStatus) error {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var req *http.Request
	var err error
	if post {
		body, merr := json.Marshal(ids)
		if merr != nil {
			return fmt.Errorf("batch statuses: encode ids: %w", merr)
		}
		req, err = http.NewRequestWithContext(rctx, http.MethodPost, c.base+"/batch_statuses", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		// Ids are plain hex (checked by the caller), so the list needs no escaping.
		req, err = http.NewRequestWithContext(rctx, http.MethodGet, c.base+"/batch_statuses?id="+strings.Join(ids, ","), nil)
	}
	if err != nil {
		return fmt.Errorf("batch statuses: build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("batch statuses: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return fmt.Errorf("batch statuses: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		code, msg := ledger.ParseErrorBody(resp.StatusCode, body)
		return fmt.Errorf("batch statuses: %w", &ledger.HTTPError{StatusCode: resp.StatusCode, Code: code, Message: msg})
	}
	var doc struct {
		Data []struct {
			ID                  string `json:"id"`
			Status              string `json:"status"`
			InvalidTransactions []struct {
				ID      string `json:"id"`
				Message string `json:"message"`
			} `json:"invalid_transactions"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("batch statuses: decode answer: %w", err)
	}
	for _, d := range doc.Data {
		if _, asked := out[d.ID]; !asked {
			continue
		}
		st := ledger.Status(d.Status)
		switch st {
		case ledger.StatusCommitted, ledger.StatusPending, ledger.StatusUnknown:
			out[d.ID] = ledger.BatchStatus{Status: st}
		case ledger.StatusInvalid:
			msgs := make([]string, 0, len(d.InvalidTransactions))
			for _, it := range d.InvalidTransactions {
				if it.Message != "" {
					msgs = append(msgs, it.Message)
				}
			}
			out[d.ID] = ledger.BatchStatus{Status: st, Message: strings.Join(msgs, "; ")}
		default:
			return fmt.Errorf("batch statuses: batch %.16s…: unknown status %q", d.ID, d.Status)
		}
	}
	return nil
}

func baseURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: want http(s)://host[:port][/path]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("URL %q: no query or fragment allowed", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// CloseIdleConnections closes the idle connections of the client's HTTP client, e.g. at
// shutdown.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }
