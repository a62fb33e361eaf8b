package ipfs

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
)

// FuzzAnswers gives every operation arbitrary answers: none may panic, and whatever succeeds
// must keep the client's promises (Add's CID is cas's, Cat stays within its limit, Get's bytes
// match their CID).
func FuzzAnswers(f *testing.F) {
	data := []byte("payload")
	v0 := cas.ComputeCID(data, cas.CIDv0)
	f.Add(200, "", `{"Name":"file","Hash":"`+v0+`","Size":"15"}`, "")
	f.Add(200, "7", "payload", "")
	f.Add(200, "", `{"Version":"0.43.1"}`, "")
	f.Add(200, "", `{"Pins":["`+v0+`"]}`, "")
	f.Add(200, "", `{"Keys":{"`+v0+`":{"Type":"recursive"}}}`, "")
	f.Add(200, "", `{"Cid":"`+v0+`","Type":"recursive"}`+"\n", "")
	f.Add(200, "", "partial", "stream failed")
	f.Add(500, "", `{"Message":"path 'x' is not pinned","Code":0,"Type":"error"}`, "")
	f.Add(404, "-1", "", "")
	f.Fuzz(func(t *testing.T, status int, contentLength, body, trailer string) {
		if status < 100 || status > 999 {
			status = 200
		}
		c := fakeClient(t, func(*http.Request) *http.Response {
			r := response(status, body)
			if contentLength != "" {
				r.Header.Set("X-Content-Length", contentLength)
			}
			if trailer != "" {
				r.Trailer = http.Header{"X-Stream-Error": {trailer}}
			}
			return r
		})
		ctx := context.Background()
		for _, v := range []cas.CIDVersion{cas.CIDv0, cas.CIDv1} {
			if cid, err := c.Add(ctx, data, v); err == nil {
				require.Equal(t, cas.ComputeCID(data, v), cid)
			}
		}
		const limit = 16
		if got, err := c.Cat(ctx, v0, limit); err == nil {
			require.LessOrEqual(t, len(got), limit)
			if n, perr := strconv.Atoi(contentLength); perr == nil {
				require.LessOrEqual(t, n, limit)
			}
		}
		if got, err := c.Get(ctx, v0, limit); err == nil {
			require.Equal(t, data, got)
		}
		_ = c.Pin(ctx, v0)
		_, _ = c.Pinned(ctx, v0)
		_ = c.Pins(ctx, func(cid string) error {
			require.NotEmpty(t, cid)
			return nil
		})
		if v, err := c.Version(ctx); err == nil {
			require.NotEmpty(t, v)
		}
	})
}
