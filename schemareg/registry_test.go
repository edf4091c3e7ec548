package schemareg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/schema"
)

func info(data string) schema.Info { return schema.Info{Type: schema.TypeString, Data: []byte(data)} }

// TestRecordVersions: numbers follow registration order across deletion
// markers; only the versions after the last marker are live, found and
// served (a version before a marker is gone: the consumer of an old
// message gets an error, not the deleted schema); a second deletion with
// nothing live writes nothing.
func TestRecordVersions(t *testing.T) {
	var r record
	if _, _, ok := r.get(-1); ok {
		t.Fatal("an empty record serves a latest version")
	}
	if v := r.markDeleted(); v != -1 {
		t.Fatalf("markDeleted() of an empty record = %d, want -1", v)
	}
	if a, b := r.add(info("a")), r.add(info("b")); a != 0 || b != 1 {
		t.Fatalf("add() = %d, %d, want 0, 1", a, b)
	}
	if i := r.find(info("a")); i != 0 {
		t.Fatalf("find(a) = %d, want 0", i)
	}
	if v := r.markDeleted(); v != 2 {
		t.Fatalf("markDeleted() = %d, want 2", v)
	}
	if v := r.markDeleted(); v != -1 || len(r.Versions) != 3 {
		t.Fatalf("second markDeleted() = %d with %d versions, want -1 and 3", v, len(r.Versions))
	}
	for _, v := range []int64{-1, 0, 1, 2, 3, 1 << 40} {
		if e, n, ok := r.get(v); ok {
			t.Fatalf("get(%d) after delete = version %d %q, want none", v, n, e.Data)
		}
	}
	if i := r.find(info("a")); i != -1 {
		t.Fatalf("find(a) after delete = %d, want -1", i)
	}
	if c := r.add(info("c")); c != 3 {
		t.Fatalf("add(c) after delete = %d, want 3", c)
	}
	if e, n, ok := r.get(-1); !ok || n != 3 || string(e.Data) != "c" {
		t.Fatalf("get(-1) = %d %q %v, want version 3 \"c\"", n, e.Data, ok)
	}
	if _, _, ok := r.get(1); ok {
		t.Fatal("get(1): a version before the marker is served")
	}
	if live := r.liveInfos(); len(live) != 1 || string(live[0].Data) != "c" {
		t.Fatalf("liveInfos() = %v, want only c", live)
	}
}

// TestDecodeRecord: the current node form and the older bare list of
// versions both read; anything else is an error.
func TestDecodeRecord(t *testing.T) {
	list := `[{"type":1,"data":"YQ==","timestamp":5},{"deleted":true,"timestamp":6},{"type":1,"data":"Yg==","timestamp":7}]`
	rec, err := decodeRecord([]byte(list))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Versions) != 3 || rec.live() != 2 || string(rec.Versions[2].Data) != "b" || rec.Compatibility != "" {
		t.Fatalf("bare list read as %+v", rec)
	}
	b, _ := json.Marshal(record{Versions: rec.Versions, Compatibility: "BACKWARD"})
	back, err := decodeRecord(b)
	if err != nil || back.Compatibility != "BACKWARD" || len(back.Versions) != 3 || !back.Versions[1].Deleted {
		t.Fatalf("record round trip %+v %v", back, err)
	}
	for _, bad := range []string{"", "{", `{"versions":7}`, `[1]`} {
		if _, err := decodeRecord([]byte(bad)); err == nil {
			t.Fatalf("decodeRecord(%q) accepted", bad)
		}
	}
}

func openStore(t *testing.T) metadata.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newRegistry is a registry over st without a broker (the commands'
// goroutines and hooks are not used).
func newRegistry(st metadata.Store, def schema.Strategy) *Registry {
	r := &Registry{def: def, store: st, policies: policy.NewStore(st, "test"), log: slog.New(slog.DiscardHandler)}
	r.life, r.lifeStop = context.WithCancel(context.Background())
	return r
}

// TestRegistriesShareAStore: registries of two brokers over one store
// register concurrently; compare-and-set gives every schema exactly one
// number, none lost and none given twice, and no registration fails for
// having lost races (it did with a fixed retry bound).
func TestRegistriesShareAStore(t *testing.T) {
	st := openStore(t)
	regs := []*Registry{newRegistry(st, schema.AlwaysCompatible), newRegistry(st, schema.AlwaysCompatible)}
	tn, err := pulsarproto.ParseTopicName("persistent://public/default/shared")
	if err != nil {
		t.Fatal(err)
	}
	const each = 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([][]int, len(regs))
	errs := make(chan error, len(regs)*each)
	for i, r := range regs {
		got[i] = make([]int, each)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				v, err := r.register(ctx, tn, info(fmt.Sprintf("r%d-%d", i, j)), byProducer)
				if err != nil {
					errs <- err
					return
				}
				got[i][j] = v
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int]string{}
	for i := range regs {
		for j, v := range got[i] {
			name := fmt.Sprintf("r%d-%d", i, j)
			if prev, dup := seen[v]; dup {
				t.Fatalf("version %d given to %s and %s", v, prev, name)
			}
			seen[v] = name
		}
	}
	vs, err := regs[0].Schemas(ctx, tn.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(regs)*each {
		t.Fatalf("%d versions stored, want %d", len(vs), len(regs)*each)
	}
	for _, v := range vs {
		if seen[int(v.Number)] != string(v.Data) {
			t.Fatalf("version %d holds %q, registered as %q", v.Number, v.Data, seen[int(v.Number)])
		}
	}
}

// TestEnableStrategy: the broker default is checked when the registry
// is built; "" and UNDEFINED mean FULL, as in Pulsar.
func TestEnableStrategy(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct {
		name string
		want schema.Strategy
		bad  bool
	}{{"", schema.Full, false}, {"UNDEFINED", schema.Full, false}, {"BACKWARD_TRANSITIVE", schema.BackwardTransitive, false}, {"SOMETIMES", 0, true}} {
		b, err := broker.New(brokerconf.Config{}, broker.Deps{Metadata: st, OpenLedger: func(context.Context, string) (storage.ManagedLedger, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Enable(b, Config{CompatibilityStrategy: c.name})
		if c.bad {
			if !errors.Is(err, broker.ErrBadConfig) {
				t.Fatalf("Enable(%q) = %v, want ErrBadConfig", c.name, err)
			}
			continue
		}
		if err != nil || r.def != c.want {
			t.Fatalf("Enable(%q): default %v, %v; want %v", c.name, r.def, err, c.want)
		}
	}
}

// TestCommandsDeclareAccess: each schema command names its topic and
// the permission the core checks before it runs (lookup to read a
// schema, produce to register one).
func TestCommandsDeclareAccess(t *testing.T) {
	r := newRegistry(openStore(t), schema.Full)
	const topic = "persistent://t/ns/x"
	want := map[pb.BaseCommand_Type]broker.TopicPermission{
		pb.BaseCommand_GET_SCHEMA:           broker.PermitLookup,
		pb.BaseCommand_GET_OR_CREATE_SCHEMA: broker.PermitProduce,
	}
	cmds := map[pb.BaseCommand_Type]*pb.BaseCommand{
		pb.BaseCommand_GET_SCHEMA:           {GetSchema: &pb.CommandGetSchema{Topic: ptr(topic)}},
		pb.BaseCommand_GET_OR_CREATE_SCHEMA: {GetOrCreateSchema: &pb.CommandGetOrCreateSchema{Topic: ptr(topic)}},
	}
	got := r.Commands()
	if len(got) != len(want) {
		t.Fatalf("%d commands, want %d", len(got), len(want))
	}
	for _, c := range got {
		if c.Access == nil {
			t.Fatalf("%s declares no access rule", c.Type)
		}
		if name, need := c.Access(cmds[c.Type]); name != topic || need != want[c.Type] {
			t.Fatalf("%s access = %s %v, want %s %v", c.Type, name, need, topic, want[c.Type])
		}
	}
}
