package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
)

// TestClusterInstanceTakesBackItsClaimsAfterAKill: a cluster instance killed while it held an
// inbox row claimed (for the claims' TTL, minutes) takes the row back as soon as it is started
// again on the same address, instead of leaving it to expire: its claims are held under its
// host and API address, which its next life has too. Real PostgreSQL and RabbitMQ.
func TestClusterInstanceTakesBackItsClaimsAfterAKill(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 1)
	n := c.nodes[0]
	m := regexp.MustCompile(`claim_owner=(\S+)`).FindStringSubmatch(n.process().Log())
	require.NotNil(t, m, "the start-up log names the claim owner")
	owner := m[1]
	require.Contains(t, owner, n.addr, "the claim owner is the instance's address, not its per-start id")

	n.process().Kill()

	// What the killed life held: an inbox row claimed for ten minutes.
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Config{URL: c.dbURL})
	require.NoError(t, err)
	defer st.Close()
	seq, inserted, err := st.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{
		ActivityID: "https://peer.invalid/activities/" + randomPrefix(t), Actor: "https://peer.invalid/services/orb",
		From: "https://peer.invalid/services/orb", Type: "Like", Body: []byte(`{}`), Source: store.InboxSourceLive,
	})
	require.NoError(t, err)
	require.True(t, inserted)
	claimed, err := st.ActivityInboxClaim(ctx, store.ActivityClaimParams{Owner: owner, Limit: 10, TTL: 10 * time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	restarted := time.Now()
	n.start()
	require.Contains(t, n.process().Log(), "took back inbox and delivery claims of a previous run")
	require.Regexp(t, `claims=1\b`, n.process().Log())
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		row, err := st.ActivityInboxGet(ctx, seq)
		require.NoError(t, err)
		return row.Status != store.InboxQueued || row.Attempts > 0
	}, "the row taken back was not handled")
	row, err := st.ActivityInboxGet(ctx, seq)
	require.NoError(t, err)
	t.Logf("the killed life's claim was taken back and the row handled %s after the restart: status %s, attempts %d, %s",
		time.Since(restarted).Round(time.Millisecond), row.Status, row.Attempts, strings.TrimSpace(row.LastError))
}
