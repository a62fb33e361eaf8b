package activity

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// PageSizeDefault is Orb's --activitypub-page-size default.
const PageSizeDefault = 50

// Collection is any of Collection, OrderedCollection, CollectionPage and OrderedCollectionPage.
// A summary has first and last; a page has prev and next and its items. Unordered collections
// list items, ordered ones orderedItems.
type Collection struct {
	Context      Strings   `json:"@context,omitempty"`
	ID           string    `json:"id,omitempty"`
	Type         Type      `json:"type"`
	TotalItems   int       `json:"totalItems"`
	Current      string    `json:"current,omitempty"`
	First        string    `json:"first,omitempty"`
	Last         string    `json:"last,omitempty"`
	PartOf       string    `json:"partOf,omitempty"`
	Prev         string    `json:"prev,omitempty"`
	Next         string    `json:"next,omitempty"`
	Items        []*Object `json:"items,omitempty"`
	OrderedItems []*Object `json:"orderedItems,omitempty"`
}

// Members returns the collection's items, whichever member carries them.
func (c *Collection) Members() []*Object {
	if len(c.OrderedItems) > 0 {
		return c.OrderedItems
	}
	return c.Items
}

// ParseCollection reads a collection or collection page within the default limits
// (MaxCollectionBytesDefault, MaxDepthDefault, MaxItemsDefault) and validates its items.
func ParseCollection(data []byte) (*Collection, error) {
	return ParseCollectionWithLimits(data, Limits{})
}

// ParseCollectionWithLimits is ParseCollection with other bounds.
func ParseCollectionWithLimits(data []byte, l Limits) (*Collection, error) {
	if err := checkJSON(data, l.withDefaults(MaxCollectionBytesDefault, MaxItemsDefault)); err != nil {
		return nil, fmt.Errorf("parse collection: %w", err)
	}
	var c Collection
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parse collection: %w", invalid("%v", err))
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("parse collection: %w", err)
	}
	return &c, nil
}

func (c *Collection) validate() error {
	if !c.Type.isCollection() {
		return invalid("type %q is not a collection", c.Type)
	}
	if c.TotalItems < 0 {
		return invalid("totalItems %d", c.TotalItems)
	}
	for _, iri := range []string{c.ID, c.Current, c.First, c.Last, c.PartOf, c.Prev, c.Next} {
		if iri == "" {
			continue
		}
		if err := ValidateIRI(iri); err != nil {
			return invalid("collection: %v", err)
		}
	}
	for _, items := range [][]*Object{c.Items, c.OrderedItems} {
		for i, o := range items {
			if o == nil {
				return invalid("collection item %d is null", i)
			}
			if err := o.validate(); err != nil {
				return fmt.Errorf("collection item %d: %w", i, err)
			}
		}
	}
	return validateContext(c.Context)
}

// PageIRI is Orb's IRI of a page of collection: ?page=true&page-num=N, or ?page=true alone for
// a negative page (the first page, whichever it is).
func PageIRI(collection string, page int) string {
	sep := "?"
	if strings.Contains(collection, "?") {
		sep = "&"
	}
	if page < 0 {
		return collection + sep + "page=true"
	}
	return collection + sep + "page=true&page-num=" + strconv.Itoa(page)
}

// LastPage is the number of the last page when pages are ascending (page 0 holds the oldest
// items, as Orb serves every collection): -1 for an empty collection.
func LastPage(total, pageSize int) int {
	if pageSize <= 0 {
		pageSize = PageSizeDefault
	}
	if total <= 0 {
		return -1
	}
	return (total+pageSize-1)/pageSize - 1
}

// PageNeighbours returns the previous and next page of page, -1 for none, as Orb computes them
// for ascending pages: a page past the end has the last page as its prev.
func PageNeighbours(page, total, pageSize int) (prev, next int) {
	last := LastPage(total, pageSize)
	prev, next = -1, -1
	if page < last {
		next = page + 1
	}
	if page > 0 {
		prev = min(page-1, last)
	}
	return prev, next
}

// NewCollectionSummary is the answer to a collection GET without page: its size and the IRIs
// of its first and last pages. kind is TypeCollection or TypeOrderedCollection.
func NewCollectionSummary(id string, kind Type, total, pageSize int) *Collection {
	return &Collection{
		Context:    Strings{ContextActivityStreams},
		ID:         id,
		Type:       kind,
		TotalItems: total,
		First:      PageIRI(id, -1),
		Last:       PageIRI(id, LastPage(total, pageSize)),
	}
}

// NewCollectionPage is the answer to a page GET: kind is the collection's type
// (TypeCollection or TypeOrderedCollection); items go to items or orderedItems accordingly.
func NewCollectionPage(id string, kind Type, page, total, pageSize int, items []*Object) *Collection {
	prev, next := PageNeighbours(page, total, pageSize)
	c := &Collection{
		Context:    Strings{ContextActivityStreams},
		ID:         PageIRI(id, page),
		Type:       TypeCollectionPage,
		TotalItems: total,
	}
	if prev >= 0 {
		c.Prev = PageIRI(id, prev)
	}
	if next >= 0 {
		c.Next = PageIRI(id, next)
	}
	if kind == TypeOrderedCollection {
		c.Type = TypeOrderedCollectionPage
		c.OrderedItems = items
	} else {
		c.Items = items
	}
	return c
}
