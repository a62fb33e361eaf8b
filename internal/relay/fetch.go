package relay

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// source is a domain's CAS to read files from.
type source struct {
	name string // sourceOrigin or sourceSender
	base string // the domain's endpoint: files are at base/cas/<cid>
}

// fileReader reads one anchor's batch files for the batch reader. A file comes from the local
// CAS if it is there; otherwise from each source in turn, then from the CAS mirror. Every file
// is checked against its CID (and the core index against the link's hashlink) before it is
// kept; the files read from elsewhere are stored with the anchor, in its transaction.
type fileReader struct {
	r       *Receiver
	ctx     context.Context
	sources []source
	coreCID string
	core    activity.Hashlink
	// coreLocal is the CID the core index is kept under here (coreCID, unless the origin
	// names files by hash, as Orb does).
	coreLocal string

	mu      sync.Mutex
	fetched map[string][]byte
}

// fetch is the batchfile.FetchFunc. A URI is a CID (anchord's files in the sidetree and ion
// profiles), or a hashlink (did:orb's files, Orb's and ours), or the multibase sha2-256
// multihash alone ("uEi…"), as Orb's CAS names files; either way the content is checked against
// it. A hashlink's link is followed when it is on a source's host (the sender or the origin);
// otherwise, and for a hashlink without links, the source's /cas serves the file by its hash.
// Files read elsewhere are kept here under the CID this domain computes.
func (f *fileReader) fetch(uri string, maxSize int) ([]byte, error) {
	key, err := parseCASKey(uri)
	if err != nil {
		return nil, err
	}
	check := func(data []byte) error {
		if len(data) > maxSize {
			return fmt.Errorf("%s: %d bytes, more than %d", uri, len(data), maxSize)
		}
		if err := key.verify(data); err != nil {
			return err
		}
		if uri == f.coreCID {
			if err := f.core.Verify(data); err != nil {
				return fmt.Errorf("core index %s: %w", uri, err)
			}
		}
		return nil
	}
	var local []byte
	if key.cid != nil {
		local, err = f.r.st.CASGet(f.ctx, uri)
	} else {
		local, err = f.r.st.CASGetBySHA256(f.ctx, key.hash.Digest)
	}
	if err == nil && check(local) == nil {
		f.r.m.fetchedBytes.WithLabelValues(sourceLocal).Add(float64(len(local)))
		return local, nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var errs []error
	for _, s := range f.sources {
		data, err := f.r.fetch(f.ctx, key.urlAt(s.base), int64(maxSize))
		if err == nil {
			err = check(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.name, s.base, err))
			continue
		}
		f.r.m.fetchedBytes.WithLabelValues(s.name).Add(float64(len(data)))
		local := key.localCID(f.r.cas, data)
		f.mu.Lock()
		f.fetched[local] = data
		if uri == f.coreCID {
			f.coreLocal = local
		}
		f.mu.Unlock()
		return data, nil
	}
	if key.cid == nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, errors.Join(errs...))
	}
	// The mirror (an IPFS node the origin also adds its files to) serves what no domain does;
	// cas.Store checks the CID and keeps the copy.
	data, err := f.r.cas.Get(f.ctx, uri, maxSize)
	if err == nil {
		if err = check(data); err == nil {
			f.r.m.fetchedBytes.WithLabelValues(sourceMirror).Add(float64(len(data)))
			return data, nil
		}
	}
	errs = append(errs, fmt.Errorf("mirror: %w", err))
	return nil, fmt.Errorf("%w: %w", errUnreachable, errors.Join(errs...))
}

// ForeignMaxCASURILength bounds a CAS URI in another domain's batch files: Orb's protocol
// allows 500 characters (its references carry hashlink metadata), Sidetree's default 100.
const ForeignMaxCASURILength = 500

// casKey is a CAS URI of another domain: a CID, or (Orb) a sha2-256 multihash.
type casKey struct {
	uri  string
	cid  *cas.CID
	hash *activity.Hashlink
}

func parseCASKey(uri string) (casKey, error) {
	if c, err := cas.ParseCID(uri); err == nil {
		return casKey{uri: uri, cid: &c}, nil
	}
	// Orb names a file by its multihash ("uEi…") or, inside batch files, by its hashlink
	// ("hl:uEi…", perhaps with metadata naming where the file is).
	hl := uri
	if !strings.HasPrefix(hl, "hl:") {
		hl = "hl:" + hl
	}
	if strings.HasPrefix(uri, "u") || strings.HasPrefix(uri, "hl:") {
		if h, err := activity.ParseHashlink(hl); err == nil {
			return casKey{uri: uri, hash: &h}, nil
		}
	}
	return casKey{}, fmt.Errorf("CAS URI %q is neither a CID nor a sha2-256 multihash", uri)
}

// urlAt is where the domain at base serves the file: the hashlink's link on base's host if it
// has one (Orb's and anchord's did:orb files link to the writer's /cas), else base's /cas by
// path. Links to other hosts are never followed: the files come from the origin or the sender.
func (k casKey) urlAt(base string) string {
	if k.hash != nil {
		for _, l := range k.hash.Links {
			if h := hostBase(l); h != "" && h == hostBase(base) {
				return l
			}
		}
	}
	return casURL(base, k.path())
}

// path is what the owner's /cas serves the file under: the CID, or the multihash alone.
func (k casKey) path() string {
	if k.cid != nil {
		return k.uri
	}
	return k.hash.ResourceHash()
}

func (k casKey) verify(data []byte) error {
	if k.cid != nil {
		if got := cas.ComputeCID(data, k.cid.Version); got != k.uri {
			return fmt.Errorf("%s: content hashes to %s", k.uri, got)
		}
		return nil
	}
	if err := k.hash.Verify(data); err != nil {
		return fmt.Errorf("%s: %w", k.uri, err)
	}
	return nil
}

// localCID is the CID the file is kept under here.
func (k casKey) localCID(cs *cas.Store, data []byte) string {
	if k.cid != nil {
		return k.uri
	}
	return cs.Address(data)
}

// ForeignLimits are the batch reader's limits l for another domain's batch: its CAS URIs may
// be Orb's multihashes and hashlinks, up to ForeignMaxCASURILength long. The index reads the
// batch again with them (observer.BatchesConfig.ForeignLimits).
func ForeignLimits(l batchfile.Limits) batchfile.Limits {
	l.CheckURIFunc = checkCASURI
	l.MaxCASURILength = max(l.MaxCASURILength, ForeignMaxCASURILength)
	return l
}

// checkCASURI is the batch reader's URI check for other domains' batches: CIDs, and the
// multihashes Orb's CAS names files by.
func checkCASURI(uri string) error {
	_, err := parseCASKey(uri)
	return err
}

// readBatch reads the batch an anchor's content names. The core index's CAS URI comes from the
// hashlink's metadata (a /cas/<key> or ipfs://<cid> link); the count of the anchor string is
// the number of DIDs the anchor lists, one operation each.
func (r *Receiver) readBatch(ctx context.Context, content *activity.AnchorContent, author, sender string) (*batchfile.Batch, batchfile.Anchor, map[string][]byte, error) {
	var none batchfile.Anchor
	core, err := activity.ParseHashlink(content.CoreIndex)
	if err != nil {
		return nil, none, nil, invalidf("core index: %v", err)
	}
	cid, originBase := coreIndexCID(core.Links, author)
	if cid == "" {
		return nil, none, nil, invalidf("core index hashlink %s names no CID", content.CoreIndex)
	}
	sources := []source{{name: sourceOrigin, base: originBase}}
	if sb := hostBase(sender); sb != "" && sb != hostBase(author) {
		sources = append(sources, source{name: sourceSender, base: sb})
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchTimeout)
	defer cancel()
	f := &fileReader{r: r, ctx: ctx, sources: sources, coreCID: cid, coreLocal: cid, core: core, fetched: map[string][]byte{}}
	anchor := batchfile.Anchor{Count: len(content.Operations), CoreIndexURI: cid}
	anchorString := anchor.String()
	b, err := batchfile.Read(r.cfg.Profile, anchorString, f.fetch, ForeignLimits(r.cfg.Limits))
	var fe *batchfile.FetchError
	if errors.As(err, &fe) {
		return nil, none, nil, fmt.Errorf("read batch %s: %w", anchorString, err)
	}
	if err == nil && b.ProvisionalErr != nil && errors.As(b.ProvisionalErr, &fe) {
		return nil, none, nil, fmt.Errorf("read batch %s: %w", anchorString, b.ProvisionalErr)
	}
	// Recorded with the core index's CID here, so that this domain's /cas serves it.
	recorded := batchfile.Anchor{Count: anchor.Count, CoreIndexURI: f.coreLocal}
	if err != nil {
		// As every Sidetree node would, an invalid batch is recorded with no operations: the
		// anchor exists and its children need not wait for it forever.
		r.cfg.Logger.WarnContext(ctx, "anchored batch of another domain is invalid; its operations are ignored", "anchor", anchorString, "author", author, "error", err)
		return &batchfile.Batch{}, recorded, f.fetched, nil
	}
	if b.ProvisionalErr != nil {
		r.cfg.Logger.WarnContext(ctx, "provisional files of another domain's batch are invalid; its updates are ignored", "anchor", anchorString, "author", author, "error", b.ProvisionalErr)
	}
	return b, recorded, f.fetched, nil
}

// coreIndexCID returns the core index's CID from a hashlink's links, and the endpoint of the
// author whose /cas serves it: a link on the author's own host gives both (its path may carry
// the endpoint's prefix); otherwise the CID comes from any link and the endpoint is the
// author's scheme and host. Links to other hosts are never fetched: the origin's data comes
// from the origin.
func coreIndexCID(links []string, author string) (cid, base string) {
	authorBase := hostBase(author)
	for _, l := range links {
		c, b := cidOfLink(l)
		if c == "" {
			continue
		}
		if b != "" && hostBase(b) == authorBase {
			return c, b
		}
		if cid == "" {
			cid = c
		}
	}
	return cid, authorBase
}

// cidOfLink reads "ipfs://<cid>" or "<base>/cas/<key>", where key is a CID or (Orb) a
// sha2-256 multihash.
func cidOfLink(l string) (cid, base string) {
	if c, ok := strings.CutPrefix(l, "ipfs://"); ok {
		if _, err := cas.ParseCID(c); err == nil {
			return c, ""
		}
		return "", ""
	}
	i := strings.LastIndex(l, "/cas/")
	if i < 0 {
		return "", ""
	}
	c := l[i+len("/cas/"):]
	if checkCASURI(c) != nil {
		return "", ""
	}
	return c, l[:i]
}

// hostBase returns scheme://host of an http(s) IRI, or "".
func hostBase(iri string) string {
	u, err := url.Parse(iri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + strings.ToLower(u.Host)
}
