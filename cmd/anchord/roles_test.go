package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestSeparateSubmittersSurviveAKill runs the API (ledger backend, on PostgreSQL) with two
// separate submitter processes (--roles submitter) against a development ledger that answers
// 503 to a third of the submissions; one submitter is killed with SIGKILL mid-run. Every accepted
// operation still ends up committed, and the ledger never records a batch twice.
func TestSeparateSubmittersSurviveAKill(t *testing.T) {
	t.Parallel()
	led := devledgertest.Start(t, devledger.Config{
		NowFunc: time.Now, CommitDelay: 100 * time.Millisecond,
		Faults: devledger.FaultConfig{Seed: 5, Unavailable: 0.3},
	})
	db := storetest.PostgresURL(t)
	ledgerArgs := []string{"--database-url", db, "--anchor-backend", "ledger", "--ledger-url", led.URL,
		"--submitter-interval", "50ms", "--submitter-backoff-initial", "50ms", "--submitter-backoff-max", "200ms",
		"--submitter-claim-ttl", "3s", "--ledger-request-timeout", "1s",
		"--ledger-status-poll-interval", "500ms", "--task-manager-check-interval", "1s"}
	// The API instance runs submitters too ("all"); two more run nothing else. Batches of at
	// most 10 operations make 20 or more submissions of the 200 creates, so the ledger's faults
	// are met whatever the speed of intake (with few large batches, none was).
	apiAddr := anchordtest.FreeAddr(t)
	api := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: append([]string{"serve", "--host-url", apiAddr, "--batch-writer-timeout", "100ms", "--max-operation-count", "10"}, ledgerArgs...), Addr: apiAddr,
	})
	api.WaitHealthy(60 * time.Second)
	var subs []*anchordtest.Process
	for range 2 {
		addr := anchordtest.FreeAddr(t)
		s := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
			Args: append([]string{"serve", "--host-url", addr, "--roles", "submitter"}, ledgerArgs...), Addr: addr,
		})
		s.WaitHealthy(60 * time.Second)
		subs = append(subs, s)
	}

	c := newCrashClient(t)
	c.setServer(apiAddr)
	for i := range 200 {
		require.True(t, c.create())
		if i == 100 {
			subs[0].Kill()
		}
	}
	cl := newClient(apiAddr)
	for k := range c.accepted {
		anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
			code, _, err := cl.resolve("did:sidetree:" + k.suffix)
			return err == nil && code == http.StatusOK
		}, "%s never committed", k.suffix)
	}
	stats := led.Stats()
	require.Zero(t, stats.Duplicates, "no batch recorded twice")
	require.Equal(t, stats.Accepted, stats.Committed, "everything the ledger recorded was committed")
	require.Positive(t, stats.Faults["unavailable"])
	t.Logf("ledger: %d submissions, %d accepted, %d committed, faults %v", stats.Submissions, stats.Accepted, stats.Committed, stats.Faults)
}
