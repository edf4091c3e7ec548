package ratemeter

import (
	"testing"
	"time"
)

// TestMeter: the first Update primes the meter (0), an Update within a
// second keeps the last rates, one a second or more later measures the
// counters' increase over the elapsed time.
func TestMeter(t *testing.T) {
	var m Meter
	if r, b := m.Update(100, 1000); r != 0 || b != 0 {
		t.Fatalf("first Update = %v, %v, want 0, 0", r, b)
	}
	if r, b := m.Update(150, 1500); r != 0 || b != 0 {
		t.Fatalf("Update within a second = %v, %v, want the last rates (0)", r, b)
	}
	m.mu.Lock()
	m.at -= int64(2 * time.Second) // the last measurement, two seconds ago
	m.mu.Unlock()
	r, b := m.Update(300, 3000)
	// 200 messages and 2000 bytes over a bit more than 2 s.
	if r < 90 || r > 100 || b < 900 || b > 1000 {
		t.Fatalf("rates over 2 s = %v msg/s, %v B/s, want about 100 and 1000", r, b)
	}
	if r2, b2 := m.Update(400, 4000); r2 != r || b2 != b {
		t.Fatalf("Update within a second = %v, %v, want the last rates %v, %v", r2, b2, r, b)
	}
}
