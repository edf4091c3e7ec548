package shrink

// MinDeletes is the fewest deletes between two rebuilds of a map.
const MinDeletes = 4096

// Tracker counts the deletes from one map since its last rebuild. The
// zero value is ready; it is guarded by whatever guards the map.
type Tracker struct{ deletes int }

// Deleted records one delete from the map, which now holds left entries,
// and reports whether the caller should replace the map with Rebuild's
// copy now (the count starts again).
func (t *Tracker) Deleted(left int) bool {
	t.deletes++
	if t.deletes < MinDeletes || t.deletes <= 2*left {
		return false
	}
	t.deletes = 0
	return true
}

// Rebuild returns a copy of m sized for its entries.
func Rebuild[M ~map[K]V, K comparable, V any](m M) M {
	out := make(M, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
