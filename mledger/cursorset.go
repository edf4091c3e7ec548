package mledger

import "slices"

// cursorSet is a managed ledger's open cursors by name, under its mu.
// Most managed ledgers have one or two: a slice, with a map beside it
// only beyond cursorSetMapAt (a one-entry Go map costs ~250 B, issue 35).
type cursorSet struct {
	list   []*Cursor
	byName map[string]*Cursor // nil below cursorSetMapAt
}

const cursorSetMapAt = 8

func (s *cursorSet) get(name string) *Cursor {
	if s.byName != nil {
		return s.byName[name]
	}
	for _, c := range s.list {
		if c.name == name {
			return c
		}
	}
	return nil
}

// put adds c (no cursor of its name is in s).
func (s *cursorSet) put(c *Cursor) {
	s.list = append(s.list, c)
	if s.byName != nil {
		s.byName[c.name] = c
	} else if len(s.list) > cursorSetMapAt {
		s.byName = make(map[string]*Cursor, len(s.list))
		for _, c := range s.list {
			s.byName[c.name] = c
		}
	}
}

// del removes and returns the cursor name (nil: none).
func (s *cursorSet) del(name string) *Cursor {
	i := slices.IndexFunc(s.list, func(c *Cursor) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	c := s.list[i]
	s.list = slices.Delete(s.list, i, i+1)
	if s.byName != nil {
		delete(s.byName, name)
	}
	return c
}

func (s *cursorSet) len() int { return len(s.list) }
