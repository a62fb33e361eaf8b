package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// orbAddr is where the test runs Orb. Orb issues anchor credentials as did:web of its external
// endpoint by string concatenation, so a port in it breaks every anchor: Orb must run on 80.
const orbAddr = "127.0.0.1:80"

// orbPeerAddr is where an anchord domain runs when Orb must resolve its did:web (to verify its
// anchors or its proofs): on port 80 of another loopback address, for the same reason.
const orbPeerAddr = "127.0.0.2:80"

// orbPortsLock is a file every test run on this machine locks while it uses orbAddr and
// orbPeerAddr: two runs of the suite (or of one Orb test) at once would otherwise fail on a
// port taken by the other. Runs take turns instead; flock releases the lock when the holder dies.
const orbPortsLock = "/tmp/anchord-test-orb-ports.lock"

// orbPortsHeld are the tests of this process that hold the lock, so a test that starts Orb and
// then an anchord domain on orbPeerAddr takes it once.
var orbPortsHeld sync.Map

// holdOrbPorts takes the machine-wide lock on Orb's ports for the rest of t, waiting for
// another run that holds it.
func holdOrbPorts(t *testing.T) {
	t.Helper()
	if _, held := orbPortsHeld.Load(t); held {
		return
	}
	f, err := os.OpenFile(orbPortsLock, os.O_CREATE|os.O_RDWR, 0o666)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for another test run to give Orb's ports back", waited.Round(time.Second))
	}
	orbPortsHeld.Store(t, f)
	t.Cleanup(func() {
		orbPortsHeld.Delete(t)
		_ = f.Close() // closing the only descriptor releases the lock
	})
}

// requireFree skips the test when addr cannot be bound (a process outside the tests holds it), or
// fails it when the Orb tests are required (ANCHORD_TEST_REQUIRE_ORB).
func requireFree(t *testing.T, addr string) {
	t.Helper()
	holdOrbPorts(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if anchordtest.RequireOrb() {
			t.Fatalf("the Orb tests need %s, which cannot be bound here (port 80 needs root or CAP_NET_BIND_SERVICE): %v", addr, err)
		}
		t.Skipf("the Orb tests need %s, which cannot be bound here: %v", addr, err)
	}
	ln.Close()
}

// orbServer is a running Orb domain and its log (JSON lines).
type orbServer struct {
	log *anchordtest.SyncBuffer
}

// mark returns a position in Orb's log, for problemsSince.
func (o *orbServer) mark() int { return len(o.log.String()) }

// problemsSince returns Orb's warning and error lines after mark.
func (o *orbServer) problemsSince(mark int) []string {
	var out []string
	for line := range strings.SplitSeq(o.log.String()[mark:], "\n") {
		var l struct {
			Level string `json:"level"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && (l.Level == "warn" || l.Level == "error" || l.Level == "fatal" || l.Level == "panic") {
			out = append(out, line)
		}
	}
	return out
}

// logged reports whether Orb logged a line containing msg after mark.
func (o *orbServer) logged(mark int, msg string) bool {
	return strings.Contains(o.log.String()[mark:], msg)
}

// startOrb runs an Orb domain with in-memory stores that requires HTTP signatures (or tokens)
// on its inbox and outbox, and signs its own requests to other domains. env adds to (or, for a
// variable set twice, replaces) its environment.
func startOrb(t *testing.T, env ...string) *orbServer {
	t.Helper()
	bin := anchordtest.OrbBin(t)
	requireFree(t, orbAddr)
	cmd := exec.Command(bin, "start")
	cmd.Env = append(os.Environ(),
		"ORB_HOST_URL="+orbAddr, "ORB_EXTERNAL_ENDPOINT=http://127.0.0.1", "DID_NAMESPACE=did:orb",
		"DATABASE_TYPE=mem", "ORB_KMS_TYPE=local", "KMSSECRETS_DATABASE_TYPE=mem", "CAS_TYPE=local",
		"BATCH_WRITER_TIMEOUT=1000", "DEV_MODE_ENABLED=true", "VCT_ENABLED=false", "ALLOWED_ORIGINS=http://127.0.0.1",
		"ORB_AUTH_TOKENS_DEF=/services/orb/keys,/services/orb/inbox|admin&read|admin,/services/orb/outbox|admin&read|admin,/services/orb/.*|read&admin",
		"ORB_AUTH_TOKENS=admin=orb-admin,read=orb-read",
		"ORB_CLIENT_AUTH_TOKENS_DEF=/keys,/inbox|admin&read|admin,/services/.*|read&admin",
		"ORB_CLIENT_AUTH_TOKENS=admin=orb-admin,read=orb-read",
	)
	cmd.Env = append(cmd.Env, env...)
	log := &anchordtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Orb's log:\n%s", lastLines(log.String(), 40))
		}
	})
	start := time.Now()
	anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + orbAddr + "/services/orb")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "Orb serves its actor")
	t.Logf("Orb up in %s", time.Since(start).Round(time.Millisecond))
	return &orbServer{log: log}
}

// orbRequest sends a request to Orb with its admin token.
func orbRequest(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+orbAddr+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer orb-admin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// orbCreate builds a create Orb accepts: an anchorOrigin of Orb's own, commitments that open
// nothing (a create reveals no key).
func orbCreate(t *testing.T) []byte {
	t.Helper()
	mh := func(data []byte) string {
		sum := sha256.Sum256(data)
		return base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...))
	}
	random := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return mh(b)
	}
	canonical := func(v any) []byte {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		out, err := jcs.Transform(raw)
		require.NoError(t, err)
		return out
	}
	delta := map[string]any{
		"patches":          []any{map[string]any{"action": "add-services", "services": []any{map[string]any{"id": "svc1", "type": "LinkedDomains", "serviceEndpoint": "https://example.com"}}}},
		"updateCommitment": random(),
	}
	suffixData := map[string]any{"deltaHash": mh(canonical(delta)), "recoveryCommitment": random(), "anchorOrigin": "http://127.0.0.1"}
	body, err := json.Marshal(map[string]any{"type": "create", "suffixData": suffixData, "delta": delta})
	require.NoError(t, err)
	return body
}

// TestOrbInterop runs a real Orb domain next to an anchord domain: anchord follows Orb and Orb
// follows anchord, each Follow → Accept round trip verified by the other side's HTTP signatures
// (Orb is configured to require them on its inbox and to sign its own requests; anchord always
// does both), and an anchor Orb completes reaches anchord's inbox as a Create it parses.
func TestOrbInterop(t *testing.T) {
	startOrb(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--external-endpoint", "http://" + addr, "--batch-writer-timeout", "300ms"},
		Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	admin := "http://" + p.AdminAddr()
	ours := "http://" + addr + "/services/anchord"
	orb := "http://127.0.0.1/services/orb"
	cli := func(args ...string) string {
		var out, errOut bytes.Buffer
		code := runWithEnv(append(append([]string{"admin"}, args...), "--target", admin, "--admin-token", p.AdminToken()), func(string) (string, bool) { return "", false }, &out, &errOut)
		require.Equal(t, 0, code, errOut.String())
		return out.String()
	}

	// Orb refuses an unsigned inbox POST: whatever it accepts below, it verified.
	code, _ := func() (int, []byte) {
		resp, err := http.Post(orb+"/inbox", "application/json", strings.NewReader(`{"type":"Follow"}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}()
	require.Equal(t, http.StatusUnauthorized, code, "Orb requires a signature on its inbox")

	// anchord follows Orb: our signed Follow, Orb's signed Accept.
	cli("follow", "add", orb)
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return strings.Contains(cli("follow", "list"), orb+"  accepted")
	}, "Orb accepted our Follow")

	// Orb follows anchord: Orb's signed Follow, our signed Accept.
	follow := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","type":"Follow","actor":%q,"to":%q,"object":%q}`, orb, ours, ours)
	code, body := orbRequest(t, http.MethodPost, "/services/orb/outbox", []byte(follow))
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return strings.Contains(cli("followers", "list"), orb+"  accepted")
	}, "we accepted Orb's Follow")
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		code, body := orbRequest(t, http.MethodGet, "/services/orb/following?page=true", nil)
		return code == http.StatusOK && strings.Contains(string(body), ours)
	}, "Orb lists us in its following after our Accept")

	// A DID created at Orb is anchored there; Orb posts the Create to its followers, us included.
	api := newClient(addr)
	before := api.metricTotal(t, `anchord_federation_inbox_activities_total{outcome="received",type="Create"}`)
	resp, err := http.Post("http://"+orbAddr+"/sidetree/v1/operations", "application/json", bytes.NewReader(orbCreate(t)))
	require.NoError(t, err)
	created, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(created))
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return api.metricTotal(t, `anchord_federation_inbox_activities_total{outcome="received",type="Create"}`) > before
	}, "Orb's anchor Create reached our inbox, signed and parsed")
}

// TestOrbWitnessesAnchordAnchors: a real Orb domain is the only system witness of an anchord
// domain under the default policy (every system witness). anchord invites Orb (Orb accepts by
// its default accept-all policy), offers it each anchor, and completes an anchor only once
// Orb's Accept carries a proof that verifies with Orb's did:web key: every DID created at
// anchord is then published, its credential carrying anchord's proof and Orb's.
func TestOrbWitnessesAnchordAnchors(t *testing.T) {
	startOrb(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: append([]string{"serve", "--host-url", addr, "--external-endpoint", "http://" + addr, "--batch-writer-timeout", "300ms"}, witnessTiming...),
		Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	d := &relayDomain{t: t, name: "A", addr: addr, actor: "http://" + addr + "/services/anchord", api: newClient(addr), proc: p}
	orb := &relayDomain{t: t, name: "Orb", actor: "http://127.0.0.1/services/orb"}
	d.invite(orb)

	load := newFedLoad(t, d.api)
	load.creates(20, 4)
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return load.publishedAt(d) == len(load.dids())
	}, "anchord's DIDs are published once Orb's proofs verified")
	creds := d.publishedCredentials()
	require.NotEmpty(t, creds)
	for _, c := range creds {
		signers := verifiedSigners(t, c)
		require.Contains(t, signers, "did:web:127.0.0.1", "Orb's proof verifies at anchord")
	}
	t.Logf("%d anchors witnessed by Orb; proofs received %g", len(creds), witnessMetric(t, d, `anchord_witness_proofs_total{outcome="added"}`))
}
