package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// explorerBundle is a server with the explorer API over a real SQLite store holding two
// anchored batches: three creates, then an update of the first DID and a deactivate of the
// second.
type explorerBundle struct {
	base   string
	st     store.Store
	ids    []*wallet.Identity
	long   string // the first DID in long form
	files  [2]*batchfile.Files
	anchor [2]store.Anchor
}

func explorerSetup(t *testing.T, pipeline PipelineSource, fed FederationSource) *explorerBundle {
	t.Helper()
	ctx := context.Background()
	profile := sidetree.DefaultProfile()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	cs, err := cas.NewStore(cas.StoreConfig{}, st)
	require.NoError(t, err)
	b := &explorerBundle{st: st}
	w := wallet.New(wallet.Config{})
	parse := func(req []byte, err error) *sidetree.Operation {
		t.Helper()
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, profile)
		require.NoError(t, err)
		return op
	}
	var creates []*sidetree.Operation
	for range 3 {
		id, req, err := w.Create(wallet.Replace(wallet.Document{}))
		creates = append(creates, parse(req, err))
		b.ids = append(b.ids, id)
	}
	b.long, err = sidetree.LongFormDID(profile, creates[0])
	require.NoError(t, err)
	second := []*sidetree.Operation{
		parse(w.Update(b.ids[0], wallet.AddServices(wallet.Service{ID: "s", Type: "LinkedDomains", Endpoint: "https://a.example"}))),
		parse(w.Deactivate(b.ids[1])),
	}
	var index storetest.Indexer
	for i, ops := range [][]*sidetree.Operation{creates, second} {
		files, err := batchfile.Build(ops, cs.Address, batchfile.DefaultLimits())
		require.NoError(t, err)
		for _, f := range files.List() {
			require.NoError(t, cs.PutAddressed(ctx, f.URI, f.Data))
		}
		a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{
			AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(ops),
			Backend: "local", Status: store.AnchorCompleted, Record: []byte(`{"r":1}`),
		})
		require.NoError(t, err)
		var rows []store.DIDOperation
		for _, op := range files.Operations {
			rows = append(rows, store.DIDOperation{Suffix: op.Suffix, AnchorSeq: a.Seq, Index: op.Position, Type: string(op.Type), Request: op.Request})
		}
		require.NoError(t, index.Index(ctx, st, rows))
		b.files[i], b.anchor[i] = files, a
	}
	// The index keeps no request; the explorer reads them from the batch files.
	batches, err := observer.NewBatches(observer.BatchesConfig{Profile: profile, Limits: batchfile.DefaultLimits()}, cs.FetchFunc)
	require.NoError(t, err)
	srv := setup(t, Config{Routes: ExplorerRoutes(ExplorerConfig{
		Profile: profile, Store: st, CAS: cs, Limits: batchfile.DefaultLimits(), Requests: batches, Pipeline: pipeline, Federation: fed,
	})})
	b.base = srv.base
	return b
}

// getJSON GETs path and decodes a 200 body into v; other statuses return their error code.
func (b *explorerBundle) getJSON(t *testing.T, path string, v any) (int, string) {
	t.Helper()
	status, body := get(t, b.base+path)
	if status != http.StatusOK {
		var e ErrorBody
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		return status, e.Code
	}
	require.NoError(t, json.Unmarshal(body, v), "%s", body)
	return status, ""
}

func TestExplorerDIDHistory(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	first := b.ids[0]

	var h DIDHistory
	status, _ := b.getJSON(t, "/explorer/api/dids/"+url.PathEscape(first.DID())+"/operations", &h)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first.DID(), h.DID)
	require.Equal(t, first.Suffix, h.Suffix)
	require.Equal(t, 2, h.Total)
	require.Len(t, h.Operations, 2)

	create, update := h.Operations[0], h.Operations[1]
	require.Equal(t, "create", create.Type)
	require.Equal(t, b.anchor[0].Seq, create.AnchorSeq)
	require.Equal(t, store.AnchorCompleted, create.AnchorStatus)
	require.NotNil(t, create.AnchoredAt)
	require.Empty(t, create.FilesError)
	require.Equal(t, []FileView{{"coreIndex", b.files[0].CoreIndex.URI}, {"chunk", b.files[0].Chunk.URI}}, create.Files)
	var req map[string]any
	require.NoError(t, json.Unmarshal(create.Request, &req))
	require.Equal(t, "create", req["type"])
	require.Equal(t, string(b.files[0].Operations[create.Index].Request), string(create.Request), "the request as anchored")
	require.Equal(t, string(b.files[1].Operations[update.Index].Request), string(update.Request))

	require.Equal(t, "update", update.Type)
	require.Equal(t, b.anchor[1].Seq, update.AnchorSeq)
	require.Equal(t, []FileView{
		{"coreIndex", b.files[1].CoreIndex.URI}, {"provisionalIndex", b.files[1].ProvisionalIndex.URI},
		{"provisionalProof", b.files[1].ProvisionalProof.URI}, {"chunk", b.files[1].Chunk.URI},
	}, update.Files)

	// The long form names the same DID.
	var long DIDHistory
	b.getJSON(t, "/explorer/api/dids/"+url.PathEscape(b.long)+"/operations", &long)
	require.Equal(t, first.DID(), long.DID)
	require.Equal(t, 2, long.Total)

	// A deactivated DID shows its deactivate with the core proof file.
	var gone DIDHistory
	b.getJSON(t, "/explorer/api/dids/"+url.PathEscape(b.ids[1].DID())+"/operations", &gone)
	require.Equal(t, "deactivate", gone.Operations[1].Type)
	require.Equal(t, []FileView{{"coreIndex", b.files[1].CoreIndex.URI}, {"coreProof", b.files[1].CoreProof.URI}}, gone.Operations[1].Files)

	// Paging.
	var page DIDHistory
	b.getJSON(t, "/explorer/api/dids/"+url.PathEscape(first.DID())+"/operations?offset=1&limit=1", &page)
	require.Equal(t, 2, page.Total)
	require.Equal(t, 1, page.Offset)
	require.Len(t, page.Operations, 1)
	require.Equal(t, "update", page.Operations[0].Type)
	b.getJSON(t, "/explorer/api/dids/"+url.PathEscape(first.DID())+"/operations?offset=5", &page)
	require.Empty(t, page.Operations)
	require.NotNil(t, page.Operations, "an empty list, not null")
}

func TestExplorerDIDHistoryOfUnknownAndInvalidDIDs(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	var h DIDHistory
	status, _ := b.getJSON(t, "/explorer/api/dids/did:sidetree:EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A/operations", &h)
	require.Equal(t, http.StatusOK, status)
	require.Zero(t, h.Total)
	require.Empty(t, h.Operations)

	for path, code := range map[string]string{
		"/explorer/api/dids/did:other:abc/operations":                     "invalid_did",
		"/explorer/api/dids/did:sidetree:notamultihash/operations":        "invalid_did",
		"/explorer/api/dids/" + b.ids[0].DID() + "/operations?offset=-1":  "invalid_parameter",
		"/explorer/api/dids/" + b.ids[0].DID() + "/operations?limit=0":    "invalid_parameter",
		"/explorer/api/dids/" + b.ids[0].DID() + "/operations?limit=1001": "invalid_parameter",
	} {
		status, got := b.getJSON(t, path, &h)
		require.Equal(t, http.StatusBadRequest, status, path)
		require.Equal(t, code, got, path)
	}
}

func TestExplorerAnchors(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)

	var page LatestAnchorPage
	b.getJSON(t, "/explorer/api/anchors", &page)
	require.Len(t, page.Anchors, 2)
	require.Equal(t, b.anchor[1].Seq, page.Anchors[0].Seq, "newest first")
	require.Equal(t, 2, page.Anchors[0].OperationCount)
	require.Nil(t, page.Next)

	b.getJSON(t, "/explorer/api/anchors?limit=1", &page)
	require.Len(t, page.Anchors, 1)
	require.NotNil(t, page.Next)
	next := *page.Next
	b.getJSON(t, "/explorer/api/anchors?limit=1&before="+strconv.FormatInt(next, 10), &page)
	require.Equal(t, b.anchor[0].Seq, page.Anchors[0].Seq)
	require.NotNil(t, page.Next, "a full page may have a next one")
	var last LatestAnchorPage
	b.getJSON(t, "/explorer/api/anchors?limit=1&before="+strconv.FormatInt(*page.Next, 10), &last)
	require.Empty(t, last.Anchors)
	require.Nil(t, last.Next)

	for _, q := range []string{"before=0", "before=x", "limit=0", "limit=5000"} {
		status, code := b.getJSON(t, "/explorer/api/anchors?"+q, &page)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Equal(t, "invalid_parameter", code, q)
	}
}

func TestExplorerAnchorDetail(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	seq := strconv.FormatInt(b.anchor[1].Seq, 10)

	var d AnchorDetail
	b.getJSON(t, "/explorer/api/anchors/"+seq, &d)
	require.Equal(t, b.anchor[1].Seq, d.Anchor.Seq)
	require.Equal(t, b.files[1].Anchor.String(), d.Anchor.AnchorString)
	require.Equal(t, []byte(`{"r":1}`), d.Anchor.Record)
	require.Empty(t, d.FilesError)
	require.Equal(t, []FileView{
		{"coreIndex", b.files[1].CoreIndex.URI}, {"coreProof", b.files[1].CoreProof.URI},
		{"provisionalIndex", b.files[1].ProvisionalIndex.URI}, {"provisionalProof", b.files[1].ProvisionalProof.URI},
		{"chunk", b.files[1].Chunk.URI},
	}, d.Files)
	require.Equal(t, 2, d.Total)
	require.Equal(t, []AnchorOpEntry{
		{Position: 0, Type: "deactivate", DID: b.ids[1].DID()},
		{Position: 1, Type: "update", DID: b.ids[0].DID()},
	}, d.Operations)

	b.getJSON(t, "/explorer/api/anchors/"+seq+"?offset=1&limit=5", &d)
	require.Equal(t, []AnchorOpEntry{{Position: 1, Type: "update", DID: b.ids[0].DID()}}, d.Operations)

	status, code := b.getJSON(t, "/explorer/api/anchors/999", &d)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", code)
	for _, p := range []string{"0", "-1", "x"} {
		status, code = b.getJSON(t, "/explorer/api/anchors/"+p, &d)
		require.Equal(t, http.StatusBadRequest, status, p)
		require.Equal(t, "invalid_parameter", code, p)
	}
}

func TestExplorerAnchorWithMissingFiles(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	// An anchor whose core index file this CAS does not hold (a ledger anchor of another
	// writer whose files never arrived): the anchor shows, with the reason its files do not.
	missing := cas.ComputeCID([]byte("never stored"), cas.CIDv0)
	a, err := b.st.AnchorInsert(context.Background(), store.AnchorInsertParams{
		AnchorString: "1." + missing, CoreIndexCID: missing, OpCount: 1, Backend: "ledger", Status: store.AnchorPending,
	})
	require.NoError(t, err)
	var d AnchorDetail
	status, _ := b.getJSON(t, "/explorer/api/anchors/"+strconv.FormatInt(a.Seq, 10), &d)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, store.AnchorPending, d.Anchor.Status)
	require.Equal(t, "the core index file "+missing+" could not be read", d.FilesError)
	require.Empty(t, d.Files)
	require.Empty(t, d.Operations)
}

func TestExplorerUnknownAPIRouteIsJSON404(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	var v any
	status, code := b.getJSON(t, "/explorer/api/nothing", &v)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", code)
}
