package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckExpiryTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		table, column string
		ok            bool
	}{
		{"unpublished_operations", "expires_at", true},
		{"_t2", "c_9", true},
		{"op_queue", "expires_at", false},
		{"dead_letters", "created_at", false},
		{"task_permits", "updated_at", false},
		{"Anchors", "expires_at", false},
		{"t", "", false},
		{"", "c", false},
		{"9t", "c", false},
		{"t", `c" OR 1=1 --`, false},
		{"t;drop", "c", false},
		{"schema.t", "c", false},
		{string(make([]byte, 64)), "c", false},
	} {
		err := CheckExpiryTable(tc.table, tc.column)
		if tc.ok {
			require.NoError(t, err, "%q.%q", tc.table, tc.column)
		} else {
			require.Error(t, err, "%q.%q", tc.table, tc.column)
		}
	}
}
