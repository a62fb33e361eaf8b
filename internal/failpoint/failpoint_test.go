package failpoint

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	require.Nil(t, parse(""))
	require.Equal(t, map[string]int{"a": 3, "b": 1}, parse("a=3, b=1,c=0,d=x,e"))
}

func TestHitDisarmedIsANoop(t *testing.T) {
	t.Parallel()
	require.Nil(t, armed, "tests run without "+EnvVar)
	Hit(BatchAfterCAS) // returns
}
