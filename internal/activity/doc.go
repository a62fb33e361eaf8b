// Package activity is the wire format anchord speaks to other domains: ActivityPub activities,
// actors and collections, and the Activity Anchors objects (anchor linksets, hashlinks, data
// URIs) laid out as Orb lays them out, so that an anchord domain and an Orb domain can follow,
// witness and observe each other. It is pure: no I/O, no logging, no state. Delivery, signing,
// storage and the inbox and outbox handlers live elsewhere.
//
// # Shapes
//
// Activity carries id, type, actor, to, object, target, result, published, startTime, endTime
// and @context. object, target and result are an *Object: an IRI string, or one embedded
// Activity, AnchorEvent, AnchorReceipt, Collection (any of the four collection types), Linkset
// (an object with a linkset member and no type, as in an Offer), or, for anything else, the
// JSON object verbatim. @context, to and url are one string or an array (Orb sends both and
// writes one element as a plain string, as this package does). type may be a one-element array.
//
// The anchor linkset is Orb's: Linkset{linkset:[Link]}, a Link's author, profile, original,
// related, replies, up and via are arrays of {href[, type]}; a bare string or a single object is
// read too. BuildAnchorLink and (*Link).AnchorContent write and read the did:orb layout:
//
//	original  data URI of JCS({linkset:[{anchor: hl(core index), author, profile,
//	          item:[{href: did:orb:<previous anchor hash or uAAA>:<suffix>, previous:[hl:<hash>]}]}]})
//	anchor    hl of exactly those JCS bytes, before compression and encoding
//	related   data URI of JCS({linkset:[{anchor, profile, via:[core index hashlink, with its
//	          metadata], up:[previous anchors, with metadata, each once]}]})
//	replies   data URI of the anchor credential (JCS), type application/ld+json
//
// An AnchorEvent's url is the hashlink of JCS(the linkset it embeds); VerifyURL checks it over
// the object exactly as received.
//
// # API
//
// Reading: Parse (activities; Validate applies to embedded ones too), ParseActor,
// ParseCollection, ParseLinkset, each with a ...WithLimits variant where callers need other
// bounds; ParseHashlink; DecodeDataURI. Writing: NewService, NewAnchorEvent,
// NewCollectionSummary, NewCollectionPage, PageIRI, BuildAnchorLink, NewHashlink, NewDataURI,
// and json.Marshal of any of the types. Checking: (*Link).Validate (anchor = hash of original),
// (*Link).AnchorContent, (*AnchorEvent).VerifyURL, CredentialSubject.Check, ValidateIRI,
// ValidateActorIRI.
//
// # Invariants
//
//   - Nothing here panics on input. Every reader is bounded: JSON texts by size, nesting depth
//     and members per array or object (Limits, with the *Default constants); data URIs by their
//     decoded size, gzip included; hashlinks by length and by the CBOR decoder's limits.
//   - JSON is read strictly before it is decoded: valid UTF-8, no duplicate member names, the top
//     level an object. Members this package does not model are ignored, as Orb ignores them.
//   - Every rejection wraps ErrInvalid (and ErrTooLarge when a bound was hit), so a handler maps
//     errors.Is(err, ErrInvalid) to 400 and the rest to 500.
//   - Hashes are sha2-256 multihashes; anything else is rejected.
package activity
