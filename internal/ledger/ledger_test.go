package ledger_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger"
)

func TestClassString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "retry", ledger.Retry.String())
	require.Equal(t, "accepted", ledger.Accepted.String())
	require.Equal(t, "rejected", ledger.Rejected.String())
	require.Equal(t, "class(9)", ledger.Class(9).String())
}

func TestResultString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "accepted 202", ledger.Result{Class: ledger.Accepted, HTTPStatus: 202}.String())
	require.Equal(t, "rejected 400 code 30: Submitted Batches Invalid: bad",
		ledger.Result{Class: ledger.Rejected, HTTPStatus: 400, Code: "30", Message: "Submitted Batches Invalid: bad"}.String())
	require.Equal(t, "retry: timeout after 1s", ledger.Result{Class: ledger.Retry, Message: "timeout after 1s"}.String())
}

func TestStatusFinal(t *testing.T) {
	t.Parallel()

	require.True(t, ledger.StatusCommitted.Final())
	require.True(t, ledger.StatusInvalid.Final())
	require.False(t, ledger.StatusPending.Final())
	require.False(t, ledger.StatusUnknown.Final())
}

func TestHTTPError(t *testing.T) {
	t.Parallel()

	var err error = &ledger.HTTPError{StatusCode: 503, Code: "15", Message: "Validator Not Ready"}
	require.Equal(t, "ledger answered HTTP 503 code 15: Validator Not Ready", err.Error())
	var he *ledger.HTTPError
	require.True(t, errors.As(err, &he))
	require.Equal(t, 503, he.StatusCode)
	require.Equal(t, "ledger answered HTTP 500", (&ledger.HTTPError{StatusCode: 500}).Error())
}
