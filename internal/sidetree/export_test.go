package sidetree

// ForgetVerified empties the set of verified signatures, so that a benchmark measures
// verification itself.
func ForgetVerified() {
	verified.mu.Lock()
	clear(verified.m)
	verified.mu.Unlock()
}
