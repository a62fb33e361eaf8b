package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// witnessTiming makes the anchor status monitor quick enough for tests: it runs every second,
// looks at an anchor 2 s after its Offer, and fails an anchor 8 s + 2 s after it was written.
var witnessTiming = []string{
	"--anchor-backend", "witness", "--anchor-status-monitoring-interval", "1s",
	"--anchor-status-in-process-grace-period", "2s", "--max-witness-delay", "8s",
}

// invite makes d invite each of witnesses through the admin CLI and waits for their Accepts.
func (d *relayDomain) invite(witnesses ...*relayDomain) {
	d.t.Helper()
	for _, w := range witnesses {
		require.Contains(d.t, d.admin("witness", "add", w.actor), w.actor)
	}
	anchordtest.Eventually(d.t, 30*time.Second, 100*time.Millisecond, func() bool {
		var list struct {
			Items []federation.RelationshipView `json:"items"`
		}
		if err := json.Unmarshal([]byte(d.admin("witness", "list", "--json")), &list); err != nil {
			return false
		}
		for _, w := range witnesses {
			if !slices.ContainsFunc(list.Items, func(r federation.RelationshipView) bool {
				return r.Actor == w.actor && r.Status == store.RelationshipAccepted
			}) {
				return false
			}
		}
		return true
	}, "%s's witnesses accepted", d.name)
}

// publishedCredentials returns the anchor credentials of the Creates in a domain's outbox.
func (d *relayDomain) publishedCredentials() []*vc.Credential {
	d.t.Helper()
	var out []*vc.Credential
	for page := 0; ; page++ {
		resp, err := d.api.http.Get(fmt.Sprintf("%s%s/outbox?page=true&page-num=%d", d.api.base, federation.ServicePath, page))
		require.NoError(d.t, err)
		var p struct {
			Items []json.RawMessage `json:"orderedItems"`
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		require.NoError(d.t, err)
		if len(p.Items) == 0 {
			return out
		}
		for _, raw := range creates(d.t, p.Items) {
			a, err := activity.Parse(raw)
			require.NoError(d.t, err)
			link := (&activity.Linkset{Linkset: a.Object.AnchorEvent.Object.Linkset}).Link()
			content, err := link.Replies[0].Content(vc.MaxDocumentSize)
			require.NoError(d.t, err)
			c, err := vc.ParseCredential(content)
			require.NoError(d.t, err)
			out = append(out, c)
		}
	}
}

// verifiedSigners verifies every proof of c against the did:web documents of the loopback
// domains and returns the domains (their did:web) whose proofs verify.
func verifiedSigners(t *testing.T, c *vc.Credential) []string {
	t.Helper()
	resolve, err := vc.NewWebResolver(vc.WebResolverConfig{Scheme: "http"})
	require.NoError(t, err)
	var out []string
	for _, p := range c.Proofs() {
		require.NoError(t, vc.VerifyProof(context.Background(), c, p, resolve), "proof by %s", p.VerificationMethod)
		did, _, _ := strings.Cut(p.VerificationMethod, "#")
		out = append(out, did)
	}
	return out
}

// TestWitnessedAnchorsResolveEverywhere: A offers each anchor to its system witnesses B and C
// under the default policy (every system witness); B and C follow A. Every DID created at A
// resolves at A, B and C, and every published credential carries A's proof and both witnesses'
// proofs, each verifying with its domain's did:web key; /vc serves the same credential.
func TestWitnessedAnchorsResolveEverywhere(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", witnessTiming...)
	b := startDomain(t, "B")
	c := startDomain(t, "C")
	a.invite(b, c)
	b.follow(a)
	c.follow(a)

	load := newFedLoad(t, a.api)
	load.creates(200, 8)
	took := waitSame(t, b, a, load.dids(), 2*time.Minute)
	waitSame(t, c, a, load.dids(), time.Minute)
	t.Logf("200 creates at A resolve alike at B and C %s after the last one", took)

	creds := a.publishedCredentials()
	require.NotEmpty(t, creds)
	didOf := func(d *relayDomain) string {
		did, err := vc.DIDWeb("http://" + d.addr)
		require.NoError(t, err)
		return did
	}
	for _, cred := range creds {
		signers := verifiedSigners(t, cred)
		require.ElementsMatch(t, []string{didOf(a), didOf(b), didOf(c)}, signers, "proofs of %s", cred.ID())

		id := cred.ID()[strings.LastIndex(cred.ID(), "/")+1:]
		resp, err := http.Get("http://" + a.addr + "/vc/" + id)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		served, err := vc.ParseCredential(body)
		require.NoError(t, err)
		require.Len(t, served.Proofs(), 3)
	}
	t.Logf("%d anchors published, each with 3 verifying proofs", len(creds))
	for _, d := range []*relayDomain{a, b, c} {
		for _, l := range d.logLines("ERROR") {
			t.Logf("%s: %s", d.name, l)
		}
	}
}
