package cosigner

import (
	"net/http"
	"time"
)

// EndpointClient returns the HTTP client for the operator's C2SP witnesses: those of the
// policies the operator configures (--witness-log-witnesses, --witness-log-monitor-policy),
// which this domain asks to cosign its log and reads the views of. They are endpoints the
// operator names, with their keys, as the IPFS node and the ledger are, not domains met through
// federation: no peer can add one, so their requests do not go through the peer client. Each
// request is bounded by timeout.
func EndpointClient(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A policy names a handful of witnesses, each asked once per checkpoint interval.
	t.MaxIdleConnsPerHost = 4
	return &http.Client{Timeout: timeout, Transport: t}
}
