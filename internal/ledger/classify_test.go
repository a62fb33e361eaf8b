package ledger_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger"
)

func TestResultFromResponse(t *testing.T) {
	t.Parallel()

	sawtoothInvalid := `{"error":{"code":30,"title":"Submitted Batches Invalid","message":"The submitted BatchList was rejected by the validator."}}`
	for name, tc := range map[string]struct {
		status      int
		body        string
		wantClass   ledger.Class
		wantCode    string
		wantMessage string
	}{
		"202":                  {202, `{"link":"http://x/batch_statuses?id=a"}`, ledger.Accepted, "", ""},
		"200":                  {200, "", ledger.Accepted, "", ""},
		"400 sawtooth":         {400, sawtoothInvalid, ledger.Rejected, "30", "Submitted Batches Invalid: The submitted BatchList was rejected by the validator."},
		"400 splinter":         {400, `{"code":"400","message":"Invalid body: not a valid list of batches"}`, ledger.Rejected, "400", "Invalid body: not a valid list of batches"},
		"400 splinter guard":   {400, `{"message":"Client must support protocol version 1 or greater."}`, ledger.Rejected, "", "Client must support protocol version 1 or greater."},
		"404 splinter":         {404, `{"code":"404","message":"Circuit not found"}`, ledger.Rejected, "404", "Circuit not found"},
		"404 no body":          {404, "", ledger.Rejected, "", "404 Not Found"},
		"408 sawtooth":         {408, `{"error":{"code":19,"title":"Send timed out","message":"Retry limit reached."}}`, ledger.Retry, "19", "Send timed out: Retry limit reached."},
		"429 sawtooth":         {429, `{"error":{"code":31,"title":"Unable to Accept Batches","message":"full queue"}}`, ledger.Retry, "31", "Unable to Accept Batches: full queue"},
		"429 bodyless":         {429, "", ledger.Retry, "", "429 Too Many Requests"},
		"500":                  {500, `{"error":{"code":10,"title":"Unknown Validator Error","message":""}}`, ledger.Retry, "10", "Unknown Validator Error"},
		"502 html from proxy":  {502, "<html><body><h1>502 Bad Gateway</h1>\n</body></html>", ledger.Retry, "", "<html><body><h1>502 Bad Gateway</h1> </body></html>"},
		"503 sawtooth":         {503, `{"error":{"code":15,"title":"Validator Not Ready","message":"no genesis block"}}`, ledger.Retry, "15", "Validator Not Ready: no genesis block"},
		"401 is retry":         {401, `{"code":"401","message":"Client is not authorized"}`, ledger.Retry, "401", "Client is not authorized"},
		"302 is retry":         {302, "", ledger.Retry, "", "302 Found"},
		"unknown status":       {599, "", ledger.Retry, "", "HTTP 599"},
		"json array body":      {500, `[1,2]`, ledger.Retry, "", "[1,2]"},
		"not utf8":             {500, "\xff\xfe", ledger.Retry, "", "500 Internal Server Error"},
		"error object no text": {500, `{"error":{}}`, ledger.Retry, "", `{"error":{}}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := ledger.ResultFromResponse(tc.status, []byte(tc.body))
			require.Equal(t, tc.wantClass, r.Class)
			require.Equal(t, tc.status, r.HTTPStatus)
			require.Equal(t, tc.wantCode, r.Code)
			require.Equal(t, tc.wantMessage, r.Message)
			require.False(t, r.MaybeProcessed)
			require.NoError(t, r.Err)
		})
	}
}

func TestParseErrorBodyTruncates(t *testing.T) {
	t.Parallel()

	code, msg := ledger.ParseErrorBody(500, []byte(strings.Repeat("é", 1000)))
	require.Empty(t, code)
	require.True(t, strings.HasSuffix(msg, "…"))
	require.LessOrEqual(t, len(msg), 512+len("…"))
}

func TestResultFromError(t *testing.T) {
	t.Parallel()

	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	readErr := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

	for name, tc := range map[string]struct {
		ctx             context.Context
		err             error
		wantMessage     string
		wantMaybeCalled bool
	}{
		"deadline":         {live, context.DeadlineExceeded, "timeout after 2s", true},
		"connection reset": {live, readErr, readErr.Error(), true},
		"refused":          {live, dialErr, dialErr.Error(), false},
		"caller cancelled": {cancelled, context.Canceled, "request abandoned: context canceled", true},
		"eof":              {live, errors.New("unexpected EOF"), "unexpected EOF", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := ledger.ResultFromError(tc.ctx, tc.err, 2*time.Second)
			require.Equal(t, ledger.Retry, r.Class)
			require.Zero(t, r.HTTPStatus)
			require.Equal(t, tc.wantMessage, r.Message)
			require.Equal(t, tc.wantMaybeCalled, r.MaybeProcessed)
			require.ErrorIs(t, r.Err, tc.err)
		})
	}
}

func TestResultFromRealTransportErrors(t *testing.T) {
	t.Parallel()

	// A port nobody listens on: the dial fails, so the ledger cannot hold the batch.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	ctx := context.Background()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/batches", nil)
	require.NoError(t, err)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Do(req)
	require.Error(t, err)
	r := ledger.ResultFromError(ctx, err, time.Second)
	require.Equal(t, ledger.Retry, r.Class)
	require.False(t, r.MaybeProcessed)
	require.Contains(t, r.Message, "refused")
}
