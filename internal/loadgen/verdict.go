package loadgen

import (
	"errors"
	"fmt"
	"time"
)

// Outcomes of a run that make `anchord loadgen` exit non-zero: a run that loaded nothing, or
// whose operations never became resolvable, measured nothing worth reporting as a success.
var (
	ErrNothingAccepted = errors.New("no operation was accepted")
	ErrNothingResolved = errors.New("no followed operation became resolvable")
	ErrNothingFound    = errors.New("no resolution answered 200")
	// ErrUnanswered: requests got no answer (refused, reset, timed out), as when the target
	// dies mid-run. Its figures are of a server that was not there the whole time.
	ErrUnanswered = errors.New("requests got no answer")
)

// verdict fails a run that accepted nothing or whose resolutions all failed, naming what the
// target answered instead (status and error code, counted); one in which requests got no
// answer; or one in which every followed operation timed out.
func (s Summary) verdict(cfg Config) error {
	if s.Sent > 0 && s.Accepted == 0 {
		return fmt.Errorf("%w: %d sent, answers by status:code: %s", ErrNothingAccepted, s.Sent, formatCounts(s.Errors))
	}
	if s.GETs > 0 && s.GETsOK == 0 {
		return fmt.Errorf("%w: %d GETs, answers by status:code: %s", ErrNothingFound, s.GETs, formatCounts(s.Errors))
	}
	if s.NoAnswer > 0 {
		return fmt.Errorf("%w: %d of %d (did the target stop?); the first: %s", ErrUnanswered, s.NoAnswer, s.Sent+s.GETs, s.FirstNoAnswer)
	}
	if s.Followed == 0 && s.FollowTimeouts > 0 {
		return fmt.Errorf("%w: all %d followed operations timed out after --resolve-timeout %s; is the target anchoring (GET /sidetree/v1/anchors)?",
			ErrNothingResolved, s.FollowTimeouts, cfg.ResolveTimeout.Round(time.Millisecond))
	}
	return nil
}
