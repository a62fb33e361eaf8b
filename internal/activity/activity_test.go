package activity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// TestRoundTripActivities parses every activity in testdata (Orb's shapes, with author and
// profile as arrays of {href}) and checks that marshalling gives the same JSON back.
func TestRoundTripActivities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		check func(t *testing.T, a *Activity)
	}{
		{"follow.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeFollow, a.Type)
			require.Equal(t, Strings{ContextActivityStreams}, a.Context)
			require.Equal(t, "https://a.example/services/orb", a.Object.IRI)
			require.Equal(t, Strings{"https://a.example/services/orb"}, a.To)
		}},
		{"accept_follow.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeAccept, a.Type)
			require.NotNil(t, a.Object.Activity)
			require.Equal(t, TypeFollow, a.Object.Activity.Type)
			require.Equal(t, "https://b.example/services/orb", a.Object.Activity.Actor)
		}},
		{"reject_follow.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeReject, a.Type)
			require.Equal(t, TypeFollow, a.Object.Activity.Type)
		}},
		{"undo_follow.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeUndo, a.Type)
			require.Equal(t, TypeFollow, a.Object.Activity.Type)
		}},
		{"invite.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeInvite, a.Type)
			require.Equal(t, Strings{ContextActivityStreams, ContextActivityAnchors}, a.Context)
			require.Equal(t, AnchorWitnessIRI, a.Object.IRI)
			require.Equal(t, "https://w.example/services/orb", a.Target.IRI)
		}},
		{"accept_invite.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeInvite, a.Object.Activity.Type)
		}},
		{"offer.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeOffer, a.Type)
			require.Equal(t, AnchorWitnessIRI, a.Target.IRI)
			require.True(t, a.To.Contains(PublicIRI))
			require.Equal(t, time.Date(2023, 5, 1, 10, 10, 0, 0, time.UTC), a.EndTime.UTC())
			link := a.Object.Linkset.Link()
			require.NotNil(t, link)
			require.NoError(t, link.Validate())
			require.Equal(t, "https://a.example/services/orb", link.Author.First())
			require.Equal(t, ProfileOrbV0, link.Profile.First())
			require.Equal(t, MediaTypeJSONLD, link.Replies[0].Type)
		}},
		{"accept_offer.json", func(t *testing.T, a *Activity) {
			offer := a.Object.Activity
			require.Equal(t, TypeOffer, offer.Type)
			require.True(t, strings.HasPrefix(offer.Object.IRI, "hl:"))
			receipt := a.Result.AnchorReceipt
			require.NotNil(t, receipt)
			require.Equal(t, offer.Object.IRI, receipt.InReplyTo)
			require.Len(t, receipt.Attachment, 1)
			var proof struct {
				Proof struct {
					Type       string `json:"type"`
					ProofValue string `json:"proofValue"`
				} `json:"proof"`
			}
			require.NoError(t, json.Unmarshal(receipt.Attachment[0], &proof))
			require.Equal(t, "Ed25519Signature2020", proof.Proof.Type)
		}},
		{"create.json", func(t *testing.T, a *Activity) {
			ev := a.Object.AnchorEvent
			require.NotNil(t, ev)
			require.NoError(t, ev.VerifyURL())
			require.NoError(t, ev.Object.Link().Validate())
			require.Equal(t, time.Date(2023, 5, 1, 10, 0, 5, 0, time.UTC), a.Published.UTC())
		}},
		{"announce.json", func(t *testing.T, a *Activity) {
			coll := a.Object.Collection
			require.NotNil(t, coll)
			require.Equal(t, 2, coll.TotalItems)
			require.Len(t, coll.Members(), 2)
			require.NotNil(t, coll.Members()[0].AnchorEvent.Object)
			require.Nil(t, coll.Members()[1].AnchorEvent.Object)
			for _, m := range coll.Members() {
				require.NoError(t, m.AnchorEvent.VerifyURL())
			}
		}},
		{"like.json", func(t *testing.T, a *Activity) {
			require.Equal(t, TypeLike, a.Type)
			require.NotNil(t, a.Object.AnchorEvent)
			h, err := a.Result.AnchorEvent.Hashlink()
			require.NoError(t, err)
			require.Nil(t, h.Links)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data := readTestdata(t, tt.file)
			a, err := Parse(data)
			require.NoError(t, err)
			tt.check(t, a)
			out, err := json.Marshal(a)
			require.NoError(t, err)
			require.JSONEq(t, string(data), string(out))
			again, err := Parse(out)
			require.NoError(t, err)
			require.Equal(t, a.Type, again.Type)
		})
	}
}

// TestParseStringRefs reads the shape of the Activity Anchors documents, where author and
// profile are bare strings, and writes Orb's array form.
func TestParseStringRefs(t *testing.T) {
	t.Parallel()
	a, err := Parse(readTestdata(t, "offer_string_refs.json"))
	require.NoError(t, err)
	link := a.Object.Linkset.Link()
	require.Equal(t, Refs{{HRef: "https://a.example/services/orb"}}, link.Author)
	require.Equal(t, Refs{{HRef: ProfileOrbV0}}, link.Profile)
	require.NoError(t, link.Validate())
	out, err := json.Marshal(link)
	require.NoError(t, err)
	require.Contains(t, string(out), `"author":[{"href":"https://a.example/services/orb"}]`)
	require.Contains(t, string(out), `"profile":[{"href":"https://w3id.org/orb#v0"}]`)
}

func TestParseTolerates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
	}{
		{"unknown members", `{"id":"https://b.example/a/1","type":"Follow","actor":"https://b.example/s","object":"https://a.example/s","summary":"hi","extra":{"x":[1,2]}}`},
		{"type as a one-element array", `{"id":"https://b.example/a/1","type":["Follow"],"actor":"https://b.example/s","object":"https://a.example/s"}`},
		{"to as a string", `{"id":"https://b.example/a/1","type":"Follow","actor":"https://b.example/s","to":"https://a.example/s","object":"https://a.example/s"}`},
		{"no context", `{"id":"https://b.example/a/1","type":"Like","actor":"https://b.example/s","object":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ"}`},
		{"did:web actor", `{"id":"https://b.example/a/1","type":"Follow","actor":"did:web:b.example:services:orb","object":"https://a.example/s"}`},
		{"did:web actor with port", `{"id":"https://b.example/a/1","type":"Follow","actor":"did:web:b.example%3A8080","object":"https://a.example/s"}`},
		{"http actor with port", `{"id":"http://127.0.0.1:8080/a/1","type":"Follow","actor":"http://127.0.0.1:8080/services/orb","object":"https://a.example/s"}`},
		{"embedded object of unknown type", `{"id":"https://b.example/a/1","type":"Create","actor":"https://b.example/s","object":{"type":"Note","content":"x"}}`},
		{"embedded activity without id", `{"id":"https://b.example/a/1","type":"Undo","actor":"https://b.example/s","object":{"type":"Like","object":"https://a.example/x"}}`},
		{"fractional seconds and offset", `{"id":"https://b.example/a/1","type":"Offer","actor":"https://b.example/s","object":"https://x.example/o","startTime":"2023-05-01T10:00:00.123456789+02:00"}`},
		{"member names in another case, as encoding/json (and so Orb) reads them", `{"id":"https://b.example/a/1","tYpe":"Follow","ACtor":"https://b.example/s","Object":"https://a.example/s"}`},
		{"null optional members", `{"id":"https://b.example/a/1","type":"Follow","actor":"https://b.example/s","object":"https://a.example/s","to":null,"target":null,"published":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.json))
			require.NoError(t, err)
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	const ok = `"id":"https://b.example/a/1","actor":"https://b.example/s"`
	tests := []struct {
		name     string
		json     string
		want     string
		tooLarge bool
	}{
		{"not JSON", `{"type":`, "invalid JSON", false},
		{"array at top", `[]`, "top level is array", false},
		{"string at top", `"Follow"`, "top level is string", false},
		{"trailing data", `{"type":"Follow"} {}`, "invalid JSON", false},
		{"members differing in case", `{"type":"Follow","Type":"Undo",` + ok + `,"object":"https://a.example/s"}`, "differing only in case", false},
		{"nested members differing in case", `{"type":"Follow",` + ok + `,"object":{"type":"Note","x":1,"X":2}}`, "differing only in case", false},
		{"nested context empty", `{"type":"Accept",` + ok + `,"object":{"@context":"","type":"AnchorReceipt"}}`, "Accept object: invalid activity data: @context: empty IRI", false},
		{"duplicate member", `{"type":"Follow","type":"Create",` + ok + `,"object":"https://a.example/s"}`, "duplicate", false},
		{"invalid UTF-8", "{\"type\":\"Follow\xff\"," + ok + `,"object":"https://a.example/s"}`, "invalid JSON", false},
		{"missing type", `{` + ok + `,"object":"https://a.example/s"}`, `activity type "" not supported`, false},
		{"unknown type", `{"type":"Delete",` + ok + `,"object":"https://a.example/s"}`, `activity type "Delete" not supported`, false},
		{"two types", `{"type":["Follow","Like"],` + ok + `,"object":"https://a.example/s"}`, "type: 2 types", false},
		{"type a number", `{"type":7,` + ok + `,"object":"https://a.example/s"}`, "want a string or an array of strings", false},
		{"missing id", `{"type":"Follow","actor":"https://b.example/s","object":"https://a.example/s"}`, "Follow id: empty IRI", false},
		{"relative id", `{"type":"Follow","id":"/a/1","actor":"https://b.example/s","object":"https://a.example/s"}`, "is not absolute", false},
		{"id with a space", `{"type":"Follow","id":"https://b.example/a 1","actor":"https://b.example/s","object":"https://a.example/s"}`, "space or control", false},
		{"id a number", `{"type":"Follow","id":1,"actor":"https://b.example/s","object":"https://a.example/s"}`, "cannot unmarshal number", false},
		{"missing actor", `{"type":"Follow","id":"https://b.example/a/1","object":"https://a.example/s"}`, "Follow actor: empty IRI", false},
		{"actor ftp", `{"type":"Follow","id":"https://b.example/a/1","actor":"ftp://b.example/s","object":"https://a.example/s"}`, "neither an http(s) URL nor a did:web", false},
		{"actor did:key", `{"type":"Follow","id":"https://b.example/a/1","actor":"did:key:z6Mk","object":"https://a.example/s"}`, "neither an http(s) URL nor a did:web", false},
		{"actor did:web without host", `{"type":"Follow","id":"https://b.example/a/1","actor":"did:web:","object":"https://a.example/s"}`, "not a did:web DID", false},
		{"actor with user info", `{"type":"Follow","id":"https://b.example/a/1","actor":"https://u:p@b.example/s","object":"https://a.example/s"}`, "neither an http(s) URL", false},
		{"actor an object", `{"type":"Follow","id":"https://b.example/a/1","actor":{"id":"https://b.example/s"},"object":"https://a.example/s"}`, "cannot unmarshal object", false},
		{"to not IRIs", `{"type":"Follow",` + ok + `,"to":[1],"object":"https://a.example/s"}`, "want a string or an array of strings", false},
		{"to relative", `{"type":"Follow",` + ok + `,"to":["followers"],"object":"https://a.example/s"}`, "to: IRI \"followers\" is not absolute", false},
		{"no object", `{"type":"Follow",` + ok + `}`, "Follow has no object", false},
		{"null object", `{"type":"Follow",` + ok + `,"object":null}`, "Follow has no object", false},
		{"empty object IRI", `{"type":"Follow",` + ok + `,"object":""}`, "empty object", false},
		{"object a number", `{"type":"Follow",` + ok + `,"object":5}`, "must be an IRI or an object", false},
		{"object an array", `{"type":"Follow",` + ok + `,"object":["https://a.example/s"]}`, "must be an IRI or an object", false},
		{"object relative IRI", `{"type":"Follow",` + ok + `,"object":"s"}`, "is not absolute", false},
		{"embedded activity of unknown type goes verbatim but bad embedded actor fails", `{"type":"Undo",` + ok + `,"object":{"type":"Follow","actor":"ftp://x"}}`, "Undo object: ", false},
		{"bad time", `{"type":"Offer",` + ok + `,"object":"https://x.example/o","endTime":"yesterday"}`, "cannot parse", false},
		{"context not strings", `{"@context":[{"@vocab":"x"}],"type":"Follow",` + ok + `,"object":"https://a.example/s"}`, "want a string or an array of strings", false},
		{"context not an IRI", `{"@context":"as","type":"Follow",` + ok + `,"object":"https://a.example/s"}`, "@context: IRI \"as\" is not absolute", false},
		{"anchor event without url", `{"type":"Create",` + ok + `,"object":{"type":"AnchorEvent"}}`, "anchor event has 0 urls", false},
		{"anchor event url not a hashlink", `{"type":"Create",` + ok + `,"object":{"type":"AnchorEvent","url":"https://x.example/y"}}`, "must start with", false},
		{"anchor event object not a linkset", `{"type":"Create",` + ok + `,"object":{"type":"AnchorEvent","url":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ","object":{"linkset":[]}}}`, "empty linkset", false},
		{"anchor event object a string", `{"type":"Create",` + ok + `,"object":{"type":"AnchorEvent","url":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ","object":"x"}}`, "anchor event object", false},
		{"receipt inReplyTo not a hashlink", `{"type":"Accept",` + ok + `,"object":"https://a.example/a/1","result":{"type":"AnchorReceipt","inReplyTo":"x"}}`, "anchor receipt inReplyTo", false},
		{"receipt attachment not an object", `{"type":"Accept",` + ok + `,"object":"https://a.example/a/1","result":{"type":"AnchorReceipt","attachment":["x"]}}`, "attachment 0 is not an object", false},
		{"linkset link without anchor", `{"type":"Offer",` + ok + `,"object":{"linkset":[{"author":"https://a.example/s"}]}}`, "link 0 has no anchor", false},
		{"linkset ref without href", `{"type":"Offer",` + ok + `,"object":{"linkset":[{"anchor":"hl:x","author":[{"type":"x"}]}]}}`, "without href", false},
		{"linkset ref a number", `{"type":"Offer",` + ok + `,"object":{"linkset":[{"anchor":"hl:x","author":[5]}]}}`, "link target", false},
		{"collection with null item", `{"type":"Announce",` + ok + `,"object":{"type":"Collection","items":[null]}}`, "collection item 0 is null", false},
		{"collection negative total", `{"type":"Announce",` + ok + `,"object":{"type":"Collection","totalItems":-1}}`, "totalItems -1", false},
		{"collection item a bad IRI", `{"type":"Announce",` + ok + `,"object":{"type":"OrderedCollection","orderedItems":["x"]}}`, "collection item 0", false},
		{"too large", `{"type":"Follow",` + ok + `,"object":"https://a.example/s","pad":"` + strings.Repeat("x", MaxActivityBytesDefault) + `"}`, "more than 2097152", true},
		{"too deep", `{"type":"Follow",` + ok + `,"object":"https://a.example/s","pad":` + strings.Repeat(`[`, MaxDepthDefault) + strings.Repeat(`]`, MaxDepthDefault) + `}`, "nested deeper than 32", true},
		{"too many items", `{"type":"Follow",` + ok + `,"object":"https://a.example/s","to":[` + strings.TrimSuffix(strings.Repeat(`"https://x.example/",`, MaxItemsDefault+1), ",") + `]}`, "array of 1001 elements", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := Parse([]byte(tt.json))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, a)
			if tt.tooLarge {
				require.ErrorIs(t, err, ErrTooLarge)
			} else {
				require.NotErrorIs(t, err, ErrTooLarge)
			}
		})
	}
}

func TestParseWithLimits(t *testing.T) {
	t.Parallel()
	data := readTestdata(t, "follow.json")
	_, err := ParseWithLimits(data, Limits{MaxBytes: 50})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ParseWithLimits(readTestdata(t, "accept_follow.json"), Limits{MaxDepth: 2})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ParseWithLimits(readTestdata(t, "offer.json"), Limits{MaxItems: 1})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ParseWithLimits(data, Limits{MaxBytes: len(data)})
	require.NoError(t, err)
}

func TestObjectMarshal(t *testing.T) {
	t.Parallel()
	_, err := json.Marshal(&Object{})
	require.Error(t, err)
	out, err := json.Marshal(&Object{Document: json.RawMessage(`{"type":"Note"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"Note"}`, string(out))
	out, err = json.Marshal(IRIObject(PublicIRI))
	require.NoError(t, err)
	require.Equal(t, `"`+PublicIRI+`"`, string(out))
}

// TestBuildOffer builds the Offer an anchord domain sends a witness, from an anchor link, and
// checks that it reads back as the witness reads it.
func TestBuildOffer(t *testing.T) {
	t.Parallel()
	link := testAnchorLink(t, MediaTypeGzipBase64)
	start := time.Date(2023, 5, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Minute)
	offer := &Activity{
		Context:   Strings{ContextActivityStreams},
		ID:        "https://a.example/services/orb/activities/1",
		Type:      TypeOffer,
		Actor:     "https://a.example/services/orb",
		To:        Strings{"https://w.example/services/orb", PublicIRI},
		Object:    &Object{Linkset: &Linkset{Linkset: []Link{*link}}},
		Target:    IRIObject(AnchorWitnessIRI),
		StartTime: &start,
		EndTime:   &end,
	}
	require.NoError(t, offer.Validate())
	data, err := json.Marshal(offer)
	require.NoError(t, err)
	require.Contains(t, string(data), `"target":"https://w3id.org/activityanchors#AnchorWitness"`)
	require.Contains(t, string(data), `"endTime":"2023-05-01T10:10:00Z"`)
	got, err := Parse(data)
	require.NoError(t, err)
	require.Equal(t, offer, got)
	require.NoError(t, got.Object.Linkset.Link().Validate())
}
