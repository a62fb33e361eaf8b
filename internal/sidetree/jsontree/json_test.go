package jsontree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/require"
)

func TestParseRejects(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"whitespace only", "  "},
		{"trailing data", `{} {}`},
		{"trailing comma object", `{"a":1,}`},
		{"trailing comma array", `[1,]`},
		{"duplicate name", `{"a":1,"a":2}`},
		{"duplicate name in large object", `{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"a3":3}`},
		{"duplicate after escape", `{"a":1,"\u0061":2}`},
		{"single quotes", `{'a':1}`},
		{"unquoted name", `{a:1}`},
		{"leading zero", `01`},
		{"plus sign", `+1`},
		{"bare fraction dot", `1.`},
		{"bare exponent", `1e`},
		{"hex", `0x10`},
		{"NaN", `NaN`},
		{"overflow number", `1e400`},
		{"control char in string", "\"a\x01\""},
		{"raw newline in string", "\"a\nb\""},
		{"invalid escape", `"\x"`},
		{"short unicode escape", `"\u12"`},
		{"lone high surrogate", `"\ud800"`},
		{"lone low surrogate", `"\udc00"`},
		{"high surrogate then letter", `"\ud800a"`},
		{"invalid UTF-8", "\"\xff\""},
		{"invalid UTF-8 after escape", "\"\\n\xc3\""},
		{"BOM", "\xef\xbb\xbf{}"},
		{"too deep", deep},
		{"bad literal", `tru`},
		{"unterminated", `{"a":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.in))
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrSyntax))
		})
	}
}

func TestSerialisations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, compact, canonical string }{
		{"order kept vs sorted", `{ "b" : 1, "a" : [true, false, null] }`, `{"b":1,"a":[true,false,null]}`, `{"a":[true,false,null],"b":1}`},
		{"numbers in ES6 form", `[1.0, -0, 1e2, 0.000001, 1e-7, 1E21, 12345678901234567890, 5e-324]`,
			`[1,0,100,0.000001,1e-7,1e+21,12345678901234567000,5e-324]`, `[1,0,100,0.000001,1e-7,1e+21,12345678901234567000,5e-324]`},
		{"escapes", `"\u0041\/\"\\\b\f\n\r\t\u001f\u00e9\ud83d\ude00"`, "\"A/\\\"\\\\\\b\\f\\n\\r\\t\\u001fé😀\"", "\"A/\\\"\\\\\\b\\f\\n\\r\\t\\u001fé😀\""},
		{"array-index names first in compact", `{"b":1,"2":2,"10":3,"01":4}`, `{"2":2,"10":3,"b":1,"01":4}`, `{"01":4,"10":3,"2":2,"b":1}`},
		{"UTF-16 order", `{"\ue000":1,"\ud83d\ude00":2}`, "{\"\ue000\":1,\"😀\":2}", "{\"😀\":2,\"\ue000\":1}"},
		{"underflow is zero", `1e-400`, `0`, `0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.compact, string(v.AppendCompact(nil)))
			require.Equal(t, tc.canonical, string(v.AppendCanonical(nil)))
			want, err := jcs.Transform([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, string(want), tc.canonical, "jcs.Transform agrees")
		})
	}
}

func TestMemberAndTypeName(t *testing.T) {
	t.Parallel()
	v, err := Parse([]byte(`{"n":null,"b":true,"x":1,"s":"","a":[],"o":{}}`))
	require.NoError(t, err)
	for name, want := range map[string]string{"n": "null", "b": "boolean", "x": "number", "s": "string", "a": "array", "o": "object"} {
		require.Equal(t, want, v.Member(name).TypeName())
	}
	require.Nil(t, v.Member("missing"))
	require.True(t, v.Member("b").Bool)
}

// TestCanonicalMatchesJCS compares with gowebpki/jcs on every JSON file of the test vectors.
func TestCanonicalMatchesJCS(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir("../testdata", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := Canonicalize(data)
		require.NoError(t, err, f)
		want, err := jcs.Transform(data)
		require.NoError(t, err, f)
		require.Equal(t, string(want), string(got), f)
	}
}

// FuzzCanonical checks the serialisers against gowebpki/jcs: whatever Parse accepts, jcs must
// accept and canonicalise identically, and the compact form must parse back to the same value.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":"x"}`, `[1.5e3,-0.0,"\u00e9",null,true]`, `{"\ud83d\ude00":{"\ue000":[]}}`, `"\u0000"`, `{"2":1,"1":2,"x":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		got := v.AppendCanonical(nil)
		want, err := jcs.Transform(data)
		require.NoError(t, err, "jcs rejects what Parse accepted: %q", data)
		require.Equal(t, string(want), string(got))
		compact := v.AppendCompact(nil)
		again, err := Parse(compact)
		require.NoError(t, err)
		require.Equal(t, string(got), string(again.AppendCanonical(nil)))
		require.Equal(t, string(compact), string(again.AppendCompact(nil)))
	})
}

func BenchmarkParseCanonical(b *testing.B) {
	data, err := os.ReadFile("../testdata/dif/operations/createOperation.json")
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		v, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = v.AppendCanonical(nil)
	}
}
