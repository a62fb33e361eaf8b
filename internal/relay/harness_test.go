package relay

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

// network is the loopback world of a test: domains by host, reachable unless marked down. Its
// fetch is every domain's signed GET: /cas/<cid> and /.well-known/did.json, as anchord serves.
type network struct {
	mu      sync.Mutex
	domains map[string]*domain
	down    map[string]bool
	// corrupt hosts serve the CAS paths it matches with a byte changed.
	corrupt map[string]func(path string) bool
	// casPaths are the /cas paths requested, by host.
	casPaths map[string][]string
}

func newNetwork() *network {
	return &network{domains: map[string]*domain{}, down: map[string]bool{}, corrupt: map[string]func(string) bool{}, casPaths: map[string][]string{}}
}

func (n *network) setCorrupt(d *domain, corrupt bool) {
	n.setCorruptPaths(d, nil)
	if corrupt {
		n.setCorruptPaths(d, func(string) bool { return true })
	}
}

// setCorruptPaths makes d serve the CAS paths match accepts corrupt (nil: none).
func (n *network) setCorruptPaths(d *domain, match func(path string) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.corrupt[d.host] = match
}

// requested returns the /cas paths d was asked for.
func (n *network) requested(d *domain) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.casPaths[d.host]...)
}

func (n *network) setDown(d *domain, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[d.host] = down
}

func (n *network) fetch(ctx context.Context, raw string, maxBytes int64) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	d, ok := n.domains[u.Host]
	down, corrupt := n.down[u.Host], n.corrupt[u.Host]
	if strings.HasPrefix(u.Path, "/cas/") {
		n.casPaths[u.Host] = append(n.casPaths[u.Host], u.Path)
	}
	n.mu.Unlock()
	if !ok || down {
		return nil, fmt.Errorf("dial %s: connection refused", u.Host)
	}
	var body []byte
	switch {
	case u.Path == vc.WellKnownDIDPath:
		doc, err := vc.NewDIDDocument(d.id.DID, d.didKey())
		if err != nil {
			return nil, err
		}
		body, err = json.Marshal(doc)
		if err != nil {
			return nil, err
		}
	case strings.HasPrefix(u.Path, "/cas/"):
		body, err = d.cas.Get(ctx, strings.TrimPrefix(u.Path, "/cas/"), 0)
		if err != nil {
			return nil, fmt.Errorf("status 404: %w", err)
		}
		if corrupt != nil && corrupt(u.Path) && len(body) > 0 {
			body = append([]byte(nil), body...)
			body[len(body)/2] ^= 0xff
		}
	default:
		return nil, fmt.Errorf("status 404: %s", u.Path)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", raw, maxBytes)
	}
	return body, nil
}

// domain is one anchord domain of a test: its store, CAS, anchor writer, observer, publisher
// and receiver, an outbox that records what was posted, and whom it follows.
type domain struct {
	t    testing.TB
	host string
	id   Identity
	net  *network

	st      store.Store
	cas     *cas.Store
	anchors *anchor.Writer
	obs     *observer.Observer
	res     *observer.Resolver
	pub     *Publisher
	recv    *Receiver

	mu       sync.Mutex
	outbox   []posted
	follows  map[string]bool
	failPost error
	// wrongKey makes the domain's did.json list another key than the one it signs with.
	wrongKey ed25519.PublicKey
	// limits and profile are the batch limits of its writer and observer and its profile; a
	// did:orb domain's files name each other by hashlinks and list bare proofs.
	limits  batchfile.Limits
	profile sidetree.Profile
}

// posted is an activity the outbox accepted, with its exclusions.
type posted struct {
	body    []byte
	act     *activity.Activity
	exclude []string
}

func newDomain(t testing.TB, n *network, name string, st store.Store) *domain {
	t.Helper()
	return newDomainRefs(t, n, name, st, nil)
}

// newOrbDomain is a domain whose batch files name each other by hashlinks, as the did:orb
// profile writes them: with a link to its /cas/<cid>, or (links false) by hash alone.
func newOrbDomain(t testing.TB, n *network, name string, st store.Store, links bool) *domain {
	t.Helper()
	endpoint := "http://" + name + ".test"
	return newDomainRefs(t, n, name, st, func(uri string, data []byte) string {
		if !links {
			return activity.NewHashlink(data)
		}
		return activity.NewHashlink(data, endpoint+"/cas/"+uri)
	})
}

func newDomainRefs(t testing.TB, n *network, name string, st store.Store, refs func(uri string, data []byte) string) *domain {
	t.Helper()
	ctx := context.Background()
	host := name + ".test"
	endpoint := "http://" + host
	did, err := vc.DIDWeb(endpoint)
	require.NoError(t, err)
	key, err := anchor.LoadOrCreateDomainKey(ctx, st)
	require.NoError(t, err)
	d := &domain{
		t: t, host: host, net: n, st: st, follows: map[string]bool{}, limits: limits(), profile: sidetree.DefaultProfile(),
		id: Identity{ActorIRI: endpoint + "/services/anchord", FollowersIRI: endpoint + "/services/anchord/followers", Endpoint: endpoint, DID: did, Key: key},
	}
	if refs != nil {
		d.limits.ReferenceFunc = refs
		d.limits.CheckURIFunc = cas.CheckKey
		d.limits.OrbProofs = true
		d.profile.OrbBatchFiles = true
		d.limits.MaxCASURILength = ForeignMaxCASURILength
	}
	d.cas, err = cas.NewStore(cas.StoreConfig{}, st)
	require.NoError(t, err)
	d.anchors, err = anchor.NewWriter(anchor.Config{}, anchor.NewLocal(key))
	require.NoError(t, err)
	d.res = observer.NewResolver(d.profile, st, nil, 0)
	d.obs, err = observer.New(observer.Config{Profile: d.profile, Limits: d.limits, Resolver: d.res, Logger: anchordtest.Logger(t)}, st, d.cas.FetchFunc)
	require.NoError(t, err)
	cfg := Config{Identity: d.id, Profile: d.profile, Limits: d.limits, Logger: anchordtest.Logger(t).With("domain", name)}
	d.pub, err = NewPublisher(cfg, st, d.cas, d.prepare)
	require.NoError(t, err)
	d.pub.signal.Init(t)
	d.recv, err = NewReceiver(cfg, st, d.cas, d.obs.ObserveForeign, n.fetch, d.postTx, d.isFollowing)
	require.NoError(t, err)
	d.recv.signal.Init(t)
	n.mu.Lock()
	n.domains[host] = d
	n.mu.Unlock()
	return d
}

func limits() batchfile.Limits {
	l := batchfile.DefaultLimits()
	l.CheckURIFunc = func(uri string) error { _, err := cas.ParseCID(uri); return err }
	return l
}

func (d *domain) didKey() ed25519.PublicKey {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wrongKey != nil {
		return d.wrongKey
	}
	return d.id.Key.Public().(ed25519.PublicKey)
}

// postTx is the outbox: the activity is recorded when tx commits, as the durable outbox does.
func (d *domain) postTx(ctx context.Context, tx store.Executor, a *activity.Activity, exclude ...string) (string, error) {
	d.mu.Lock()
	fail := d.failPost
	n := len(d.outbox)
	d.mu.Unlock()
	if fail != nil {
		return "", fail
	}
	a.ID = fmt.Sprintf("%s/activities/%d-%s", d.id.ActorIRI, n, randomHex())
	body, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	store.OnCommit(ctx, func() {
		d.mu.Lock()
		d.outbox = append(d.outbox, posted{body: body, act: a, exclude: exclude})
		d.mu.Unlock()
	})
	return a.ID, nil
}

// prepare is the publisher's outbox: it leaves everything to postTx, in the transaction.
func (d *domain) prepare(a *activity.Activity, _ []byte) (PostPreparedFunc, error) {
	return func(ctx context.Context, tx store.Executor) (string, error) { return d.postTx(ctx, tx, a) }, nil
}

// federationOutbox is the durable outbox of d's actor on d's store, as the daemon runs it: the
// federation service, whose loops do not run, and its preparation as the daemon hands it to
// the publisher.
func (d *domain) federationOutbox() (*federation.Service, PrepareFunc) {
	t := d.t
	t.Helper()
	logger := anchordtest.Logger(t)
	client, err := peer.New(peer.Config{KeyID: d.id.ActorIRI + activity.PathMainKey, PrivateKey: d.id.Key, HTTP: &http.Client{}, Logger: logger,
		Registerer: prometheus.NewRegistry()}, d.st)
	require.NoError(t, err)
	svc, err := federation.New(federation.Config{ExternalEndpoint: d.id.Endpoint, Key: d.id.Key, InstanceID: "test", Logger: logger,
		Registerer: prometheus.NewRegistry()}, d.st, client)
	require.NoError(t, err)
	require.Equal(t, d.id.ActorIRI, svc.ActorIRI())
	return svc, func(a *activity.Activity, linkset []byte) (PostPreparedFunc, error) {
		o, err := svc.Prepare(a, linkset)
		if err != nil {
			return nil, err
		}
		return o.PostTx, nil
	}
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

func (d *domain) isFollowing(_ context.Context, actor string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.follows[actor], nil
}

func (d *domain) follow(other *domain) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.follows[other.id.ActorIRI] = true
}

// sent returns the activities posted so far.
func (d *domain) sent() []posted {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]posted(nil), d.outbox...)
}

// anchorOps builds, stores and anchors a batch of requests (as the batch writer does) and
// indexes it (as the observer does).
func (d *domain) anchorOps(reqs ...[]byte) store.Anchor {
	d.t.Helper()
	a := d.anchorOpsUnobserved(reqs...)
	_, err := d.obs.CatchUp(context.Background())
	require.NoError(d.t, err)
	return a
}

// anchorOpsUnobserved is anchorOps without the indexing.
func (d *domain) anchorOpsUnobserved(reqs ...[]byte) store.Anchor {
	t := d.t
	t.Helper()
	ctx := context.Background()
	var ops []*sidetree.Operation
	var refs []anchor.OpRef
	for _, r := range reqs {
		op, err := sidetree.ParseOperation(r, sidetree.DefaultProfile())
		require.NoError(t, err)
		ops = append(ops, op)
		refs = append(refs, anchor.OpRef{Suffix: op.Suffix, Type: string(op.Type)})
	}
	files, err := batchfile.Build(ops, d.cas.Address, d.limits)
	require.NoError(t, err)
	var a store.Anchor
	require.NoError(t, d.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		for _, f := range files.List() {
			if err := d.cas.PutAddressedTx(ctx, tx, f.URI, f.Data); err != nil {
				return err
			}
		}
		var err error
		a, err = d.anchors.Write(ctx, tx, anchor.Request{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(ops), Ops: refs})
		return err
	}))
	return a
}

// publishAll publishes every anchor of d that is ready and returns the Creates posted.
func (d *domain) publishAll() []posted {
	t := d.t
	t.Helper()
	before := len(d.sent())
	for {
		res, err := d.pub.runOnce(context.Background())
		require.NoError(t, err)
		if res.Seq == 0 {
			break
		}
	}
	return d.sent()[before:]
}

// deliver hands p to d's receiver as its inbox would, live.
func (d *domain) deliver(from *domain, p posted, live bool) error {
	d.t.Helper()
	in := Inbound{Activity: p.act, Body: p.body, Actor: from.id.ActorIRI, Live: live}
	switch p.act.Type {
	case activity.TypeCreate:
		return d.recv.HandleCreate(context.Background(), in)
	case activity.TypeAnnounce:
		return d.recv.HandleAnnounce(context.Background(), in)
	}
	return errors.New("not an anchor activity")
}

// state resolves a DID at d.
func (d *domain) state(suffix string) *sidetree.State {
	d.t.Helper()
	st, err := d.res.State(context.Background(), suffix)
	require.NoError(d.t, err)
	return st
}

// sweep runs d's waiting-anchor sweep once.
func (d *domain) sweep() SweepResult {
	d.t.Helper()
	res, err := d.recv.runOnce(context.Background())
	require.NoError(d.t, err)
	return res
}

func sqlite(t testing.TB) store.Store { return storetest.Open(t, storetest.SQLiteOpener(t)) }
