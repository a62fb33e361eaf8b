package splinter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// Defaults of Config.
const (
	// TimeoutDefault bounds each HTTP request.
	TimeoutDefault = 15 * time.Second
)

const (
	// StatusesLimit is the most ids sent in one GET batch_statuses; the ids travel in the query
	// string, and 30 ids of 128 characters keep the URL under 4 KiB.
	StatusesLimit = 30
	// ProtocolVersion is the scabbard REST protocol version the client speaks, sent in the
	// SplinterProtocolVersion header.
	ProtocolVersion = "1"
)

const (
	maxErrorBody  = 64 << 10
	maxStatusBody = 4 << 20
)

// Config configures a Client.
type Config struct {
	// URL is the base URL of the Splinter REST API, e.g. "http://splinterd:8085".
	URL string
	// Timeout bounds each HTTP request. Zero means TimeoutDefault.
	Timeout time.Duration
	// Authorization, when set, is sent as the Authorization header (e.g. "Bearer Cylinder:…").
	Authorization string
	// HTTPClient sends the requests. Nil means a client of its own that does not follow
	// redirects.
	HTTPClient *http.Client
}

// LogValue leaves the Authorization secret out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", c.URL),
		slog.Duration("timeout", cmp.Or(c.Timeout, TimeoutDefault)),
		slog.Bool("authorization_set", c.Authorization != ""),
	)
}

// Client is the Splinter scabbard implementation of ledger.Client. It is safe for concurrent
// use.
type Client struct {
	base    string
	timeout time.Duration
	auth    string
	http    *http.Client
}

var _ ledger.Client = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("new splinter client: URL is empty")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("new splinter client: URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("new splinter client: URL %q: want http(s)://host[:port][/path]", cfg.URL)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("new splinter client: negative timeout %s", cfg.Timeout)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = sawtooth.NewHTTPClient(nil)
	}
	return &Client{
		base:    strings.TrimRight(u.String(), "/"),
		timeout: cmp.Or(cfg.Timeout, TimeoutDefault),
		auth:    cfg.Authorization,
		http:    hc,
	}, nil
}

// ParseServiceID splits a "circuit::service" service id.
func ParseServiceID(serviceID string) (circuit, service string, err error) {
	circuit, service, ok := strings.Cut(serviceID, "::")
	if !ok || circuit == "" || service == "" || strings.Contains(service, "::") {
		return "", "", fmt.Errorf("service id %q: want \"<circuit>::<service>\"", serviceID)
	}
	return circuit, service, nil
}

// Submit posts batchList to the service's batches endpoint. A service id that does not parse
// is Rejected: no request for it can ever succeed.
func (c *Client) Submit(ctx context.Context, batchList []byte, serviceID string) ledger.Result {
	prefix, err := c.servicePath(serviceID)
	if err != nil {
		return ledger.Result{Class: ledger.Rejected, Message: err.Error(), Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, prefix+"/batches", bytes.NewReader(batchList))
	if err != nil {
		return ledger.Result{Class: ledger.Retry, Message: "build request: " + err.Error(), Err: err}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return ledger.ResultFromError(ctx, err, c.timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		body = nil
	}
	return ledger.ResultFromResponse(resp.StatusCode, body)
}

// Statuses asks the service's batch_statuses endpoint about ids, StatusesLimit ids per request,
// without waiting. Ids that are empty or contain a comma cannot be asked for and are UNKNOWN.
func (c *Client) Statuses(ctx context.Context, ids []string, serviceID string) (map[string]ledger.BatchStatus, error) {
	prefix, err := c.servicePath(serviceID)
	if err != nil {
		return nil, fmt.Errorf("batch statuses: %w", err)
	}
	out := make(map[string]ledger.BatchStatus, len(ids))
	var ask []string
	for _, id := range ids {
		if _, dup := out[id]; dup {
			continue
		}
		out[id] = ledger.BatchStatus{Status: ledger.StatusUnknown}
		if id != "" && !strings.Contains(id, ",") {
			ask = append(ask, id)
		}
	}
	for chunk := range slices.Chunk(ask, StatusesLimit) {
		if err := c.statuses(ctx, prefix, chunk, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) statuses(ctx context.Context, prefix string, ids []string, out map[string]ledger.BatchStatus) error {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q := url.Values{"ids": {strings.Join(ids, ",")}}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, prefix+"/batch_statuses?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("batch statuses: build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	c.setHeaders(req)
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
	var infos []struct {
		ID     string `json:"id"`
		Status struct {
			Type    string          `json:"statusType"`
			Message json.RawMessage `json:"message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &infos); err != nil {
		return fmt.Errorf("batch statuses: decode answer: %w", err)
	}
	for _, info := range infos {
		if _, asked := out[info.ID]; !asked {
			continue
		}
		st, err := mapStatus(info.Status.Type, info.Status.Message)
		if err != nil {
			return fmt.Errorf("batch statuses: batch %.16s…: %w", info.ID, err)
		}
		out[info.ID] = st
	}
	return nil
}

// mapStatus maps a scabbard statusType to a ledger status (see the package doc).
func mapStatus(statusType string, message json.RawMessage) (ledger.BatchStatus, error) {
	switch statusType {
	case "Unknown":
		return ledger.BatchStatus{Status: ledger.StatusUnknown}, nil
	case "Pending", "Valid":
		return ledger.BatchStatus{Status: ledger.StatusPending}, nil
	case "Committed":
		return ledger.BatchStatus{Status: ledger.StatusCommitted}, nil
	case "Invalid":
		var txns []struct {
			TransactionID string `json:"transaction_id"`
			ErrorMessage  string `json:"error_message"`
		}
		if len(message) > 0 {
			if err := json.Unmarshal(message, &txns); err != nil {
				return ledger.BatchStatus{}, fmt.Errorf("decode invalid transactions: %w", err)
			}
		}
		msgs := make([]string, 0, len(txns))
		for _, t := range txns {
			if t.ErrorMessage != "" {
				msgs = append(msgs, t.ErrorMessage)
			}
		}
		return ledger.BatchStatus{Status: ledger.StatusInvalid, Message: strings.Join(msgs, "; ")}, nil
	}
	return ledger.BatchStatus{}, fmt.Errorf("unknown statusType %q", statusType)
}

func (c *Client) servicePath(serviceID string) (string, error) {
	circuit, service, err := ParseServiceID(serviceID)
	if err != nil {
		return "", err
	}
	return c.base + "/scabbard/" + url.PathEscape(circuit) + "/" + url.PathEscape(service), nil
}

func (c *Client) setHeaders(req *http.Request) {
	req.Header.Set("SplinterProtocolVersion", ProtocolVersion)
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
}

// CloseIdleConnections closes the idle connections of the client's HTTP client, e.g. at
// shutdown.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }
