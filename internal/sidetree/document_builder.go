package sidetree

import "slices"

// documentBuilder is a Document being patched in place. Each patch costs time in proportion to
// its own size, never to the document's: entries are indexed by id, and a removal leaves a hole
// that is compacted away only once holes outnumber live entries. Resolution keeps one builder per
// DID for the whole history; copying the key and service lists for every patch, as the
// reference implementation does, made resolving a DID with thousands of updates take seconds.
type documentBuilder struct {
	keys     entryList[PublicKey]
	services entryList[Service]
	// akas is alsoKnownAs, as Orb's composer keeps it: added URIs go last unless present,
	// removed ones are filtered out. Only Orb's profile has the patches, and its deltas are
	// small, so a plain slice does.
	akas []string
}

// newDocumentBuilder starts from a copy of doc; doc itself is never modified.
func newDocumentBuilder(doc Document) *documentBuilder {
	b := &documentBuilder{}
	b.keys.reset(doc.PublicKeys)
	b.services.reset(doc.Services)
	b.akas = slices.Clone(doc.AlsoKnownAs)
	return b
}

// applyPatches returns doc with the patches applied in order. It never modifies doc: the
// reference implementation applies to a deep copy so that a failing patch leaves the previous
// document intact. Validated patches cannot fail.
func applyPatches(doc Document, patches []Patch) Document {
	b := newDocumentBuilder(doc)
	b.apply(patches)
	return b.document()
}

// apply applies validated patches in order, with the reference implementation's semantics: an
// added entry whose id exists replaces it where it stands, a new one goes last (Map.set order);
// removing an unknown id is a no-op.
func (b *documentBuilder) apply(patches []Patch) {
	for i := range patches {
		p := &patches[i]
		switch p.Action {
		case PatchReplace:
			b.keys.reset(p.Document.PublicKeys)
			b.services.reset(p.Document.Services)
		case PatchAddPublicKeys:
			for _, k := range p.PublicKeys {
				b.keys.put(k)
			}
		case PatchRemovePublicKeys:
			b.keys.remove(p.IDs)
		case PatchAddServices:
			// add-services creates the member even when it adds nothing.
			b.services.present = true
			for _, s := range p.Services {
				b.services.put(s)
			}
		case PatchRemoveServices:
			b.services.remove(p.IDs)
		case PatchAddAlsoKnownAs:
			for _, u := range p.URIs {
				if !slices.Contains(b.akas, u) {
					b.akas = append(b.akas, u)
				}
			}
		case PatchRemoveAlsoKnownAs:
			b.akas = slices.DeleteFunc(b.akas, func(u string) bool { return slices.Contains(p.URIs, u) })
		}
	}
}

// document returns the current document; later patches do not change it.
func (b *documentBuilder) document() Document {
	doc := Document{PublicKeys: b.keys.values(), Services: b.services.values()}
	if len(b.akas) > 0 {
		doc.AlsoKnownAs = slices.Clone(b.akas)
	}
	return doc
}

// entryID is the id of a document entry.
type entryID interface{ entryID() string }

func (k PublicKey) entryID() string { return k.ID }

func (s Service) entryID() string { return s.ID }

// entryList is an ordered list of entries with unique ids. Removed entries stay as holes
// (live false) until compact.
type entryList[T entryID] struct {
	// present is whether the document has the member at all: values returns nil when not,
	// which rendering tells apart from an empty list (see Document.Services).
	present bool
	slots   []slot[T]
	index   map[string]int // id → position in slots, live entries only
	holes   int
}

type slot[T any] struct {
	v    T
	live bool
}

// reset makes the list a copy of vs; nil vs means the member is absent.
func (l *entryList[T]) reset(vs []T) {
	l.present = vs != nil
	l.slots = make([]slot[T], len(vs))
	l.index = make(map[string]int, len(vs))
	l.holes = 0
	for i, v := range vs {
		l.slots[i] = slot[T]{v: v, live: true}
		l.index[v.entryID()] = i
	}
}

// put replaces the entry with v's id in place, or appends v.
func (l *entryList[T]) put(v T) {
	l.present = true
	if l.index == nil {
		l.index = make(map[string]int)
	}
	if i, ok := l.index[v.entryID()]; ok {
		l.slots[i].v = v
		return
	}
	l.index[v.entryID()] = len(l.slots)
	l.slots = append(l.slots, slot[T]{v: v, live: true})
}

// remove drops the entries with these ids; an absent member stays absent.
func (l *entryList[T]) remove(ids []string) {
	for _, id := range ids {
		i, ok := l.index[id]
		if !ok {
			continue
		}
		delete(l.index, id)
		l.slots[i] = slot[T]{}
		l.holes++
	}
	if l.holes > len(l.index) {
		l.compact()
	}
}

// compact drops the holes. It runs only when holes outnumber live entries, so its cost is paid
// for by the removals that made them.
func (l *entryList[T]) compact() {
	n := 0
	for _, s := range l.slots {
		if s.live {
			l.slots[n] = s
			l.index[s.v.entryID()] = n
			n++
		}
	}
	clear(l.slots[n:])
	l.slots = l.slots[:n]
	l.holes = 0
}

// values returns the live entries in order: nil when the member is absent, a non-nil (possibly
// empty) slice when present.
func (l *entryList[T]) values() []T {
	if !l.present {
		return nil
	}
	out := make([]T, 0, len(l.index))
	for _, s := range l.slots {
		if s.live {
			out = append(out, s.v)
		}
	}
	return out
}
