package federation

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpsig"
)

// FuzzInboxPost sends arbitrary bodies to the inbox, signed by a real peer (so they reach the
// parser, the authorization and the store) or under an arbitrary Signature header. The inbox
// must answer a client error or 200, never a 5xx, and never panic.
func FuzzInboxPost(f *testing.F) {
	clock := anchordtest.NewClock()
	withClock := func(c *Config) {
		c.NowFunc = clock.Now
		// Every input comes from one actor: the quota would answer most of them 429.
		c.InboxActorRate, c.InboxActorBurst, c.InboxDomainRate, c.InboxDomainBurst = 1e9, 1<<30, 1e9, 1<<30
	}
	a, m := newDomain(f, withClock), newDomain(f, withClock)
	handler := http.NewServeMux()
	a.svc.Routes()(muxRouter{handler})
	require := func(cond bool, format string, args ...any) {
		if !cond {
			f.Fatalf(format, args...)
		}
	}
	require(a.svc.RegisterHandler(activity.TypeCreate, Handler{Authorize: a.svc.RequireFollowing, Handle: func(context.Context, Inbound) error { return nil }}) == nil, "register")

	follow := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
		m.actor()+"/activities/1", m.actor(), a.actor(), a.actor())
	f.Add([]byte(follow), "", true)
	f.Add([]byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Create","actor":%q,"object":{"type":"AnchorEvent","url":"hl:uEiA","object":{"linkset":[]}}}`,
		m.actor()+"/activities/2", m.actor())), "", true)
	f.Add([]byte(fmt.Sprintf(`{"id":%q,"type":"Undo","actor":%q,"object":%s}`, m.actor()+"/activities/3", m.actor(), follow)), "", true)
	f.Add([]byte(fmt.Sprintf(`{"id":%q,"type":"Accept","actor":%q,"object":{"type":"Follow","actor":%q,"object":%q}}`,
		m.actor()+"/activities/4", m.actor(), a.actor(), m.actor())), "", true)
	f.Add([]byte(`{"type":["Follow","Like"]}`), `keyId="x",algorithm="Sign",headers="(request-target) date",signature="AAAA"`, false)
	f.Add([]byte{0xff, '{'}, `keyId="`+m.svc.KeyID()+`",signature="`+string(bytes.Repeat([]byte{'A'}, 88))+`"`, false)

	signer, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: m.svc.KeyID(), PrivateKey: m.key, MaxBodyBytes: 8 << 20, NowFunc: clock.Now})
	require(err == nil, "signer: %v", err)
	f.Fuzz(func(t *testing.T, body []byte, signature string, sign bool) {
		// A new second for every input: signatures never repeat, and the replay cache keeps only
		// the inputs of the last two minutes.
		clock.Advance(time.Second)
		req := httptest.NewRequest("POST", a.actor()+"/inbox", bytes.NewReader(body))
		if sign {
			if err := signer.Sign(req); err != nil {
				t.Fatalf("sign: %v", err)
			}
		} else {
			req.Header.Set("Date", clock.Now().UTC().Format(http.TimeFormat))
			req.Header.Set("Signature", signature)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}
