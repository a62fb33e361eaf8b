package devledger

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scabbardStatus returns the statusType of one batch in a scabbard service.
func (b *testBundle) scabbardStatus(t *testing.T, service, id string) map[string]any {
	t.Helper()
	code, doc := b.do(t, http.MethodGet, "/scabbard/"+service+"/batch_statuses?ids="+url.QueryEscape(id), "", nil)
	require.Equal(t, http.StatusOK, code)
	arr := doc["array"].([]any)
	require.Len(t, arr, 1)
	info := arr[0].(map[string]any)
	require.Equal(t, id, info["id"])
	require.Contains(t, info, "timestamp")
	return info["status"].(map[string]any)
}

func TestScabbardRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	batch := b.build(t, "12.QmScabbard")
	code, doc := b.do(t, http.MethodPost, "/scabbard/AbCdE-01234/a000/batches", "application/octet-stream", batch.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, "/scabbard/AbCdE-01234/a000/batch_statuses?ids="+batch.ID, doc["link"])

	st := b.scabbardStatus(t, "AbCdE-01234/a000", batch.ID)
	require.Equal(t, "Pending", st["statusType"])
	require.Empty(t, st["message"])

	b.clock.Advance(5 * time.Second)
	st = b.scabbardStatus(t, "AbCdE-01234/a000", batch.ID)
	require.Equal(t, "Valid", st["statusType"])
	require.Equal(t, batch.TransactionIDs[0], st["message"].([]any)[0].(map[string]any)["transaction_id"])

	b.clock.Advance(5 * time.Second)
	require.Equal(t, "Committed", b.scabbardStatus(t, "AbCdE-01234/a000", batch.ID)["statusType"])

	// Each service is its own scope, and the Sawtooth routes are another.
	require.Equal(t, "Unknown", b.scabbardStatus(t, "AbCdE-01234/b000", batch.ID)["statusType"])
	require.Equal(t, "UNKNOWN", b.status(t, batch.ID)["status"])

	// The same anchor in another service is a separate ledger.
	code, _ = b.do(t, http.MethodPost, "/scabbard/AbCdE-01234/b000/batches", "", batch.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	b.clock.Advance(10 * time.Second)
	require.Equal(t, "Committed", b.scabbardStatus(t, "AbCdE-01234/b000", batch.ID)["statusType"])
	require.Equal(t, 2, b.srv.Stats().Accepted)
}

func TestScabbardInvalidAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	bad := b.build(t, "not an anchor")
	code, _ := b.do(t, http.MethodPost, "/scabbard/c/s/batches", "", bad.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	b.clock.Advance(10 * time.Second)
	st := b.scabbardStatus(t, "c/s", bad.ID)
	require.Equal(t, "Invalid", st["statusType"])
	msg := st["message"].([]any)[0].(map[string]any)
	require.Equal(t, bad.TransactionIDs[0], msg["transaction_id"])
	require.Contains(t, msg["error_message"], "not an anchor string")
	require.Equal(t, []any{}, msg["error_data"])

	code, doc := b.do(t, http.MethodPost, "/scabbard/c/s/batches", "", []byte("garbage"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "400", doc["code"])
	require.Equal(t, "Invalid body: not a valid list of batches", doc["message"])

	code, doc = b.do(t, http.MethodGet, "/scabbard/c/s/batch_statuses", "", nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "No batch IDs specified", doc["message"])

	two := b.build(t, "13.QmTwo")
	code, _ = b.do(t, http.MethodPost, "/scabbard/c/s/batches", "", two.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	code, doc = b.do(t, http.MethodGet, "/scabbard/c/s/batch_statuses?ids="+two.ID+","+strings.Repeat("0", 128), "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, doc["array"], 2)
}

func TestScabbardFaults(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		faults   FaultConfig
		wantCode int
		wantBody bool
	}{
		"429 has no body": {FaultConfig{TooManyRequests: 1}, http.StatusTooManyRequests, false},
		"503":             {FaultConfig{Unavailable: 1}, http.StatusServiceUnavailable, true},
		"400":             {FaultConfig{BadRequest: 1}, http.StatusBadRequest, true},
		"lost":            {FaultConfig{Lost: 1}, http.StatusAccepted, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Faults: tc.faults})
			batch := b.build(t, "14.QmFault")
			code, doc := b.do(t, http.MethodPost, "/scabbard/c/s/batches", "", batch.Bytes)
			require.Equal(t, tc.wantCode, code)
			require.Equal(t, tc.wantBody, doc != nil)
			require.Equal(t, "Unknown", b.scabbardStatus(t, "c/s", batch.ID)["statusType"])
		})
	}
}
