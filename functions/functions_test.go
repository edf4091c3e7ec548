package functions

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func openStore(t *testing.T) store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "md.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return store{s}
}

func ip(n int) *int { return &n }

func TestFunctionConfigSpec(t *testing.T) {
	good := FunctionConfig{Tenant: "public", Namespace: "default", Name: "f", Inputs: []string{"in", "other/ns/x"},
		Output: "out", ProcessingGuarantees: EffectivelyOnce, DeadLetterTopic: "dlq"}
	s, err := good.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Inputs[0] != "persistent://public/default/in" || s.Inputs[1] != "persistent://other/ns/x" || s.Output != "persistent://public/default/out" {
		t.Fatalf("topics not qualified: %+v", s)
	}
	if s.SubscriptionType != "Failover" || s.SubName != "public/default/f" || s.Parallelism != 1 || !s.AutoAck || s.MaxMessageRetries != 1 {
		t.Fatalf("defaults: %+v", s)
	}
	bad := []func(c *FunctionConfig){
		func(c *FunctionConfig) { c.Name = "" },
		func(c *FunctionConfig) { c.Name = "a/b" },
		func(c *FunctionConfig) { c.ProcessingGuarantees = "SOMETIMES" },
		func(c *FunctionConfig) { c.ProcessingGuarantees = Manual },
		func(c *FunctionConfig) { c.Parallelism = ip(0) },
		func(c *FunctionConfig) { c.Parallelism = ip(-1) },
		func(c *FunctionConfig) { c.Parallelism = ip(MaxParallelism + 1) },
		func(c *FunctionConfig) { c.Parallelism = ip(math.MaxInt32) },
		func(c *FunctionConfig) { c.Inputs = nil },
		func(c *FunctionConfig) { c.Output = "in" },
		func(c *FunctionConfig) { c.Inputs, c.TopicsPattern = nil, "([" },
		func(c *FunctionConfig) { c.MaxMessageRetries = ip(-1) },
		func(c *FunctionConfig) { c.SubscriptionPosition = "Middle" },
		func(c *FunctionConfig) { c.Resources = &Resources{RAM: -1} },
	}
	for i, mut := range bad {
		c := good
		mut(&c)
		if _, err := c.Spec(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("case %d: got %v, want ErrBadConfig", i, err)
		}
	}
	c := good
	c.Parallelism = ip(MaxParallelism)
	if _, err := c.Spec(); err != nil {
		t.Fatalf("parallelism %d: %v", MaxParallelism, err)
	}
	if _, err := (&SourceConfig{Tenant: "t", Namespace: "n", Name: "s"}).Spec(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("source without topicName: %v", err)
	}
	if _, err := (&SinkConfig{Tenant: "t", Namespace: "n", Name: "s"}).Spec(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("sink without inputs: %v", err)
	}
}

func TestCounterBoundaries(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if n, err := st.incrCounter(ctx, "t", "n", "f", "c", math.MaxInt64-1); err != nil || n != math.MaxInt64-1 {
		t.Fatalf("incr: %d %v", n, err)
	}
	if n, err := st.incrCounter(ctx, "t", "n", "f", "c", 1); err != nil || n != math.MaxInt64 {
		t.Fatalf("incr to max: %d %v", n, err)
	}
	if _, err := st.incrCounter(ctx, "t", "n", "f", "c", 1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("overflow: %v", err)
	}
	if n, err := st.incrCounter(ctx, "t", "n", "f", "d", math.MinInt64); err != nil || n != math.MinInt64 {
		t.Fatalf("to min: %d %v", n, err)
	}
	if _, err := st.incrCounter(ctx, "t", "n", "f", "d", -1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("underflow: %v", err)
	}
	if _, err := st.putState(ctx, "t", "n", "f", &State{Key: "v", StringValue: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.incrCounter(ctx, "t", "n", "f", "v", 1); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("incr of a value: %v", err)
	}
	if _, err := st.getState(ctx, "t", "n", "f", "absent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
	if _, err := st.putState(ctx, "t", "n", "f", &State{Key: "big", ByteValue: make([]byte, MaxStateValue+1)}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("oversize value: %v", err)
	}
	// Keys with path characters are stored hex-encoded.
	if _, err := st.putState(ctx, "t", "n", "f", &State{Key: "../a/b", StringValue: "ok"}); err != nil {
		t.Fatal(err)
	}
	if s, err := st.getState(ctx, "t", "n", "f", "../a/b"); err != nil || string(s.ByteValue) != "ok" {
		t.Fatalf("odd key: %+v %v", s, err)
	}
}

func TestCounterConcurrent(t *testing.T) {
	st := openStore(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := st.incrCounter(context.Background(), "t", "n", "f", "c", 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s, err := st.getState(context.Background(), "t", "n", "f", "c")
	if err != nil || *s.NumberValue != 200 {
		t.Fatalf("counter after 200 concurrent increments: %+v %v", s, err)
	}
}

func TestPackageChunks(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	for _, n := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize - 7} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		for i := range data {
			data[i] ^= byte(i)
		}
		id, err := st.putPackage(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.getPackage(ctx, id)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: round trip failed (%v)", n, err)
		}
	}
	data := bytes.Repeat([]byte("x"), chunkSize+5)
	id, _ := st.putPackage(ctx, data)
	h := id[len("sha256:"):]
	if _, err := st.md.Put(ctx, rootPackages+"/"+h+"/1", []byte("y"), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.getPackage(ctx, id); err == nil {
		t.Fatal("corrupt chunk not detected")
	}
	st.deletePackage(ctx, id)
	if _, err := st.getPackage(ctx, id); err == nil {
		t.Fatal("deleted package still readable")
	}
}

// TestOwnerMovesOnlyTheDeadWorkersInstances: rendezvous assignment.
func TestOwnerMovesOnlyTheDeadWorkersInstances(t *testing.T) {
	ws := []WorkerInfo{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	before := map[instKey]string{}
	count := map[string]int{}
	for i := 0; i < 300; i++ {
		k := instKey{kind: KindFunction, fqfn: "t/n/f" + strconv.Itoa(i/10), id: i % 10}
		before[k] = owner(ws, k)
		count[before[k]]++
	}
	if len(count) != 3 {
		t.Fatalf("300 instances on %d of 3 workers", len(count))
	}
	after := ws[:2] // c died
	for k, o := range before {
		n := owner(after, k)
		if o != "c" && n != o {
			t.Fatalf("%v moved from live worker %s to %s", k, o, n)
		}
		if n == "c" {
			t.Fatalf("%v still on the dead worker", k)
		}
	}
	if owner(nil, instKey{}) != "" {
		t.Fatal("owner with no workers")
	}
}

func TestMergeJSON(t *testing.T) {
	m, err := mergeJSON([]byte(`{"a":1,"b":{"x":1},"c":"k"}`), []byte(`{"b":{"y":2},"c":null,"d":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(m) != `{"a":1,"b":{"y":2},"c":"k","d":true}` {
		t.Fatalf("merged %s", m)
	}
	if _, err := mergeJSON([]byte(`{}`), []byte(`[`)); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("bad update JSON: %v", err)
	}
}
