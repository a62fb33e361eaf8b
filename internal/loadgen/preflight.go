package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ErrPreflight is wrapped by every refusal to start: the target does not answer, or it serves
// another DID method than the run would sign for.
var ErrPreflight = errors.New("pre-flight check failed")

// preflightTimeout bounds each pre-flight request.
const preflightTimeout = 5 * time.Second

// preflight checks every target before any load is sent: that it answers, and that its DID
// method is the run's. A run against the wrong method would have every resolution refused and
// report it as timeouts; one against nothing would report only transport errors after the
// whole duration. A target without GET /version (another Sidetree node) is not refused; its
// method is not checked.
func (r *runner) preflight(ctx context.Context, out io.Writer) error {
	for _, target := range r.targets {
		info, err := r.version(ctx, target)
		if err != nil {
			return fmt.Errorf("%w: %s does not answer GET /version: %w", ErrPreflight, target, err)
		}
		switch {
		case info == nil:
			fmt.Fprintf(out, "pre-flight: %s has no /version; its DID method is not checked\n", target)
		case info.Protocol.DIDMethod != r.cfg.Method:
			return fmt.Errorf("%w: %s serves DID method %q, this run signs for %q: pass --did-method %s",
				ErrPreflight, target, info.Protocol.DIDMethod, r.cfg.Method, info.Protocol.DIDMethod)
		default:
			fmt.Fprintf(out, "pre-flight: %s is anchord %s (revision %s), DID method %s, batch writer timeout %s\n",
				target, info.Version, info.Revision, info.Protocol.DIDMethod, info.Protocol.BatchWriterTimeout)
		}
	}
	return nil
}

// versionInfo is the part of GET /version the pre-flight reads.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Protocol struct {
		DIDMethod          string `json:"didMethod"`
		BatchWriterTimeout string `json:"batchWriterTimeout"`
	} `json:"protocol"`
}

// version returns the target's GET /version, or nil when it has none (404).
func (r *runner) version(ctx context.Context, target string) (*versionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/version", nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	var info versionInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("read /version: %w", err)
	}
	return &info, nil
}
