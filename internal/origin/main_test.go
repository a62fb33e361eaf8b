package origin

import (
	"testing"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestMain(m *testing.M) { anchordtest.WrapTestMain(m) }
