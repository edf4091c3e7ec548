// Package shrink bounds the memory a Go map keeps once its entries are
// deleted. A map never gives back the room of its largest size: one that
// held a million topics and now holds a thousand still holds the
// million's slots (tens of MB). Tracker counts the deletes from a map and
// says when a rebuild is due; Rebuild copies the live entries into a map
// sized for them.
//
// Invariant: a rebuild is due only after at least MinDeletes deletes
// since the last one, and only once those deletes outnumber twice the
// entries left (the map was at least three times its size). The copy is
// then at most half a copy per delete, amortised, and a map that stays
// small is never rebuilt.
package shrink
