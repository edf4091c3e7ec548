package memstore

import (
	"context"
	"errors"
	"testing"
)

func add(t *testing.T, w interface {
	AddAsync([]byte, func(int64, error))
}, data string) (int64, error) {
	t.Helper()
	type r struct {
		id  int64
		err error
	}
	ch := make(chan r, 1)
	w.AddAsync([]byte(data), func(id int64, err error) { ch <- r{id, err} })
	x := <-ch
	return x.id, x.err
}

func TestWriteFenceReadDelete(t *testing.T) {
	ctx := context.Background()
	s := New()
	defer s.Close()
	w, err := s.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if id, err := add(t, w, "e"); err != nil || id != int64(i) {
			t.Fatalf("add %d = %d, %v", i, id, err)
		}
	}
	if w.LastAddConfirmed() != 2 {
		t.Fatalf("LAC = %d", w.LastAddConfirmed())
	}
	// Recovery by another opener fences the writer.
	r, err := s.Open(ctx, w.ID())
	if err != nil || r.LastAddConfirmed() != 2 || r.Length() != 3 {
		t.Fatalf("Open = %v lac %d len %d", err, r.LastAddConfirmed(), r.Length())
	}
	if _, err := add(t, w, "late"); !errors.Is(err, ErrFenced) {
		t.Fatalf("add after fence: %v, want ErrFenced", err)
	}
	if err := w.Close(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("Close after fence: %v", err)
	}
	es, err := r.Read(ctx, 0, 2)
	if err != nil || len(es) != 3 {
		t.Fatalf("Read = %d, %v", len(es), err)
	}
	if _, err := r.Read(ctx, 0, 3); !errors.Is(err, ErrBadRange) {
		t.Fatalf("read past end: %v", err)
	}
	if err := s.Delete(ctx, w.ID()); err != nil || s.Exists(w.ID()) {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Open(ctx, w.ID()); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("Open deleted: %v", err)
	}
}

func TestFaultsAreSticky(t *testing.T) {
	ctx := context.Background()
	s := New()
	defer s.Close()
	s.FailNextCreates(1)
	if _, err := s.Create(ctx); !errors.Is(err, ErrInjected) {
		t.Fatalf("Create: %v", err)
	}
	w, _ := s.Create(ctx)
	add(t, w, "a")
	s.FailNextAdds(1)
	if _, err := add(t, w, "b"); !errors.Is(err, ErrInjected) {
		t.Fatalf("add: %v", err)
	}
	// The ledger stays failed, as a BookKeeper ledger handle would.
	if _, err := add(t, w, "c"); err == nil {
		t.Fatal("add after a failed add succeeded")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Open(ctx, w.ID())
	if r.LastAddConfirmed() != 0 {
		t.Fatalf("closed at %d, want 0", r.LastAddConfirmed())
	}
}
