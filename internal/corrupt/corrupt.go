package corrupt

import (
	"errors"
	"fmt"
)

// Err is the shared marker: errors.Is(err, Err) reports corruption found
// by any storage package.
var Err = errors.New("corrupt")

// New returns a package's corruption sentinel with the given text.
func New(text string) error { return &sentinel{text: text} }

type sentinel struct{ text string }

func (s *sentinel) Error() string { return s.text }

// Is makes every sentinel match Err.
func (s *sentinel) Is(target error) bool { return target == Err }

// At wraps the sentinel kind with where the corruption lies and why:
// "<kind>: <path> at offset <off>: <why>".
func At(kind error, path string, off int64, why string) error {
	return fmt.Errorf("%w: %s at offset %d: %s", kind, path, off, why)
}
