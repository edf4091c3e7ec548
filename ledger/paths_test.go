package ledger_test

import (
	"encoding/json"
	"testing"

	"github.com/magnetar-mq/magnetar/ledger"
)

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLedgerPath(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{0, "/ledgers/00/0000/L0000"},
		{123, "/ledgers/00/0000/L0123"},
		{1234567890, "/ledgers/12/3456/L7890"},
		{123456789012, "/ledgers/1234/5678/L9012"},
	} {
		if got := ledger.LedgerPath(tc.id); got != tc.want {
			t.Errorf("LedgerPath(%d) = %q, want %q", tc.id, got, tc.want)
		}
		if id, ok := ledger.ParseLedgerPath(tc.want); !ok || id != tc.id {
			t.Errorf("ParseLedgerPath(%q) = %d, %v; want %d", tc.want, id, ok, tc.id)
		}
	}
	for _, p := range []string{"/ledgers/available/x", "/ledgers/00/0000", "/other/00/0000/L0001", "/ledgers/00/000/L0001"} {
		if _, ok := ledger.ParseLedgerPath(p); ok {
			t.Errorf("ParseLedgerPath(%q) ok, want not", p)
		}
	}
}
