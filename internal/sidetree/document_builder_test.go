package sidetree

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// naivePatch is the reference implementation's algorithm written out plainly: copy the list,
// replace by id where it stands or append, filter on removal. The builder must agree with it.
func naivePatch(doc Document, p *Patch) Document {
	switch p.Action {
	case PatchReplace:
		return Document{PublicKeys: p.Document.PublicKeys, Services: p.Document.Services}
	case PatchAddPublicKeys:
		keys := slices.Clone(doc.PublicKeys)
		for _, k := range p.PublicKeys {
			if i := slices.IndexFunc(keys, func(e PublicKey) bool { return e.ID == k.ID }); i >= 0 {
				keys[i] = k
			} else {
				keys = append(keys, k)
			}
		}
		doc.PublicKeys = keys
	case PatchRemovePublicKeys:
		if doc.PublicKeys != nil {
			doc.PublicKeys = slices.DeleteFunc(slices.Clone(doc.PublicKeys), func(e PublicKey) bool { return slices.Contains(p.IDs, e.ID) })
			if doc.PublicKeys == nil {
				doc.PublicKeys = []PublicKey{}
			}
		}
	case PatchAddServices:
		services := slices.Clone(doc.Services)
		if services == nil {
			services = []Service{}
		}
		for _, s := range p.Services {
			if i := slices.IndexFunc(services, func(e Service) bool { return e.ID == s.ID }); i >= 0 {
				services[i] = s
			} else {
				services = append(services, s)
			}
		}
		doc.Services = services
	case PatchRemoveServices:
		if doc.Services != nil {
			doc.Services = slices.DeleteFunc(slices.Clone(doc.Services), func(e Service) bool { return slices.Contains(p.IDs, e.ID) })
			if doc.Services == nil {
				doc.Services = []Service{}
			}
		}
	}
	return doc
}

func randomPatch(r *rand.Rand, round int) Patch {
	id := func() string { return "e" + strconv.Itoa(r.IntN(40)) }
	ids := func() []string {
		out := make([]string, r.IntN(6))
		for i := range out {
			out[i] = id()
		}
		return out
	}
	// Distinct ids within one patch, as parsing guarantees.
	keys := func() []PublicKey {
		var out []PublicKey
		for _, k := range slices.Compact(slices.Sorted(slices.Values(ids()))) {
			out = append(out, PublicKey{ID: k, Type: "t" + strconv.Itoa(round)})
		}
		return out
	}
	services := func() []Service {
		out := []Service{}
		for _, s := range slices.Compact(slices.Sorted(slices.Values(ids()))) {
			out = append(out, Service{ID: s, Type: "s" + strconv.Itoa(round)})
		}
		return out
	}
	switch n := r.IntN(20); {
	case n == 0:
		doc := &Document{}
		if r.IntN(2) == 0 {
			doc.PublicKeys = keys()
			if doc.PublicKeys == nil {
				doc.PublicKeys = []PublicKey{}
			}
		}
		if r.IntN(2) == 0 {
			doc.Services = services()
		}
		return Patch{Action: PatchReplace, Document: doc}
	case n < 6:
		return Patch{Action: PatchAddPublicKeys, PublicKeys: keys()}
	case n < 10:
		return Patch{Action: PatchRemovePublicKeys, IDs: ids()}
	case n < 15:
		return Patch{Action: PatchAddServices, Services: services()}
	default:
		return Patch{Action: PatchRemoveServices, IDs: ids()}
	}
}

func TestDocumentBuilderAgreesWithCopyingPatches(t *testing.T) {
	t.Parallel()
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		want := Document{}
		b := newDocumentBuilder(want)
		for round := range 400 {
			p := randomPatch(r, round)
			want = naivePatch(want, &p)
			b.apply([]Patch{p})
			got := b.document()
			require.Equal(t, want, got, "seed %d round %d after %s", seed, round, p.Action)
		}
	}
}

func TestDocumentBuilderDoesNotAliasItsInput(t *testing.T) {
	t.Parallel()
	keys := []PublicKey{{ID: "a", Type: "t1"}, {ID: "b", Type: "t1"}}
	replace := &Document{PublicKeys: keys}
	doc := applyPatches(Document{}, []Patch{
		{Action: PatchReplace, Document: replace},
		{Action: PatchAddPublicKeys, PublicKeys: []PublicKey{{ID: "a", Type: "t2"}}},
		{Action: PatchRemovePublicKeys, IDs: []string{"b"}},
	})
	require.Equal(t, []PublicKey{{ID: "a", Type: "t2"}}, doc.PublicKeys)
	require.Equal(t, []PublicKey{{ID: "a", Type: "t1"}, {ID: "b", Type: "t1"}}, keys, "the patch's own list is unchanged")
}
